"""Writes the edit tab's example clips (run once; the FLAC files are committed, since espeak-ng is not
installed on Spaces): ``python assets/examples/make_examples.py``, with Debian's espeak-ng.

speech.flac: espeak-ng "en-us" saying "Welcome to AuK Studio." peaking at −6 dBFS; tone.flac: 1.5 s
of 440 Hz sine at −12 dBFS with 20 ms fades; noisy_speech.flac: the speech plus white noise at
10 dB SNR (seed 0). All mono 24 kHz PCM16, the rate the models use.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly  # scipy comes with librosa

RATE = 24_000
HERE = Path(__file__).parent


def speech(text: str = "Welcome to AuK Studio.") -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        wav = Path(folder) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(wav), text], check=True)
        voice, rate = sf.read(str(wav), dtype="float32")
    voice = resample_poly(voice, RATE, rate).astype(np.float32)
    return voice * np.float32(0.5 / np.abs(voice).max())  # peak −6 dBFS


def tone(seconds: float = 1.5, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.02)
    return (10 ** (-12 / 20) * np.sin(2 * np.pi * hz * t) * fade).astype(np.float32)


def noisy(voice: np.ndarray, snr_db: float = 10.0) -> np.ndarray:
    noise = np.random.default_rng(0).standard_normal(voice.shape[0]).astype(np.float32)
    noise *= np.sqrt(np.mean(voice ** 2) / np.mean(noise ** 2) / 10 ** (snr_db / 10))
    mixed = voice + noise
    return mixed * np.float32(0.5 / np.abs(mixed).max())


if __name__ == "__main__":
    voice = speech()
    for name, clip in (("speech", voice), ("tone", tone()), ("noisy_speech", noisy(voice))):
        sf.write(str(HERE / f"{name}.flac"), clip, RATE, format="FLAC", subtype="PCM_16")
