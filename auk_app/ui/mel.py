"""Mel power spectrograms for the figures, in numpy alone.

The figures need one spectrogram per clip, nothing else of librosa; importing librosa's core
compiles its numba code on a machine without a numba cache (about a minute on two busy cores),
which would hold up the first figure of a fresh install. These are librosa's definitions
(``feature.melspectrogram`` with its defaults: a centred, zero-padded STFT under a periodic Hann
window, Slaney's mel scale and area-normalised triangles), checked against it in the tests.
"""

from __future__ import annotations

import numpy as np

_LINEAR_HZ_PER_MEL = 200.0 / 3  # Slaney's scale: linear below 1 kHz ...
_BREAK_HZ = 1000.0
_LOG_STEP = np.log(6.4) / 27.0  # ... and logarithmic above, 27 mels per factor 6.4
FRAMES_PER_BLOCK = 2048  # STFT frames transformed at once: a 10-minute recording stays a few MB at a time


def hz_to_mel(hz: np.ndarray) -> np.ndarray:
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / _LINEAR_HZ_PER_MEL
    logarithmic = _BREAK_HZ / _LINEAR_HZ_PER_MEL + np.log(np.maximum(hz, _BREAK_HZ) / _BREAK_HZ) / _LOG_STEP
    return np.where(hz >= _BREAK_HZ, logarithmic, linear)


def mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    break_mel = _BREAK_HZ / _LINEAR_HZ_PER_MEL
    logarithmic = _BREAK_HZ * np.exp(_LOG_STEP * (np.maximum(mel, break_mel) - break_mel))
    return np.where(mel >= break_mel, logarithmic, mel * _LINEAR_HZ_PER_MEL)


def mel_filters(sample_rate: int, n_fft: int, n_mels: int) -> np.ndarray:
    """[n_mels, n_fft // 2 + 1] triangles from 0 Hz to Nyquist, each scaled to unit area in Hz."""
    bins = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2.0), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    triangles = np.maximum(0.0, np.minimum(rising, falling))
    return (triangles * (2.0 / (edges[2:] - edges[:-2]))[:, None]).astype(np.float32)


def mel_power(mono: np.ndarray, sample_rate: int, *, n_fft: int, hop: int, n_mels: int) -> np.ndarray:
    """[n_mels, 1 + len // hop] mel power of ``mono``: frames centred on every ``hop``-th sample."""
    padded = np.pad(np.asarray(mono, dtype=np.float32), n_fft // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop]
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)).astype(np.float32)
    filters = mel_filters(sample_rate, n_fft, n_mels)
    out = np.empty((n_mels, frames.shape[0]), dtype=np.float32)
    for start in range(0, frames.shape[0], FRAMES_PER_BLOCK):
        block = np.fft.rfft(frames[start:start + FRAMES_PER_BLOCK] * window, axis=1)
        out[:, start:start + FRAMES_PER_BLOCK] = filters @ (block.real ** 2 + block.imag ** 2).T
    return out
