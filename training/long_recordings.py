"""Long recordings for the whole-file tests and bench: minutes of noisy speech and of slow tones.

* :func:`noisy_speech`: held-out espeak-ng sentences (``training.speech``, one speaker) in white
  noise at ``snr_db`` over the whole recording, the held-out denoise condition of the demo's bars;
  returns the clean speech too.
* :func:`slow_tones`: a music-like line of sustained harmonic notes (a few partials, a new note
  every few seconds, short glides) under a slow swell of ±6 dB: the level moves all the time, but
  never quickly, so a seam's step shows against it.

Seeded, 24 kHz, float32, peaking well below full scale.
"""

from __future__ import annotations

import numpy as np

from training.sounds import SAMPLE_RATE
from training.speech import speech_clip

SPEECH_PEAK = 0.5
NOTE_SECONDS = (2.0, 6.0)  # how long each note of the tone line holds
SWELL_SECONDS = 23.0  # period of the slow level swell
SWELL_DB = 6.0  # its depth on each side


def noisy_speech(seconds: float, seed: int, snr_db: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """(noisy, clean): one held-out speaker for ``seconds``, and the same in white noise at ``snr_db``."""
    rng = np.random.default_rng(seed)
    clean, _ = speech_clip(rng, round(seconds * SAMPLE_RATE), "heldout")
    clean = SPEECH_PEAK * clean
    noise = rng.standard_normal(clean.size)
    noise *= np.sqrt(np.mean(clean**2)) / 10 ** (snr_db / 20) / np.sqrt(np.mean(noise**2))
    return (clean + noise).astype(np.float32), clean.astype(np.float32)


def slow_tones(seconds: float, seed: int) -> np.ndarray:
    """Sustained harmonic notes (110–440 Hz, 4 partials falling 6 dB each) under a slow ±6 dB swell."""
    rng = np.random.default_rng(seed)
    n = round(seconds * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    changes = np.cumsum(rng.uniform(*NOTE_SECONDS, size=int(seconds / NOTE_SECONDS[0]) + 1))
    notes = 110.0 * 2 ** (rng.integers(0, 25, size=changes.size + 1) / 12)
    f0 = notes[np.searchsorted(changes, t)]
    glide = np.hanning(481) / np.hanning(481).sum()  # 20 ms glides between notes
    f0 = np.convolve(np.pad(np.log2(f0), 240, mode="edge"), glide, mode="valid")
    phase = 2 * np.pi * np.cumsum(2**f0) / SAMPLE_RATE
    wav = sum(0.5**k * np.sin((k + 1) * phase + rng.uniform(0, 2 * np.pi)) for k in range(4))
    swell = 10 ** (SWELL_DB / 20 * np.sin(2 * np.pi * t / SWELL_SECONDS + rng.uniform(0, 2 * np.pi)))
    wav *= swell
    return (0.25 * wav / np.abs(wav).max()).astype(np.float32)
