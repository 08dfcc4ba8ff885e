"""The edit check's result: one frozen record per result, a one-line display, a manifest entry,
and the ranking of candidates by it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

KEEP_MIN = 0.5  # below this the result kept less than half of what the task should keep (see measures.keep_similarity)
EXACT, AT_LEAST, AT_MOST = "=", "≥", "≤"


@dataclass(frozen=True)
class EditCheck:
    """What was asked, what the result measures, and whether that is within ``tolerance``.

    ``bound`` is ``=`` for a number the instruction gives (−6 dB) and ``≥``/``≤`` for a bar the
    task implies (noise removed: SNR up by at least 6 dB); the tolerance is the measurement's
    slack either way. ``kept`` is how much of the source the result kept where the task should
    keep it (1 is all; None where nothing should be kept); ``passed`` needs it at KEEP_MIN.
    ``passed`` None: the instruction's effect cannot be measured, and ``note`` says why.
    """

    task: str
    asked: float | None
    got: float | None
    unit: str
    tolerance: float | None
    passed: bool | None
    note: str = ""
    bound: str = EXACT
    kept: float | None = None

    @property
    def measured(self) -> bool:
        return self.passed is not None

    @property
    def error(self) -> float:
        """How far ``got`` misses ``asked``, in tolerances (≤ 1 is within it); inf if not measured."""
        if self.asked is None or self.got is None or not self.tolerance:
            return math.inf
        miss = {EXACT: abs(self.got - self.asked), AT_LEAST: self.asked - self.got, AT_MOST: self.got - self.asked}
        return max(miss[self.bound], 0.0) / self.tolerance

    def display(self) -> str:
        """One line for the result: "asked −6 dB · got −5.9 dB ✓"."""
        if not self.measured:
            return f"{self.task}: cannot be measured ({self.note})"
        bound = "" if self.bound == EXACT else self.bound + " "
        got = "nothing measurable" if self.got is None else _value(self.got, self.unit)
        kept = f" · kept {self.kept:.2f} of the source" if self.kept is not None and self.kept < KEEP_MIN else ""
        return f"asked {bound}{_asked(self.asked, self.unit)} · got {got}{kept} {'✓' if self.passed else '✗'}"

    __str__ = display

    def to_manifest(self) -> dict:
        """The manifest's ``check`` entry; JSON-safe (a non-finite number becomes None)."""
        return {
            "task": self.task, "asked": _finite(self.asked), "got": _finite(self.got), "unit": self.unit,
            "tolerance": _finite(self.tolerance), "pass": self.passed, "bound": self.bound,
            "kept": _finite(self.kept), "note": self.note,
        }


def unmeasured(task: str, reason: str) -> EditCheck:
    """The plain answer for an instruction whose effect cannot be measured, and why."""
    return EditCheck(task, None, None, "", None, None, reason)


def rank(checks: Iterable[EditCheck]) -> list[EditCheck]:
    """Candidates best first: passing, then by error in tolerances, then by the most of the source
    kept. Errors are compared to a tenth of a tolerance, about the measures' own noise, so that
    finer differences do not override a clear difference in what was kept; unmeasured last."""
    def key(check: EditCheck) -> tuple:
        kept = check.kept if check.kept is not None and math.isfinite(check.kept) else 0.0
        return not check.measured, check.passed is not True, round(check.error, 1), -kept

    return sorted(checks, key=key)


def _finite(value: float | None) -> float | None:
    return round(float(value), 4) if value is not None and math.isfinite(value) else None


def _signed(value: float, digits: int) -> str:
    text = _plain(abs(value), digits)
    return ("−" if value < 0 and text != "0" else "+") + text


def _asked(value: float | None, unit: str) -> str:
    """The asked number as the user said it: pitch in semitones, not cents."""
    if value is None:
        return "—"
    if unit == "cents":
        semitones = value / 100
        return f"{_signed(semitones, 2)} semitone{'' if abs(semitones) == 1 else 's'}"
    return _value(value, unit)


def _value(value: float, unit: str) -> str:
    if unit == "cents":
        return f"{_signed(value, 0)} cents"
    if unit in ("dB", "dB SNR"):
        return f"{_signed(value, 1)} {unit}"
    if unit == "×":
        return _plain(value, 2) + "×"
    return f"{_plain(value, 1 if unit == 'Hz' else 2)} {unit}"


def _plain(value: float, digits: int) -> str:
    """``value`` to ``digits`` decimals without trailing zeros: 1.50 → 1.5, 270 → 270."""
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
