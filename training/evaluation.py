"""Scores an editing callable on held-out clips against the demo model's bars.

One code path for the test suite and the benchmark table: ``edit(source, instruction,
seconds) -> wav`` is any callable (the demo pipeline, an oracle, a do-nothing baseline), and
its output is taken to be 24 kHz mono, since an ndarray carries no rate.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from training.data import Example
from training.measures import cents, f0_hz, is_valid_output, rms_db, spectral_snr_db

Edit = Callable[[np.ndarray | None, str, float], np.ndarray]


@dataclass(frozen=True)
class Bar:
    """Met when the median over clips of |value| is at most ``limit`` (``absolute``), or the
    median of value is at least ``limit`` (otherwise)."""

    limit: float
    unit: str
    absolute: bool


BARS = {
    "volume": Bar(1.5, "dB", absolute=True),  # measured RMS change minus the requested gain
    "pitch": Bar(50.0, "cents", absolute=True),  # measured F0 interval minus the requested one
    "denoise": Bar(8.0, "dB", absolute=False),  # spectral SNR of the output minus the input's
    "tone": Bar(0.03, "ratio", absolute=True),  # output F0 / requested F0 - 1
}


@dataclass(frozen=True)
class ClipScore:
    """``value`` is the family's signed measure (see BARS); ``measured`` the numbers behind it."""

    instruction: str
    value: float
    valid: bool
    measured: dict


@dataclass(frozen=True)
class FamilyScore:
    """``median`` follows the bar (of |value| or of value); a nan value counts as failing.
    ``passed`` needs the bar met and every output valid."""

    family: str
    clips: tuple[ClipScore, ...]
    median: float
    passed: bool


def evaluate_family(edit: Edit, cases: Sequence[Example]) -> FamilyScore:
    """Run ``edit`` on every case of one family and score it against that family's bar."""
    family = cases[0].task
    if any(case.task != family for case in cases):
        raise ValueError(f"cases mix families: {sorted({case.task for case in cases})}")
    clips = tuple(score_clip(case, edit(case.source, case.instruction, case.seconds)) for case in cases)
    bar = BARS[family]
    values = np.array([clip.value for clip in clips])
    if bar.absolute:
        median = float(np.median(np.where(np.isnan(values), np.inf, np.abs(values))))
        met = median <= bar.limit
    else:
        median = float(np.median(np.where(np.isnan(values), -np.inf, values)))
        met = median >= bar.limit
    return FamilyScore(family, clips, median, bool(met and all(clip.valid for clip in clips)))


def score_clip(case: Example, output: np.ndarray) -> ClipScore:
    """Measure one output against its case; pitch uses the source's measured F0, not the
    nominal one, so the tracker's own bias (about +1 cent) cancels."""
    measured = _SCORERS[case.task](case, output)
    value = measured.pop("value")
    return ClipScore(case.instruction, value, is_valid_output(output, case.n_samples), measured)


def _score_volume(case: Example, output: np.ndarray) -> dict:
    rms_in, rms_out = rms_db(case.source), rms_db(output)
    return {"value": rms_out - rms_in - case.params["gain_db"], "rms_in_db": rms_in, "rms_out_db": rms_out}


def _score_pitch(case: Example, output: np.ndarray) -> dict:
    f0_in, f0_out = f0_hz(case.source), f0_hz(output)
    value = float(cents(f0_out, f0_in)) - 100 * case.params["semitones"]
    return {"value": value, "f0_in_hz": f0_in, "f0_out_hz": f0_out}


def _score_denoise(case: Example, output: np.ndarray) -> dict:
    snr_in, snr_out = spectral_snr_db(case.source, case.target), spectral_snr_db(output, case.target)
    return {"value": snr_out - snr_in, "snr_in_db": snr_in, "snr_out_db": snr_out}


def _score_tone(case: Example, output: np.ndarray) -> dict:
    f0_out = f0_hz(output)
    return {"value": f0_out / case.params["f0_hz"] - 1, "f0_out_hz": f0_out}


_SCORERS = {"volume": _score_volume, "pitch": _score_pitch, "denoise": _score_denoise, "tone": _score_tone}
