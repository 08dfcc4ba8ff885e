"""Procedural sounds at 24 kHz: harmonic voices, noise beds and sines (pure numpy).

A harmonic sound is kept as its description, `HarmonicSound`, rather than as samples: the
pitch task needs the same sound at f0·2^(k/12) with identical partial amplitudes, phases and
envelope, and ``render(sound, n_samples, transpose=2 ** (k / 12))`` gives exactly that. Tones,
melodies and chords are the same description with one voice and one note, one voice and
several notes, or several voices.

Random draws take a caller's ``np.random.Generator``; nothing here touches a global RNG.
"""

from dataclasses import dataclass

import numpy as np

from auk_app.config import SAMPLE_RATE  # the demo trains at AuK's rate

F0_RANGE_HZ = (110.0, 880.0)  # A2..A5; ±4 semitones keeps every shifted f0 in 87..1109 Hz
PARTIAL_RANGE = (1, 8)  # 8 partials of 1109 Hz reach 8.9 kHz, under PARTIAL_LIMIT_HZ
PARTIAL_LIMIT_HZ = 10_800.0  # 0.9 × Nyquist: partials above it are muted so no render aliases
NOISE_EXPONENTS = {"white": 0.0, "pink": 1.0, "brown": 2.0}  # power spectrum ∝ 1 / f^exponent
CHORD_SHAPES = ((0, 4, 7), (0, 3, 7), (0, 5, 7), (0, 4, 7, 10), (0, 7, 12), (0, 3, 7, 10))
_MIN_NOTE_S = 0.15  # shortest melody note; longer than the longest glide (60 ms) plus a dip
_DIP_WIDTH_S = 0.02  # Gaussian width of the re-articulation dip at a note change


@dataclass(frozen=True, eq=False)
class Envelope:
    """Amplitude shape over time, shared by every voice; transposing never changes it.

    ``decay_s`` is an exponential time constant (inf = sustained); ``dip`` in [0, 1) is how
    far the level drops at each note change, so repeated notes stay audible as notes.
    """

    attack_s: float
    release_s: float
    decay_s: float
    dip: float


@dataclass(frozen=True, eq=False)
class HarmonicSound:
    """Voices of harmonic partials sharing one timbre, note grid and envelope.

    Shapes: ``f0_hz`` [n_voices, n_notes] (a tone is [1, 1]); ``boundaries_s`` [n_notes - 1]
    note-change times; ``amplitudes`` [n_partials]; ``phases`` [n_voices, n_partials] radians;
    ``voice_gains`` [n_voices]. Notes change over ``glide_s`` along a raised cosine in log f0.
    """

    f0_hz: np.ndarray
    boundaries_s: np.ndarray
    glide_s: float
    amplitudes: np.ndarray
    phases: np.ndarray
    voice_gains: np.ndarray
    vibrato_hz: float
    vibrato_cents: float
    envelope: Envelope


def render(sound: HarmonicSound, n_samples: int, transpose: float = 1.0) -> np.ndarray:
    """Samples of ``sound`` with every f0 multiplied by ``transpose``; float64 [n_samples].

    The phase is the running integral of the f0 contour, so glides and vibrato stay
    continuous and a transposed render keeps each partial's start phase.
    """
    t = np.arange(n_samples) / SAMPLE_RATE
    log2_f0 = _log2_f0_contours(sound, t) + np.log2(transpose)
    log2_f0 += sound.vibrato_cents / 1200 * np.sin(2 * np.pi * sound.vibrato_hz * t)
    f0 = 2.0**log2_f0  # [n_voices, T]
    theta = 2 * np.pi * np.cumsum(f0, axis=-1) / SAMPLE_RATE
    theta -= theta[:, :1]  # phase 0 at the first sample
    wav = np.zeros(n_samples)
    for voice, gain in enumerate(sound.voice_gains):
        for k, (amplitude, phase) in enumerate(zip(sound.amplitudes, sound.phases[voice]), start=1):
            audible = k * f0[voice] < PARTIAL_LIMIT_HZ
            wav += gain * amplitude * np.sin(k * theta[voice] + phase) * audible
    return wav * _envelope_curve(sound, t)


def noise(
    rng: np.random.Generator,
    n_samples: int,
    color: str,
    band_hz: tuple[float, float] | None = None,
) -> np.ndarray:
    """Unit-RMS coloured noise, optionally band-limited; float64 [n_samples].

    Shaped in the frequency domain: amplitude ∝ f^(-exponent/2) with f floored at 20 Hz (so
    brown noise has no DC blow-up), and a band as 4th-order Butterworth magnitudes.
    """
    freqs = np.maximum(np.fft.rfftfreq(n_samples, 1 / SAMPLE_RATE), 20.0)
    gain = freqs ** (-NOISE_EXPONENTS[color] / 2)
    if band_hz is not None:
        low, high = band_hz
        gain /= np.sqrt((1 + (low / freqs) ** 8) * (1 + (freqs / high) ** 8))
    gain[0] = 0.0
    wav = np.fft.irfft(np.fft.rfft(rng.standard_normal(n_samples)) * gain, n_samples)
    return wav / np.sqrt(np.mean(wav**2))


def sine(f0_hz: float, n_samples: int, phase: float, fade_s: float = 0.02) -> np.ndarray:
    """Unit-amplitude sine with raised-cosine fades (20 ms: no click, F0 still clear); float64."""
    t = np.arange(n_samples) / SAMPLE_RATE
    duration = n_samples / SAMPLE_RATE
    fade = _ramp(t / fade_s) * _ramp((duration - t) / fade_s)
    return np.sin(2 * np.pi * f0_hz * t + phase) * fade


def draw_tone(
    rng: np.random.Generator,
    n_samples: int,
    f0_range_hz: tuple[float, float] = F0_RANGE_HZ,
    partial_range: tuple[int, int] = PARTIAL_RANGE,
) -> HarmonicSound:
    """One sustained note, f0 log-uniform in ``f0_range_hz``, partial count in ``partial_range``."""
    f0 = _log_uniform(rng, *f0_range_hz)
    return _sound(rng, n_samples, np.array([[f0]]), np.array([]), _draw_partials(rng, partial_range))


def draw_melody(rng: np.random.Generator, n_samples: int) -> HarmonicSound:
    """One voice, 3..8 notes (fewer when short: notes last ≥ 0.15 s on average), steps ≤ 5 semitones."""
    duration = n_samples / SAMPLE_RATE
    n_notes = int(min(rng.integers(3, 9), max(1, duration // _MIN_NOTE_S)))
    span = 12 * np.log2(F0_RANGE_HZ[1] / F0_RANGE_HZ[0])  # 36 semitones above 110 Hz
    semitones = [rng.uniform(0, span)]
    for step in rng.choice([-5, -4, -3, -2, -1, 1, 2, 3, 4, 5], size=n_notes - 1):
        semitones.append(float(np.clip(semitones[-1] + step, 0, span)))
    f0 = F0_RANGE_HZ[0] * 2.0 ** (np.array([semitones]) / 12)
    return _sound(rng, n_samples, f0, _note_boundaries(rng, duration, n_notes), _draw_partials(rng))


def draw_chord(rng: np.random.Generator, n_samples: int) -> HarmonicSound:
    """2..4 voices from a chord shape, as 1..3 chords whose root moves by a fourth, fifth or tone."""
    duration = n_samples / SAMPLE_RATE
    shape = np.array(CHORD_SHAPES[rng.integers(len(CHORD_SHAPES))])
    n_chords = int(min(rng.integers(1, 4), max(1, duration // (2 * _MIN_NOTE_S))))
    top = 12 * np.log2(F0_RANGE_HZ[1] / F0_RANGE_HZ[0]) - shape[-1]  # highest root, semitones
    roots = [rng.uniform(0, top)]
    for step in rng.choice([-7, -5, -2, 2, 5, 7], size=n_chords - 1):
        roots.append(float(np.clip(roots[-1] + step, 0, top)))
    f0 = F0_RANGE_HZ[0] * 2.0 ** ((shape[:, None] + np.array(roots)[None, :]) / 12)
    return _sound(rng, n_samples, f0, _note_boundaries(rng, duration, n_chords), _draw_partials(rng))


def _sound(
    rng: np.random.Generator,
    n_samples: int,
    f0_hz: np.ndarray,
    boundaries_s: np.ndarray,
    n_partials: int,
) -> HarmonicSound:
    """Complete a note grid with a random timbre, phases, vibrato and envelope."""
    n_voices = f0_hz.shape[0]
    vibrato = rng.random() < 0.3
    return HarmonicSound(
        f0_hz=f0_hz,
        boundaries_s=boundaries_s,
        glide_s=rng.uniform(0.01, 0.06),
        amplitudes=_draw_timbre(rng, n_partials),
        phases=rng.uniform(0, 2 * np.pi, size=(n_voices, n_partials)),
        voice_gains=rng.uniform(0.5, 1.0, size=n_voices),
        vibrato_hz=rng.uniform(4.0, 7.0) if vibrato else 0.0,
        vibrato_cents=rng.uniform(5.0, 25.0) if vibrato else 0.0,
        envelope=_draw_envelope(rng, n_samples / SAMPLE_RATE, has_notes=boundaries_s.size > 0),
    )


def _draw_partials(rng: np.random.Generator, partial_range: tuple[int, int] = PARTIAL_RANGE) -> int:
    """Partial count, both ends of ``partial_range`` included."""
    return int(rng.integers(partial_range[0], partial_range[1] + 1))


def _draw_timbre(rng: np.random.Generator, n_partials: int) -> np.ndarray:
    """Partial amplitudes k^-rolloff (rolloff 0.3..2.5: bright to dull), ±50 % jitter,
    and for a third of timbres weak even partials (clarinet-like)."""
    k = np.arange(1, n_partials + 1)
    amplitudes = k ** -rng.uniform(0.3, 2.5) * rng.uniform(0.5, 1.0, size=n_partials)
    if rng.random() < 1 / 3:
        amplitudes[1::2] *= rng.uniform(0.05, 0.5)
    return amplitudes


def _draw_envelope(rng: np.random.Generator, duration: float, has_notes: bool) -> Envelope:
    """Attack 5..80 ms and release 20..250 ms (each at most a quarter of the clip); 40 %
    decay with a 0.3..3 s time constant, the rest sustain; a 0..60 % dip at note changes."""
    return Envelope(
        attack_s=min(rng.uniform(0.005, 0.08), duration / 4),
        release_s=min(rng.uniform(0.02, 0.25), duration / 4),
        decay_s=rng.uniform(0.3, 3.0) if rng.random() < 0.4 else np.inf,
        dip=rng.uniform(0.0, 0.6) if has_notes else 0.0,
    )


def _note_boundaries(rng: np.random.Generator, duration: float, n_notes: int) -> np.ndarray:
    """Change times for notes whose lengths vary up to 3:1."""
    lengths = rng.uniform(1.0, 3.0, size=n_notes)
    return np.cumsum(lengths)[:-1] / lengths.sum() * duration


def _log2_f0_contours(sound: HarmonicSound, t: np.ndarray) -> np.ndarray:
    """log2 f0 per voice and sample, [n_voices, T], gliding at each boundary."""
    log2_f0 = np.log2(sound.f0_hz)
    contour = np.repeat(log2_f0[:, :1], t.size, axis=1)
    for j, boundary in enumerate(sound.boundaries_s):
        step = log2_f0[:, j + 1] - log2_f0[:, j]
        contour += step[:, None] * _ramp((t - boundary) / sound.glide_s + 0.5)
    return contour


def _envelope_curve(sound: HarmonicSound, t: np.ndarray) -> np.ndarray:
    envelope = sound.envelope
    duration = t.size / SAMPLE_RATE
    curve = _ramp(t / envelope.attack_s) * _ramp((duration - t) / envelope.release_s)
    curve *= np.exp(-t / envelope.decay_s)
    for boundary in sound.boundaries_s:
        curve *= 1 - envelope.dip * np.exp(-(((t - boundary) / _DIP_WIDTH_S) ** 2))
    return curve


def _ramp(x: np.ndarray) -> np.ndarray:
    """Raised cosine from 0 (x ≤ 0) to 1 (x ≥ 1)."""
    return 0.5 - 0.5 * np.cos(np.pi * np.clip(x, 0.0, 1.0))


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))
