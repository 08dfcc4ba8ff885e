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
    ``clipped`` counts the result's samples at full scale: the number can pass while the sound
    is damaged, so the line says so beside the mark and ``rank`` puts such a result after clean ones.
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
    clipped: int = 0

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
        """One line for the result, asked and got in the same unit: "asked −6 dB · got −5.9 dB ✓";
        a result at full scale adds "but clips: N samples at full scale" after the mark."""
        clips = ""
        if self.clipped:
            clips = f"clips: {self.clipped:,} sample{'' if self.clipped == 1 else 's'} at full scale"
        if not self.measured:
            return f"{self.task}: cannot be measured ({self.note})" + (f"; the result {clips}" if clips else "")
        bound = "" if self.bound == EXACT else self.bound + " "
        got = "nothing measurable" if self.got is None else _value(self.got, self.unit)
        kept = f" · kept {self.kept:.2f} of the source" if self.kept is not None and self.kept < KEEP_MIN else ""
        mark = "✓" if self.passed else "✗"
        if clips:
            mark += (" but " if self.passed else " and ") + clips
        return f"asked {bound}{_value(self.asked, self.unit, asked=True)} · got {got}{kept} {mark}"

    __str__ = display

    def to_manifest(self) -> dict:
        """The manifest's ``check`` entry; JSON-safe (a non-finite number becomes None)."""
        return {
            "task": self.task, "asked": _finite(self.asked), "got": _finite(self.got), "unit": self.unit,
            "tolerance": _finite(self.tolerance), "pass": self.passed, "bound": self.bound,
            "kept": _finite(self.kept), "clipped": self.clipped, "note": self.note,
        }


def unmeasured(task: str, reason: str) -> EditCheck:
    """The plain answer for an instruction whose effect cannot be measured, and why."""
    return EditCheck(task, None, None, "", None, None, reason)


def rank(checks: Iterable[EditCheck]) -> list[EditCheck]:
    """Candidates best first: passing, then without clipping, then by error in tolerances, then by
    the most of the source kept. Errors are compared to a tenth of a tolerance, about the measures'
    own noise, so that finer differences do not override a clear difference in what was kept;
    unmeasured last."""
    def key(check: EditCheck) -> tuple:
        kept = check.kept if check.kept is not None and math.isfinite(check.kept) else 0.0
        return not check.measured, check.passed is not True, check.clipped > 0, round(check.error, 1), -kept

    return sorted(checks, key=key)


def _finite(value: float | None) -> float | None:
    return round(float(value), 4) if value is not None and math.isfinite(value) else None


def _signed(value: float, digits: int) -> str:
    text = _plain(abs(value), digits)
    return ("−" if value < 0 and text != "0" else "+") + text


def _value(value: float | None, unit: str, *, asked: bool = False) -> str:
    """A number with its unit as the user says it: pitch in semitones (stored in cents), the asked
    one as given (2, 1.5), the measured one to a tenth, pYIN's grid being a fifth of a semitone."""
    if value is None:
        return "—"
    if unit == "cents":
        semitones = _signed(value / 100, 2 if asked else 1)
        return f"{semitones} semitone{'' if semitones in ('+1', '−1') else 's'}"
    if unit in ("dB", "dB SNR"):
        return f"{_signed(value, 1)} {unit}"
    if unit == "×":
        return _plain(value, 2) + "×"
    return f"{_plain(value, 1 if unit == 'Hz' else 2)} {unit}"


def _plain(value: float, digits: int) -> str:
    """``value`` to ``digits`` decimals without trailing zeros: 1.50 → 1.5, 270 → 270."""
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
