"""Training triples (source, instruction, target) for four tasks, and the held-out clips.

Tasks: ``volume`` (target = source × gain, exactly), ``pitch`` (the same sound re-rendered at
f0·2^(k/12)), ``denoise`` (source = clean + noise, target = clean) and ``tone`` (text only: a
sine from TONE_FREQS_HZ). Edits keep the sample count. Audio is float32 mono at 24 kHz and no
source or target peaks above PEAK_MAX.

Seed spaces: every Generator comes from SeedSequence entropy whose first word names its space,
``[TRAIN_SPACE, seed, index]`` (`training_rng`) or ``[HELDOUT_SPACE, family, seed, index]``
(`heldout_rng`). The entropy of the two spaces differs for every choice of seeds, so no
held-out clip is drawn from a training seed, provided training builds its Generators with
`training_rng` (as `ProceduralDataset` does).
"""

from dataclasses import dataclass

import numpy as np

from auk_app.config import seconds_for_frames
from training.instructions import (
    denoise_instruction,
    pitch_instruction,
    tone_instruction,
    volume_instruction,
)
from training.sounds import (
    NOISE_EXPONENTS,
    SAMPLE_RATE,
    HarmonicSound,
    draw_chord,
    draw_melody,
    draw_tone,
    noise,
    render,
    sine,
)

TASKS = ("volume", "pitch", "denoise", "tone")
HOP = 480  # VAE hop: 24 kHz / 480 = 50 latent frames per second
TRAIN_SPACE = 0
HELDOUT_SPACE = 1
PEAK_MAX = 0.95
# -30 .. -0.45 dBFS: 29.5 dB of level variety, so a ±15 dB edit still has 14.5 dB to place its source
PEAK_RANGE_DB = (-30.0, 20 * np.log10(PEAK_MAX))
# Text-to-tone vocabulary: multiples of the 50 Hz latent frame rate. Such a sine is periodic in
# one 20 ms frame, so its latent frames are constant and the model need not generate phase.
TONE_FREQS_HZ = tuple(range(200, 701, 50))  # 200 .. 700 Hz, 11 tones
TONE_PEAK = 0.5  # -6 dBFS and phase 0: the text fixes the tone completely
# A random phase would leave the clean latents' mean at zero for every frequency, so the text's
# frequency would reach the flow's regression target only through second moments: the first
# demo model generated tones of the wrong frequency. With a fixed phase the mean is the tone.

HELDOUT_SECONDS = (2.0, 3.0)
HELDOUT_F0_RANGE_HZ = (220.0, 660.0)
HELDOUT_PARTIAL_RANGE = (3, 5)
HELDOUT_GAINS_DB = (3, 6, 10)
HELDOUT_SEMITONES = (1, 2, 3)
HELDOUT_SNR_DB = 5.0
HELDOUT_NOISE_COLORS = ("white", "pink", "brown")


@dataclass(frozen=True, eq=False)
class Example:
    """One triple. ``source`` is None for text-only tasks; ``params`` records what was drawn
    (gain_db, semitones, snr_db, f0_hz, sound kind, ...) for tests and measures."""

    task: str
    instruction: str
    source: np.ndarray | None
    target: np.ndarray
    params: dict

    @property
    def n_samples(self) -> int:
        return self.target.size

    @property
    def seconds(self) -> float:
        """The duration to request: for a whole-hop target one the pipeline turns into exactly its
        frames (``ceil(s · 24000 / 480)`` makes 2.24 s 113 frames), else the plain length."""
        frames, leftover = divmod(self.target.size, HOP)
        return seconds_for_frames(frames) if leftover == 0 else self.target.size / SAMPLE_RATE


def training_rng(seed: int, index: int) -> np.random.Generator:
    """Generator for training item ``index`` of stream ``seed`` (both non-negative)."""
    return np.random.default_rng([TRAIN_SPACE, seed, index])


def heldout_rng(family: str, seed: int, index: int) -> np.random.Generator:
    """Generator for held-out clip ``index`` of ``family``; never equal to a training one."""
    return np.random.default_rng([HELDOUT_SPACE, TASKS.index(family), seed, index])


def sample_example(
    rng: np.random.Generator,
    task: str | None = None,
    seconds: float | tuple[float, float] = (0.5, 3.0),
    hop_aligned: float = 0.5,
) -> Example:
    """Draw one training triple; ``task`` None picks one of TASKS uniformly.

    The length is uniform in ``seconds`` (a number fixes it); with probability
    ``hop_aligned`` it is floored to whole 480-sample hops, otherwise any sample count.
    """
    if task is None:
        task = TASKS[rng.integers(len(TASKS))]
    if task not in _TRAINING_TASKS:
        raise ValueError(f"task {task!r} is not one of {TASKS}")
    return _TRAINING_TASKS[task](rng, _draw_n_samples(rng, seconds, hop_aligned))


@dataclass(frozen=True)
class ProceduralDataset:
    """Map-style dataset: item i depends only on (seed, i), so loader workers can shard it.

    Tasks go round-robin (item i has task ``tasks[i % len(tasks)]``): equal shares, and a
    repeated name weights its task.
    """

    seed: int
    size: int
    tasks: tuple[str, ...] = TASKS
    seconds: float | tuple[float, float] = (0.5, 3.0)
    hop_aligned: float = 0.5

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Example:
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} is outside 0..{self.size - 1}")
        task = self.tasks[index % len(self.tasks)]
        return sample_example(training_rng(self.seed, index), task, self.seconds, self.hop_aligned)


def heldout_cases(family: str, n: int, seed: int = 0) -> list[Example]:
    """``n`` evaluation clips for one family, with the bars' exact conditions.

    Harmonic tones of 220..660 Hz with 3..5 partials, 2..3 s of any sample count, the AuK
    instruction word for word; the tones are drawn like training tones (timbre, envelope, 30 %
    with vibrato) within those ranges. Conditions go round-robin so 6 clips cover every one:
    volume ±3/±6/±10 dB, pitch ±1/±2/±3 semitones, denoise at exactly 5 dB SNR in
    white/pink/brown noise, tone through the 11 TONE_FREQS_HZ (lengths in whole hops, so the
    requested seconds give an exact sample count).
    """
    if family not in _HELDOUT_FAMILIES:
        raise ValueError(f"family {family!r} is not one of {TASKS}")
    return [_HELDOUT_FAMILIES[family](heldout_rng(family, seed, i), i) for i in range(n)]


def _volume_task(rng: np.random.Generator, n_samples: int) -> Example:
    kind = str(rng.choice(["tone", "melody", "chord", "noise"]))
    if kind == "noise":
        wav, params = _draw_noise(rng, n_samples)
    else:
        wav, params = render(_HARMONIC[kind](rng, n_samples), n_samples), {}
    gain_db = int(rng.integers(1, 16)) * int(rng.choice([-1, 1]))
    return _volume_example(rng, wav, gain_db, volume_instruction(gain_db, rng), kind=kind, **params)


def _pitch_task(rng: np.random.Generator, n_samples: int) -> Example:
    kind = str(rng.choice(list(_HARMONIC)))
    sound = _HARMONIC[kind](rng, n_samples)
    semitones = int(rng.integers(1, 5)) * int(rng.choice([-1, 1]))
    return _pitch_example(rng, sound, n_samples, semitones, pitch_instruction(semitones, rng), kind=kind)


def _denoise_task(rng: np.random.Generator, n_samples: int) -> Example:
    kind = str(rng.choice(list(_HARMONIC)))
    clean = render(_HARMONIC[kind](rng, n_samples), n_samples)
    bed, params = _draw_noise(rng, n_samples)
    snr_db = float(rng.uniform(0.0, 20.0))
    return _denoise_example(rng, clean, bed, snr_db, denoise_instruction(rng), kind=kind, **params)


def _tone_task(rng: np.random.Generator, n_samples: int) -> Example:
    f0_hz = TONE_FREQS_HZ[rng.integers(len(TONE_FREQS_HZ))]
    return _tone_example(n_samples, f0_hz, tone_instruction(f0_hz, rng))


def _heldout_volume(rng: np.random.Generator, i: int) -> Example:
    n_samples = _heldout_n_samples(rng)
    sound = _heldout_tone(rng, n_samples)
    gain_db = HELDOUT_GAINS_DB[i // 2 % 3] * (1 if i % 2 == 0 else -1)
    wav = render(sound, n_samples)
    return _volume_example(rng, wav, gain_db, volume_instruction(gain_db), **_tone_params(sound))


def _heldout_pitch(rng: np.random.Generator, i: int) -> Example:
    n_samples = _heldout_n_samples(rng)
    sound = _heldout_tone(rng, n_samples)
    semitones = HELDOUT_SEMITONES[i // 2 % 3] * (1 if i % 2 == 0 else -1)
    instruction = pitch_instruction(semitones)
    return _pitch_example(rng, sound, n_samples, semitones, instruction, **_tone_params(sound))


def _heldout_denoise(rng: np.random.Generator, i: int) -> Example:
    n_samples = _heldout_n_samples(rng)
    sound = _heldout_tone(rng, n_samples)
    color = HELDOUT_NOISE_COLORS[i % 3]
    clean, bed = render(sound, n_samples), noise(rng, n_samples, color)
    instruction = denoise_instruction()
    params = {"noise": color, "band_hz": None, **_tone_params(sound)}
    return _denoise_example(rng, clean, bed, HELDOUT_SNR_DB, instruction, **params)


def _heldout_tone_generation(rng: np.random.Generator, i: int) -> Example:
    low, high = (round(s * SAMPLE_RATE / HOP) for s in HELDOUT_SECONDS)  # 100..150 hops
    f0_hz = TONE_FREQS_HZ[i % len(TONE_FREQS_HZ)]
    return _tone_example(int(rng.integers(low, high + 1)) * HOP, f0_hz, tone_instruction(f0_hz))


def _volume_example(
    rng: np.random.Generator, wav: np.ndarray, gain_db: int, instruction: str, **params
) -> Example:
    """Peak drawn so that source and target both stay in PEAK_RANGE_DB: +15 dB starts
    at or below -15.45 dBFS, -15 dB at or above -15 dBFS."""
    peak = _draw_peak(rng, headroom_db=max(gain_db, 0), footroom_db=max(-gain_db, 0))
    (source,) = _scale_to_peak([wav], peak)
    target = source * np.float32(10 ** (gain_db / 20))
    return Example("volume", instruction, source, target, {"gain_db": gain_db, **params})


def _pitch_example(
    rng: np.random.Generator,
    sound: HarmonicSound,
    n_samples: int,
    semitones: int,
    instruction: str,
    **params,
) -> Example:
    """Source and target share one scale factor, fitted to the louder of the two (a longer
    or shorter sweep of the same waveform can peak a little differently)."""
    wavs = [render(sound, n_samples), render(sound, n_samples, 2 ** (semitones / 12))]
    source, target = _scale_to_peak(wavs, _draw_peak(rng))
    return Example("pitch", instruction, source, target, {"semitones": semitones, **params})


def _denoise_example(
    rng: np.random.Generator,
    clean: np.ndarray,
    bed: np.ndarray,
    snr_db: float,
    instruction: str,
    **params,
) -> Example:
    """Waveform SNR over the whole clip: 10·log10(Σ clean² / Σ noise²) = ``snr_db``; one
    scale factor for mix and clean keeps it."""
    scaled_bed = bed * np.sqrt(np.mean(clean**2)) / 10 ** (snr_db / 20)  # bed is unit RMS
    source, target = _scale_to_peak([clean + scaled_bed, clean], _draw_peak(rng))
    return Example("denoise", instruction, source, target, {"snr_db": snr_db, **params})


def _tone_example(n_samples: int, f0_hz: int, instruction: str) -> Example:
    target = (TONE_PEAK * sine(f0_hz, n_samples, 0.0)).astype(np.float32)
    return Example("tone", instruction, None, target, {"f0_hz": f0_hz})


def _draw_noise(rng: np.random.Generator, n_samples: int) -> tuple[np.ndarray, dict]:
    """A noise bed of any colour; 30 % band-limited to [low, low·2..16] with low 50..2000 Hz."""
    color = str(rng.choice(list(NOISE_EXPONENTS)))
    band_hz = None
    if rng.random() < 0.3:
        low = float(50 * 40 ** rng.random())  # log-uniform 50..2000 Hz
        band_hz = (low, float(min(low * rng.uniform(2, 16), 10_000.0)))
    return noise(rng, n_samples, color, band_hz), {"noise": color, "band_hz": band_hz}


def _draw_n_samples(
    rng: np.random.Generator, seconds: float | tuple[float, float], hop_aligned: float
) -> int:
    low, high = (seconds, seconds) if np.isscalar(seconds) else seconds
    n_samples = int(rng.integers(round(low * SAMPLE_RATE), round(high * SAMPLE_RATE) + 1))
    if rng.random() < hop_aligned:
        n_samples = max(HOP, n_samples // HOP * HOP)
    return n_samples


def _draw_peak(rng: np.random.Generator, headroom_db: float = 0.0, footroom_db: float = 0.0) -> float:
    low, high = PEAK_RANGE_DB
    return 10 ** (rng.uniform(low + footroom_db, high - headroom_db) / 20)


def _scale_to_peak(wavs: list[np.ndarray], peak: float) -> list[np.ndarray]:
    """Scale all by one factor so the loudest peaks at ``peak``; float32."""
    scale = peak / max(np.max(np.abs(wav)) for wav in wavs)
    return [(wav * scale).astype(np.float32) for wav in wavs]


def _heldout_n_samples(rng: np.random.Generator) -> int:
    low, high = (round(s * SAMPLE_RATE) for s in HELDOUT_SECONDS)
    return int(rng.integers(low, high + 1))


def _heldout_tone(rng: np.random.Generator, n_samples: int) -> HarmonicSound:
    return draw_tone(rng, n_samples, HELDOUT_F0_RANGE_HZ, HELDOUT_PARTIAL_RANGE)


def _tone_params(sound: HarmonicSound) -> dict:
    return {"kind": "tone", "f0_hz": float(sound.f0_hz[0, 0]), "n_partials": sound.amplitudes.size}


_HARMONIC = {"tone": draw_tone, "melody": draw_melody, "chord": draw_chord}
_TRAINING_TASKS = {"volume": _volume_task, "pitch": _pitch_task, "denoise": _denoise_task, "tone": _tone_task}
_HELDOUT_FAMILIES = {
    "volume": _heldout_volume,
    "pitch": _heldout_pitch,
    "denoise": _heldout_denoise,
    "tone": _heldout_tone_generation,
}
