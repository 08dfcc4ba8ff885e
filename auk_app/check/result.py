"""The edit check's result: one frozen record per result, a one-line display, a manifest entry,
and the ranking of candidates by it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

KEEP_MIN = 0.5  # below this the result kept less than half of what the task should keep (see check.kept)
EXACT, AT_LEAST, AT_MOST = "=", "≥", "≤"
MORE, LESS = ">", "<"  # a direction without a number: beyond ``asked`` (no change) by more than the tolerance
_DIRECTION_WORDS = {("volume", MORE): "louder", ("volume", LESS): "quieter", ("pitch", MORE): "higher",
                    ("pitch", LESS): "lower", ("speed", MORE): "faster", ("speed", LESS): "slower"}


@dataclass(frozen=True)
class EditCheck:
    """What was asked, what the result measures, and whether that is within ``tolerance``.

    ``bound`` is ``=`` for a number the instruction gives (−6 dB), ``≥``/``≤`` for a bar the
    task implies (noise removed: SNR up by at least 6 dB), the tolerance being the measurement's
    slack either way, and ``>``/``<`` for a direction without a number ("a bit quieter"): ``asked``
    is then no change (0 dB, 0 cents, 1×) and the result must move beyond the tolerance that way.
    ``kept`` is how much of the source the result kept where the task should keep it (1 is all;
    None where nothing should be kept, or no measure of it applies to the sound); ``kept_by``
    holds each of its measures (None where that one does not apply); ``passed`` needs ``kept`` at
    KEEP_MIN. ``passed`` None: the instruction's effect cannot be measured, and ``note`` says why.
    ``clipped`` counts the result's samples at full scale and ``unasked`` names what else changed
    beyond its tolerance (the level of a pitch edit, say): the number can pass while the sound is
    damaged or changed otherwise, so the line says so beside the mark and ``rank`` puts such a
    result after clean ones.
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
    kept_by: dict[str, float | None] | None = None
    unasked: tuple[str, ...] = ()

    @property
    def measured(self) -> bool:
        return self.passed is not None

    @property
    def error(self) -> float:
        """How far ``got`` misses ``asked``, in tolerances (≤ 1 is within it); for a direction
        (``>``, ``<``) how far it falls short of moving beyond the tolerance (0 is far enough);
        inf if not measured."""
        if self.asked is None or self.got is None or not self.tolerance:
            return math.inf
        tolerance = self.tolerance
        miss = {EXACT: abs(self.got - self.asked), AT_LEAST: self.asked - self.got, AT_MOST: self.got - self.asked,
                MORE: self.asked + tolerance - self.got, LESS: self.got - (self.asked - tolerance)}
        return max(miss[self.bound], 0.0) / tolerance

    @property
    def on_target(self) -> bool:
        """Whether the number is what was asked: within the tolerance, or for a direction beyond it."""
        return self.error == 0 if self.bound in (MORE, LESS) else self.error <= 1

    def display(self) -> str:
        """One line for the result, asked and got in the same unit: "asked −6 dB · got −5.9 dB ✓";
        a result at full scale, or one that changed what was not asked, says so after the mark:
        "✓ but clips: N samples at full scale", "✗ and also changed: level −6.3 dB"."""
        extras = []
        if self.clipped:
            extras.append(f"clips: {self.clipped:,} sample{'' if self.clipped == 1 else 's'} at full scale")
        if self.unasked:
            extras.append("also changed: " + ", ".join(self.unasked))
        if not self.measured:
            said = [f"the result {extras[0]}", *(f"it {extra}" for extra in extras[1:])] if extras else []
            return "; ".join([f"{self.task}: cannot be measured ({self.note})", *said])
        got = "nothing measurable" if self.got is None else value_text(self.got, self.unit)
        kept = f" · kept {self.kept:.2f} of the source" if self.kept is not None and self.kept < KEEP_MIN else ""
        mark = "✓" if self.passed else "✗"
        if extras:
            mark += (" but " if self.passed else " and ") + "; ".join(extras)
        return f"asked {self.asked_text()} · got {got}{kept} {mark}"

    def asked_text(self) -> str:
        """What was asked as the line says it: "−6 dB", "≥ +6 dB SNR", or a direction's word ("quieter")."""
        if self.bound in (MORE, LESS):
            return _DIRECTION_WORDS.get((self.task, self.bound), f"{self.bound} {value_text(self.asked, self.unit)}")
        bound = "" if self.bound == EXACT else self.bound + " "
        return bound + value_text(self.asked, self.unit, asked=True)

    __str__ = display

    def to_manifest(self) -> dict:
        """The manifest's ``check`` entry; JSON-safe (a non-finite number becomes None)."""
        return {
            "task": self.task, "asked": _finite(self.asked), "got": _finite(self.got), "unit": self.unit,
            "tolerance": _finite(self.tolerance), "pass": self.passed, "bound": self.bound,
            "kept": _finite(self.kept), "kept_by": None if self.kept_by is None else {
                name: _finite(score) for name, score in self.kept_by.items()},
            "clipped": self.clipped, "unasked": list(self.unasked), "note": self.note,
        }


def unmeasured(task: str, reason: str) -> EditCheck:
    """The plain answer for an instruction whose effect cannot be measured, and why."""
    return EditCheck(task, None, None, "", None, None, reason)


def rank(checks: Iterable[EditCheck]) -> list[EditCheck]:
    """Candidates best first: passing, then without clipping, then without unasked changes, then by
    error in tolerances, then by the most of the source kept. Errors are compared to a tenth of a
    tolerance, about the measures' own noise, so that finer differences do not override a clear
    difference in what was kept; unmeasured last."""
    def key(check: EditCheck) -> tuple:
        kept = check.kept if check.kept is not None and math.isfinite(check.kept) else 0.0
        return (not check.measured, check.passed is not True, check.clipped > 0, len(check.unasked),
                round(check.error, 1), -kept)

    return sorted(checks, key=key)


def _finite(value: float | None) -> float | None:
    return round(float(value), 4) if value is not None and math.isfinite(value) else None


def _signed(value: float, digits: int) -> str:
    text = _plain(abs(value), digits)
    return ("−" if value < 0 and text != "0" else "+") + text


def value_text(value: float | None, unit: str, *, asked: bool = False) -> str:
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
