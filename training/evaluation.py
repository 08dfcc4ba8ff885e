"""Scores an editing callable on held-out clips against the demo model's bars.

One code path for the test suite and the benchmark table: ``edit(source, instruction,
seconds) -> wav`` is any callable (the demo pipeline, an oracle, a do-nothing baseline), and
its output is taken to be 24 kHz mono, since an ndarray carries no rate. Bars belong to a
family and a material (held-out tones or speech, training/data.py) and may cover one
condition only (e.g. the ±12 dB clips); a clip computes just the measures its bars need.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from training.data import Example
from training.measures import (
    added_noise_floor_db,
    envelope_correlation,
    f0_hz,
    is_valid_output,
    melody_kept,
    rms_db,
    spectral_snr_db,
    voiced_interval_cents,
)

Edit = Callable[[np.ndarray | None, str, float], np.ndarray]
FAMILIES = {"tone": ("volume", "pitch", "denoise", "tone"), "speech": ("volume", "pitch", "denoise")}


@dataclass(frozen=True)
class Bar:
    """Met when the median over the clips it covers (``condition`` None: every clip) of the
    clips' ``measure`` satisfies ``rule`` against ``limit``: "|x| <=", "<=", ">=" or ">"."""

    measure: str
    limit: float
    unit: str
    rule: str
    condition: str | None = None

    def median(self, values: np.ndarray) -> float:
        """Median of |value| for "|x| <=", else of value; nan counts as failing."""
        failing = np.inf if self.rule in ("|x| <=", "<=") else -np.inf
        values = np.abs(values) if self.rule == "|x| <=" else values
        return float(np.median(np.where(np.isnan(values), failing, values)))

    def met(self, median: float) -> bool:
        return bool({"|x| <=": median <= self.limit, "<=": median <= self.limit,
                     ">=": median >= self.limit, ">": median > self.limit}[self.rule])


LEVEL = "level_error_db"  # measured RMS change minus the requested gain
FLOOR = "added_floor_db"  # output noise floor above the source's moved by the gain (measures.py)
PITCH = "pitch_error_cents"  # median voiced-frame interval minus the requested one
SNR = "snr_gain_db"  # spectral SNR of the output minus the input's, against the clean clip
TONE_F0 = "f0_error_ratio"  # output F0 / requested F0 - 1
ENVELOPE = "envelope_corr"  # 20 ms RMS envelope of output vs input
MELODY = "melody_kept"  # share of the input's voiced frames whose F0 the output keeps within 100 cents

BARS = {
    ("volume", "tone"): (
        Bar(LEVEL, 1.5, "dB", "|x| <=", "±6 dB"),
        Bar(LEVEL, 2.0, "dB", "|x| <=", "±12 dB"),
        Bar(FLOOR, 3.0, "dB", "<="),
    ),
    ("pitch", "tone"): (Bar(PITCH, 50.0, "cents", "|x| <=", "±2 st"), Bar(PITCH, 50.0, "cents", "|x| <=", "±4 st")),
    ("denoise", "tone"): (Bar(SNR, 8.0, "dB", ">="),),
    ("tone", "tone"): (Bar(TONE_F0, 0.03, "ratio", "|x| <="),),
    ("volume", "speech"): (
        Bar(LEVEL, 1.5, "dB", "|x| <=", "±6 dB"),
        Bar(FLOOR, 3.0, "dB", "<="),
        Bar(ENVELOPE, 0.8, "r", ">="),
        Bar(MELODY, 0.5, "share", ">"),
    ),
    ("pitch", "speech"): (Bar(PITCH, 50.0, "cents", "|x| <=", "±2 st"),),
    ("denoise", "speech"): (Bar(SNR, 6.0, "dB", ">="),),
}


@dataclass(frozen=True)
class ClipScore:
    """``measured`` holds the clip's value of every measure its family's bars use."""

    instruction: str
    condition: str
    measured: dict
    valid: bool


@dataclass(frozen=True)
class BarScore:
    bar: Bar
    median: float
    n_clips: int
    met: bool


@dataclass(frozen=True)
class FamilyScore:
    """``passed`` needs every bar met and every output valid."""

    family: str
    material: str
    clips: tuple[ClipScore, ...]
    bars: tuple[BarScore, ...]
    passed: bool


def evaluate_family(edit: Edit, cases: Sequence[Example]) -> FamilyScore:
    """Run ``edit`` on every case of one family and material and score it against its bars."""
    keys = {(case.task, case.params["material"]) for case in cases}
    if len(keys) != 1:
        raise ValueError(f"cases mix families or materials: {sorted(keys)}")
    (key,) = keys
    clips = tuple(score_clip(case, edit(case.source, case.instruction, case.seconds)) for case in cases)
    bars = tuple(_score_bar(bar, clips) for bar in BARS[key])
    passed = all(bar.met for bar in bars) and all(clip.valid for clip in clips)
    return FamilyScore(*key, clips, bars, passed)


def score_clip(case: Example, output: np.ndarray) -> ClipScore:
    """Measure one output against its case with every measure its bars use."""
    measures = {bar.measure for bar in BARS[case.task, case.params["material"]]}
    measured = {name: float(_MEASURES[name](case, output)) for name in sorted(measures)}
    return ClipScore(case.instruction, case.params["condition"], measured, is_valid_output(output, case.n_samples))


def _score_bar(bar: Bar, clips: tuple[ClipScore, ...]) -> BarScore:
    covered = [clip.measured[bar.measure] for clip in clips if bar.condition in (None, clip.condition)]
    if not covered:
        return BarScore(bar, float("nan"), 0, False)
    median = bar.median(np.array(covered))
    return BarScore(bar, median, len(covered), bar.met(median))


def _snr_gain(case: Example, output: np.ndarray) -> float:
    return spectral_snr_db(output, case.target) - spectral_snr_db(case.source, case.target)


# Pitch uses the source's measured F0, not the nominal one, so the tracker's own bias (about
# +1 cent) cancels.
_MEASURES = {
    LEVEL: lambda case, out: rms_db(out) - rms_db(case.source) - case.params["gain_db"],
    FLOOR: lambda case, out: added_noise_floor_db(out, case.source, case.params["gain_db"]),
    PITCH: lambda case, out: voiced_interval_cents(out, case.source) - 100 * case.params["semitones"],
    SNR: _snr_gain,
    TONE_F0: lambda case, out: f0_hz(out) / case.params["f0_hz"] - 1,
    ENVELOPE: lambda case, out: envelope_correlation(out, case.source),
    MELODY: lambda case, out: melody_kept(out, case.source),
}
