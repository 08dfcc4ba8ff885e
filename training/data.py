"""Training triples (source, instruction, target) for four tasks, and the held-out clips.

Tasks: ``volume`` (target = source × gain, exactly), ``pitch`` (the same sound re-rendered at
f0·2^(k/12); speech has no such rendering, so a speech pitch example has no target and the
trainer shifts the source's encoded F0 itself), ``denoise`` (source = clean + noise, target =
clean) and ``tone`` (text only: a sine from TONE_FREQS_HZ). About SPEECH_SHARE of the audio
tasks' sources are espeak-ng speech (training/speech.py), the rest procedural sounds. Edits
keep the sample count. Audio is float32 mono at 24 kHz and no source or target peaks above
PEAK_MAX.

Seed spaces: every Generator comes from SeedSequence entropy whose first word names its space,
``[TRAIN_SPACE, seed, index]`` (`training_rng`) or ``[HELDOUT_SPACE, family, seed, index]``
(`heldout_rng`). The entropy of the two spaces differs for every choice of seeds, so no
held-out clip is drawn from a training seed, provided training builds its Generators with
`training_rng` (as `ProceduralDataset` does). Held-out speech also says only held-out
sentences (see training/speech.py).
"""

from dataclasses import dataclass

import numpy as np

from auk_app.config import HOP
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
from training.speech import speech_clip

TASKS = ("volume", "pitch", "denoise", "tone")
MATERIALS = ("tone", "speech")  # held-out material: harmonic tones or espeak-ng speech
SPEECH_SHARE = 0.45  # of volume, pitch and denoise sources
TRAIN_SPACE = 0
HELDOUT_SPACE = 1
PEAK_MAX = 0.95
# -30 .. -0.45 dBFS: 29.5 dB of level variety, so a ±15 dB edit still has 14.5 dB to place its source
PEAK_RANGE_DB = (-30.0, 20 * np.log10(PEAK_MAX))
# Text-to-tone vocabulary: the frequencies the app's examples and the held-out bar use.
TONE_FREQS_HZ = tuple(range(200, 701, 50))  # 200 .. 700 Hz, 11 tones
TONE_PEAK = 0.5  # -6 dBFS and phase 0: the text fixes the tone completely

HELDOUT_SECONDS = {"tone": (2.0, 3.0), "speech": (2.0, 6.0)}
HELDOUT_F0_RANGE_HZ = (150.0, 700.0)
HELDOUT_PARTIAL_RANGE = (3, 5)
HELDOUT_GAINS_DB = {"tone": (6, 12), "speech": (6,)}
HELDOUT_SEMITONES = {"tone": (2, 4), "speech": (2,)}
HELDOUT_SNR_DB = 5.0
HELDOUT_NOISE = "white"


@dataclass(frozen=True, eq=False)
class Example:
    """One triple. ``source`` is None for text-only tasks; ``target`` is None for speech pitch
    examples (no audio target exists: the trainer shifts the encoded source's F0 by
    params["semitones"], and the score measures F0 of source and output). ``params`` records
    what was drawn (gain_db, semitones, snr_db, f0_hz, sound kind, ...) for tests and measures;
    held-out cases add their ``material`` and ``condition`` (the bar's row, e.g. "±6 dB")."""

    task: str
    instruction: str
    source: np.ndarray | None
    target: np.ndarray | None
    params: dict

    @property
    def n_samples(self) -> int:
        """The output length: the target's, or the source's when there is no target."""
        return (self.source if self.target is None else self.target).size

    @property
    def seconds(self) -> float:
        """The duration to request: for a whole-hop target one the pipeline turns into exactly its
        frames (``ceil(s · 24000 / 480)`` makes 2.24 s 113 frames), else the plain length."""
        frames, leftover = divmod(self.n_samples, HOP)
        return seconds_for_frames(frames) if leftover == 0 else self.n_samples / SAMPLE_RATE


def training_rng(seed: int, index: int) -> np.random.Generator:
    """Generator for training item ``index`` of stream ``seed`` (both non-negative)."""
    return np.random.default_rng([TRAIN_SPACE, seed, index])


def heldout_rng(family: str, seed: int, index: int, material: str = "tone") -> np.random.Generator:
    """Generator for held-out clip ``index`` of ``family`` and ``material``; never equal to a training one."""
    return np.random.default_rng([HELDOUT_SPACE, TASKS.index(family), MATERIALS.index(material), seed, index])


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


def heldout_cases(family: str, n: int, seed: int = 0, material: str = "tone") -> list[Example]:
    """``n`` evaluation clips for one family and material, with the bars' exact conditions.

    Tones: harmonic, 150..700 Hz with 3..5 partials, 2..3 s of any sample count, drawn like
    training tones (timbre, envelope, 30 % with vibrato) within those ranges. Speech: held-out
    sentences from any training voice, 2..6 s. Instructions word for word as the app writes
    them. Conditions go round-robin so 4 clips cover every one: volume ±6/±12 dB (speech ±6),
    pitch ±2/±4 semitones (speech ±2), denoise at exactly 5 dB SNR in white noise, and the
    tone family (tones only) through the 11 TONE_FREQS_HZ (lengths in whole hops, so the
    requested seconds give an exact sample count).
    """
    if (family, material) not in _HELDOUT_FAMILIES:
        raise ValueError(f"no held-out {material!r} clips for family {family!r}")
    draw = _HELDOUT_FAMILIES[family, material]
    return [draw(heldout_rng(family, seed, i, material), i, material) for i in range(n)]


def _volume_task(rng: np.random.Generator, n_samples: int) -> Example:
    wav, params = _draw_source(rng, n_samples, ("tone", "melody", "chord", "noise"))
    gain_db = int(rng.integers(1, 16)) * int(rng.choice([-1, 1]))
    return _volume_example(rng, wav, gain_db, volume_instruction(gain_db, rng), **params)


def _pitch_task(rng: np.random.Generator, n_samples: int) -> Example:
    semitones = int(rng.integers(1, 5)) * int(rng.choice([-1, 1]))
    instruction = pitch_instruction(semitones, rng)
    if rng.random() < SPEECH_SHARE:
        return _speech_pitch_example(rng, n_samples, semitones, instruction, "train")
    kind = str(rng.choice(list(_HARMONIC)))
    sound = _HARMONIC[kind](rng, n_samples)
    return _pitch_example(rng, sound, n_samples, semitones, instruction, kind=kind)


def _denoise_task(rng: np.random.Generator, n_samples: int) -> Example:
    clean, params = _draw_source(rng, n_samples, tuple(_HARMONIC))
    bed, noise_params = _draw_noise(rng, n_samples)
    snr_db = float(rng.uniform(0.0, 20.0))
    return _denoise_example(rng, clean, bed, snr_db, denoise_instruction(rng), **params, **noise_params)


def _tone_task(rng: np.random.Generator, n_samples: int) -> Example:
    f0_hz = TONE_FREQS_HZ[rng.integers(len(TONE_FREQS_HZ))]
    return _tone_example(n_samples, f0_hz, tone_instruction(f0_hz, rng))


def _draw_source(rng: np.random.Generator, n_samples: int, kinds: tuple[str, ...]) -> tuple[np.ndarray, dict]:
    """Training speech with probability SPEECH_SHARE, else one of ``kinds`` uniformly."""
    if rng.random() < SPEECH_SHARE:
        return speech_clip(rng, n_samples, "train")
    kind = str(rng.choice(kinds))
    if kind == "noise":
        wav, params = _draw_noise(rng, n_samples)
        return wav, {"kind": kind, **params}
    return render(_HARMONIC[kind](rng, n_samples), n_samples), {"kind": kind}


def _heldout_volume(rng: np.random.Generator, i: int, material: str) -> Example:
    wav, params = _heldout_source(rng, material)
    gains = HELDOUT_GAINS_DB[material]
    gain_db = gains[i // 2 % len(gains)] * (1 if i % 2 == 0 else -1)
    params.update(material=material, condition=f"±{abs(gain_db)} dB")
    return _volume_example(rng, wav, gain_db, volume_instruction(gain_db), **params)


def _heldout_pitch(rng: np.random.Generator, i: int, material: str) -> Example:
    n_samples = _heldout_n_samples(rng, material)
    steps = HELDOUT_SEMITONES[material]
    semitones = steps[i // 2 % len(steps)] * (1 if i % 2 == 0 else -1)
    instruction, labels = pitch_instruction(semitones), {"material": material, "condition": f"±{abs(semitones)} st"}
    if material == "speech":
        return _speech_pitch_example(rng, n_samples, semitones, instruction, "heldout", **labels)
    sound = _heldout_tone(rng, n_samples)
    return _pitch_example(rng, sound, n_samples, semitones, instruction, **_tone_params(sound), **labels)


def _heldout_denoise(rng: np.random.Generator, i: int, material: str) -> Example:
    clean, params = _heldout_source(rng, material)
    bed = noise(rng, clean.size, HELDOUT_NOISE)
    params.update(noise=HELDOUT_NOISE, band_hz=None, material=material,
                  condition=f"{HELDOUT_SNR_DB:g} dB SNR {HELDOUT_NOISE}")
    return _denoise_example(rng, clean, bed, HELDOUT_SNR_DB, denoise_instruction(), **params)


def _heldout_tone_generation(rng: np.random.Generator, i: int, material: str) -> Example:
    low, high = (round(s * SAMPLE_RATE / HOP) for s in HELDOUT_SECONDS[material])  # 100..150 hops
    f0_hz = TONE_FREQS_HZ[i % len(TONE_FREQS_HZ)]
    example = _tone_example(int(rng.integers(low, high + 1)) * HOP, f0_hz, tone_instruction(f0_hz))
    example.params.update(material=material, condition="sine")
    return example


def _heldout_source(rng: np.random.Generator, material: str) -> tuple[np.ndarray, dict]:
    """A held-out tone or a held-out speech clip, with its params."""
    n_samples = _heldout_n_samples(rng, material)
    if material == "speech":
        return speech_clip(rng, n_samples, "heldout")
    sound = _heldout_tone(rng, n_samples)
    return render(sound, n_samples), _tone_params(sound)


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


def _speech_pitch_example(
    rng: np.random.Generator, n_samples: int, semitones: int, instruction: str, split: str, **params
) -> Example:
    """Speech to shift: the source only (see `Example`)."""
    wav, speech_params = speech_clip(rng, n_samples, split)
    (source,) = _scale_to_peak([wav], _draw_peak(rng))
    return Example("pitch", instruction, source, None, {"semitones": semitones, **speech_params, **params})


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


def _heldout_n_samples(rng: np.random.Generator, material: str) -> int:
    low, high = (round(s * SAMPLE_RATE) for s in HELDOUT_SECONDS[material])
    return int(rng.integers(low, high + 1))


def _heldout_tone(rng: np.random.Generator, n_samples: int) -> HarmonicSound:
    return draw_tone(rng, n_samples, HELDOUT_F0_RANGE_HZ, HELDOUT_PARTIAL_RANGE)


def _tone_params(sound: HarmonicSound) -> dict:
    return {"kind": "tone", "f0_hz": float(sound.f0_hz[0, 0]), "n_partials": sound.amplitudes.size}


_HARMONIC = {"tone": draw_tone, "melody": draw_melody, "chord": draw_chord}
_TRAINING_TASKS = {"volume": _volume_task, "pitch": _pitch_task, "denoise": _denoise_task, "tone": _tone_task}
_HELDOUT_FAMILIES = {
    **{(family, material): draw for family, draw in (
        ("volume", _heldout_volume), ("pitch", _heldout_pitch), ("denoise", _heldout_denoise)
    ) for material in MATERIALS},
    ("tone", "tone"): _heldout_tone_generation,
}
