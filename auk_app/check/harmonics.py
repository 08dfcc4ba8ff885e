"""Which of a clip's F0 frames hold one pitch: the frames where the spectrum's peaks are that F0's harmonics.

pYIN is built for one voice at a time. On a chord (220 + 277 + 330 Hz) it still calls every frame
voiced, at an F0 that none of the notes has (288 Hz), and another take of the same chord gets
another F0 or none: a melody or a pitch shift read from those frames measures pYIN's guess, not
the sound. A frame whose peaks (within ``PEAK_RANGE_DB`` of its strongest, 50 Hz up to the
``HARMONIC_MAX``-th harmonic) hold at least ``HARMONIC_SHARE`` of their power within
``HARMONIC_CENTS`` of a whole multiple of the frame's F0 is one pitched sound (a voice, a note, a
tone with its partials); a chord's notes fall between the harmonics of any F0 pYIN picks for it.
"""

from __future__ import annotations

import numpy as np

HARMONIC_CENTS = 40.0  # a peak this close to a harmonic of the frame's F0 is one of its partials (pYIN's grid is ±10)
HARMONIC_SHARE = 0.8  # the partials' share of the peaks' power that makes a frame one pitch
HARMONIC_MAX = 12  # partials up to the 12th count: above it a voice's harmonics lie closer than the tolerance
PEAK_RANGE_DB = 30.0  # peaks further below the frame's strongest are too weak to say what it holds
LOWEST_PEAK_HZ, HIGHEST_PEAK_HZ = 50.0, 2000.0
FRAMES_PER_CHUNK = 2048  # frames taken at once, so an hour's spectrogram never sits in memory whole


def single_pitch(power: np.ndarray, f0: np.ndarray, rate: int, n_fft: int) -> np.ndarray:
    """Per frame, whether ``f0`` (Hz, nan where unvoiced) explains the peaks of ``power`` (STFT power,
    bins by frames, frames aligned with ``f0``): True where it is one pitched sound."""
    frames = min(power.shape[1], f0.size)
    found = np.zeros(f0.size, dtype=bool)
    for start in range(0, frames, FRAMES_PER_CHUNK):
        stop = min(start + FRAMES_PER_CHUNK, frames)
        found[start:stop] = _harmonic_share(power[:, start:stop], f0[start:stop], rate / n_fft) >= HARMONIC_SHARE
    return found


def _harmonic_share(power: np.ndarray, f0: np.ndarray, bin_hz: float) -> np.ndarray:
    """Per frame, the share of its peaks' power that lies on ``f0``'s harmonics (0 where unvoiced or
    without peaks). Peak frequencies are refined by a parabola through the peak's bin and its two
    neighbours (in dB), a few hertz where the bins are 15.6 Hz apart."""
    level = 10 * np.log10(np.maximum(power, 1e-20))
    left, centre, right = level[:-2], level[1:-1], level[2:]
    peaks = (centre > left) & (centre >= right) & (centre > level.max(axis=0) - PEAK_RANGE_DB)
    curve = left - 2 * centre + right
    offset = np.where(curve < 0, 0.5 * (left - right) / np.where(curve < 0, curve, -1.0), 0.0)
    hz = (np.arange(1, level.shape[0] - 1)[:, None] + offset) * bin_hz
    with np.errstate(invalid="ignore", divide="ignore"):
        voiced = np.isfinite(f0) & (f0 > 0)
        pitch = np.where(voiced, f0, 1.0)[None, :]
        peaks &= voiced[None, :] & (hz >= LOWEST_PEAK_HZ) & (hz <= np.minimum(HIGHEST_PEAK_HZ, (HARMONIC_MAX + 0.5) * pitch))
        harmonic = np.maximum(np.rint(hz / pitch), 1)
        on = np.abs(1200 * np.log2(hz / (harmonic * pitch))) <= HARMONIC_CENTS
    weight = np.where(peaks, power[1:-1], 0.0)
    total = weight.sum(axis=0)
    return np.where(total > 0, (weight * on).sum(axis=0) / np.where(total > 0, total, 1.0), 0.0)
