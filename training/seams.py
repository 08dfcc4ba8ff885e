"""Seam measures: whether a recording edited in windows shows where the windows meet.

Three measures of the change across a point, each compared with the same measure on a reference
at the same place, so a seam is judged against what the recording itself does there:

* ``level_step_db``: the level of the second after a point less that of the second before it (dB,
  of the loud 20 ms frames, so pauses do not count): a gain that differs between two windows is
  a step the reference does not have;
* ``sample_jump``: the largest sample-to-sample change within 10 ms of a point, over the RMS of the
  sample-to-sample changes around it: a click is a jump far above the signal's own;
* ``spectral_step_db``: the mean absolute difference between the power spectra (dB) of the second
  after and the second before a point, over the bins that hold sound: a timbre that changes.

:func:`seam_measures` takes them at each seam (its crossfade's start, middle and end) of a result
and of a reference, and at control points halfway between seams, where no window meets another:
what the edit does to the measures away from any seam. The reference is the source, or for a
noise removal the clean recording the noisy one was made from (denoising deepens every pause, so
the result's steps follow the speech, not the noise). Pure functions of 1-D numpy arrays at 24 kHz.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from training.measures import rms_db
from training.sounds import SAMPLE_RATE

LEVEL_SPAN = SAMPLE_RATE  # on each side: several words, shorter than a sentence
LOUD_FRAME = SAMPLE_RATE // 50  # 20 ms frames, of which the loud ones give a span's level
LOUD_PERCENTILE = 90
JUMP_RADIUS = SAMPLE_RATE // 100  # a click lasts a few ms
JUMP_SPAN = SAMPLE_RATE // 10  # the signal's own sample-to-sample changes, 100 ms on each side
SPECTRUM_FFT = 1024
SPECTRUM_FLOOR_DB = 30.0  # bins more than this below the louder side's strongest bin hold no sound


def level_step_db(wav: np.ndarray, at: int, span: int = LEVEL_SPAN) -> float:
    """The level (dB) of ``span`` samples after ``at`` less that of ``span`` samples before it, a
    span's level being its loud 20 ms frames' (the 90th percentile), so pauses do not count."""
    return _loud_db(wav[at : at + span]) - _loud_db(wav[at - span : at])


def sample_jump(wav: np.ndarray, at: int, radius: int = JUMP_RADIUS, span: int = JUMP_SPAN) -> float:
    """The largest |x[i+1] − x[i]| within ``radius`` of ``at``, over the RMS of those changes within
    ``span`` of it; 0 for silence."""
    changes = np.diff(np.asarray(wav[at - span : at + span], dtype=np.float64))
    scale = np.sqrt(np.mean(changes**2))
    return float(np.abs(changes[span - radius : span + radius]).max() / scale) if scale > 0 else 0.0


def spectral_step_db(wav: np.ndarray, at: int, span: int = LEVEL_SPAN) -> float:
    """Mean |P_after − P_before| (dB) over the bins within SPECTRUM_FLOOR_DB of the louder side's
    strongest bin, P the mean Hann-windowed power spectrum of ``span`` samples on each side."""
    before, after = _power_db(wav[at - span : at]), _power_db(wav[at : at + span])
    loud = np.maximum(before, after)
    heard = loud > loud.max() - SPECTRUM_FLOOR_DB
    return float(np.mean(np.abs(after - before)[heard]))


@dataclass(frozen=True)
class SeamMeasures:
    """One measure at the seams and at the control points, on the result and on the reference."""

    name: str
    at_seams: np.ndarray  # the result's, at every seam point
    reference_at_seams: np.ndarray  # the reference's (the source, or what it was made from), at the same places
    at_controls: np.ndarray  # the result's, halfway between seams
    reference_at_controls: np.ndarray

    @property
    def excess_at_seams(self) -> np.ndarray:
        """How far the result departs from the reference at each seam point: either way for a level
        step (a gain that differs between windows), upwards only for the others (a seam adds jumps)."""
        return self._excess(self.at_seams, self.reference_at_seams)

    @property
    def excess_at_controls(self) -> np.ndarray:
        return self._excess(self.at_controls, self.reference_at_controls)

    def _excess(self, result: np.ndarray, reference: np.ndarray) -> np.ndarray:
        return np.abs(result - reference) if self.name == "level_step_db" else np.maximum(result - reference, 0.0)


MEASURES = {"level_step_db": level_step_db, "sample_jump": sample_jump, "spectral_step_db": spectral_step_db}


def seam_points(seams: Sequence[int], crossfade: int, hop: int) -> list[int]:
    """Where a seam could show, in samples: each crossfade's start, middle and end (``seams`` and
    ``crossfade`` in latent frames, as :class:`~auk_app.auk.windows.WindowPlan` gives them)."""
    return [hop * (seam + offset) for seam in seams for offset in (0, crossfade // 2, crossfade)]


def control_points(seams: Sequence[int], crossfade: int, hop: int) -> list[int]:
    """The same three points around each place halfway between neighbouring seams, where no window
    meets another: as many chances to measure high as the seams get."""
    halfway = [(a + b) // 2 for a, b in zip(seams, seams[1:])]
    return seam_points(halfway, crossfade, hop)


def seam_measures(result: np.ndarray, reference: np.ndarray, seams: Sequence[int],
                  controls: Sequence[int]) -> dict[str, SeamMeasures]:
    """Every measure at the ``seams`` and ``controls`` points (samples) of ``result`` and ``reference``."""
    def at(wav: np.ndarray, points: Sequence[int], measure) -> np.ndarray:
        return np.array([measure(wav, point) for point in points])

    return {
        name: SeamMeasures(name, at(result, seams, measure), at(reference, seams, measure),
                           at(result, controls, measure), at(reference, controls, measure))
        for name, measure in MEASURES.items()
    }


def _loud_db(wav: np.ndarray) -> float:
    frames = np.asarray(wav, dtype=np.float64)[: wav.size // LOUD_FRAME * LOUD_FRAME].reshape(-1, LOUD_FRAME)
    return rms_db(np.array([np.percentile(np.sqrt(np.mean(frames**2, axis=1)), LOUD_PERCENTILE)]))


def _power_db(wav: np.ndarray) -> np.ndarray:
    frames = np.lib.stride_tricks.sliding_window_view(np.asarray(wav, dtype=np.float64), SPECTRUM_FFT)
    frames = frames[:: SPECTRUM_FFT // 2] * np.hanning(SPECTRUM_FFT)
    power = np.mean(np.abs(np.fft.rfft(frames, axis=1)) ** 2, axis=0)
    return 10 * np.log10(np.maximum(power, 1e-20))
