"""Held-out sounds for calibrating what the edit check counts as kept (``bench.bench_kept``).

None of these built or tuned the measure (that was done on an A major and a C minor
chord, a C major seventh, ``slow_tones`` seed 1, a training-split espeak-ng speaker, noisy speech
seed 3 and a 440 Hz tone): other chords, struck and sustained, a chord progression, plucked
arpeggios, music-like note lines of other seeds, tones with vibrato, held-out espeak-ng
speakers, speech in white and pink noise at 0 to 10 dB SNR, and 44.1 kHz stereo MP3 and OGG
uploads of some of them. Each is 24 kHz mono float32; noisy speech comes with its clean speech,
which the independent content measure compares against.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from auk_app.audio_io import read_mono
from auk_app.dsp import resample
from training.long_recordings import noisy_speech, slow_tones
from training.speech import speech_clip

RATE = 24_000
UPLOAD_RATE = 44_100


@dataclass(frozen=True)
class Sound:
    """A held-out source: its family (what it is), what it was made from (an upload of a sound shares
    its ``origin``), and the clean sound where the source is noisy."""

    name: str
    family: str
    wav: np.ndarray
    clean: np.ndarray | None = None
    origin: str = ""

    @property
    def reference(self) -> np.ndarray:
        return self.wav if self.clean is None else self.clean


def _t(seconds: float) -> np.ndarray:
    return np.arange(round(seconds * RATE)) / RATE


def _peak(wav: np.ndarray, peak: float = 0.3) -> np.ndarray:
    return (peak * wav / np.abs(wav).max()).astype(np.float32)


def chord(notes: tuple[float, ...], seconds: float, *, partials: int = 1, struck: bool = False, seed: int = 0):
    """Notes sounding together, each with ``partials`` harmonics falling as 1/k, a few cents detuned;
    ``struck``: a 10 ms attack and a piano-like decay, else sustained."""
    rng = np.random.default_rng(seed)
    t = _t(seconds)
    wav = sum(sum(np.sin(2 * np.pi * k * f * 2 ** (rng.uniform(-3, 3) / 1200) * t + rng.uniform(0, 2 * np.pi)) / k
                  for k in range(1, partials + 1)) for f in notes)
    envelope = np.minimum(t / 0.01, 1) * (np.exp(-t / 0.8) if struck else 1)
    return _peak(wav * envelope)


def progression(chords: list[tuple[float, ...]], each: float, seed: int) -> np.ndarray:
    """Struck chords one after another, three partials each."""
    return _peak(np.concatenate([chord(c, each, partials=3, struck=True, seed=seed + i) for i, c in enumerate(chords)]))


def plucks(notes: list[float], each: float, seed: int) -> np.ndarray:
    """A plucked-string line (Karplus-Strong): one note after another, each decaying."""
    rng = np.random.default_rng(seed)
    out = []
    for f in notes:
        period = round(RATE / f)
        line = rng.uniform(-1, 1, period)
        note = np.empty(round(each * RATE))
        for i in range(note.size):
            note[i] = line[i % period]
            line[i % period] = 0.996 * 0.5 * (line[i % period] + line[(i + 1) % period])
        out.append(note)
    return _peak(np.concatenate(out))


def vibrato_tone(hz: float, seconds: float, depth: float = 0.03, rate_hz: float = 5.0) -> np.ndarray:
    t = _t(seconds)
    phase = 2 * np.pi * np.cumsum(hz * (1 + depth * np.sin(2 * np.pi * rate_hz * t))) / RATE
    return _peak(np.sin(phase) + 0.3 * np.sin(2 * phase))


def speech(seed: int, seconds: float = 3.0) -> np.ndarray:
    wav, _ = speech_clip(np.random.default_rng(seed), round(seconds * RATE), "heldout")
    return _peak(wav, 0.5)


def in_pink_noise(seed: int, seconds: float, snr_db: float) -> tuple[np.ndarray, np.ndarray]:
    """(noisy, clean): held-out speech in pink noise (power falling as 1/f above 50 Hz) at ``snr_db``."""
    rng = np.random.default_rng(seed)
    clean = speech(seed, seconds).astype(np.float64)
    spectrum = np.fft.rfft(rng.standard_normal(clean.size))
    freqs = np.fft.rfftfreq(clean.size, 1 / RATE)
    noise = np.fft.irfft(spectrum * np.where(freqs >= 50, 1 / np.sqrt(np.maximum(freqs, 50)), 0), clean.size)
    noise *= np.sqrt(np.mean(clean**2)) / 10 ** (snr_db / 20) / np.sqrt(np.mean(noise**2))
    return (clean + noise).astype(np.float32), clean.astype(np.float32)


def uploaded(wav: np.ndarray, fmt: str) -> np.ndarray:
    """``wav`` as a person uploads it, a 44.1 kHz stereo MP3 or OGG (the right channel 1 dB quieter),
    read back the way the app reads an upload: decoded, mixed to mono and resampled to 24 kHz."""
    stereo = resample(wav, RATE, UPLOAD_RATE)
    stereo = np.stack([stereo, stereo * np.float32(10 ** (-1 / 20))], axis=1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"upload.{fmt.lower()}"
        sf.write(path, stereo, UPLOAD_RATE, format=fmt, **({"subtype": "VORBIS"} if fmt == "OGG" else {}))
        clip = read_mono(path)
    return resample(clip.mono, clip.sample_rate, RATE)[: wav.size]


def held_out() -> list[Sound]:
    """Every held-out source, in families: chord, music, tone, speech, speech in noise."""
    g_major, d_minor7, e_dim = (196.0, 246.9, 293.7), (146.8, 174.6, 220.0, 261.6), (164.8, 196.0, 233.1)
    sounds = [
        Sound("G major, sustained", "chord", chord(g_major, 2.0, seed=20)),
        Sound("E diminished, three partials, struck", "chord", chord(e_dim, 2.0, partials=3, struck=True, seed=21)),
        Sound("a cluster 300 + 318 + 337 Hz", "chord", chord((300.0, 317.8, 336.7), 2.0, seed=22)),
        Sound("Dm7 G C Am, struck", "chord", progression([d_minor7, g_major, (261.6, 329.6, 392.0),
                                                         (220.0, 261.6, 329.6)], 0.75, seed=23)),
        Sound("plucked arpeggio", "music", plucks([196.0, 246.9, 293.7, 392.0, 293.7, 246.9, 196.0, 146.8], 0.35, 24)),
        Sound("note line, seed 21", "music", slow_tones(8.0, 21)),
        Sound("note line, seed 22", "music", slow_tones(8.0, 22)),
        Sound("330 Hz with vibrato", "tone", vibrato_tone(330.0, 2.0)),
        Sound("880 Hz", "tone", chord((880.0,), 2.0, seed=25)),
        Sound("speaker 31", "speech", speech(31)),
        Sound("speaker 32", "speech", speech(32)),
        Sound("speaker 33", "speech", speech(33)),
    ]
    for seed, snr in ((41, 0.0), (42, 5.0), (43, 10.0)):
        noisy, clean = noisy_speech(4.0, seed, snr)
        sounds.append(Sound(f"speech in white noise at {snr:g} dB, seed {seed}", "speech in noise", noisy, clean))
    noisy, clean = in_pink_noise(44, 4.0, 5.0)
    sounds.append(Sound("speech in pink noise at 5 dB, seed 44", "speech in noise", noisy, clean))
    for fmt in ("MP3", "OGG"):
        sounds.append(Sound(f"speaker 31 as a 44.1 kHz stereo {fmt}", "speech", uploaded(speech(31), fmt),
                            origin="speaker 31"))
        sounds.append(Sound(f"G major as a 44.1 kHz stereo {fmt}", "chord", uploaded(chord(g_major, 2.0, seed=20), fmt),
                            origin="G major, sustained"))
        noisy, clean = noisy_speech(4.0, 42, 5.0)
        sounds.append(Sound(f"speech in white noise at 5 dB as a 44.1 kHz stereo {fmt}", "speech in noise",
                            uploaded(noisy, fmt), clean, origin="speech in white noise at 5 dB, seed 42"))
    return sounds
