"""Real English speech at 24 kHz from espeak-ng, offline and seeded.

Sentences are procedural ("The quiet farmer paints the old bridge near the river."). Their
subject and object nouns come from one of two disjoint lists, so every held-out sentence holds
a noun no training sentence has: held-out speech never repeats a training sentence. A clip is
one speaker (language, variant, rate and pitch drawn once) saying sentences with short gaps
until it is long enough, then cut to the exact sample count.

espeak-ng runs as a subprocess (about 20-50 ms a sentence); synthesis is cached in-process
because training asks for thousands of clips. Random draws take a caller's Generator.
"""

import functools
import io
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np
import soundfile as sf

from auk_app import jit_cache
from training.sounds import SAMPLE_RATE

librosa = jit_cache.librosa()

ESPEAK = "espeak-ng"
LANGUAGES = ("en-us", "en", "en-gb-scotland", "en-029")  # American, British, Scottish, Caribbean
VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4")
RATE_RANGE_WPM = (120, 200)
PITCH_RANGE = (30, 70)  # espeak-ng's -p, 0..99 around the variant's own base pitch
GAP_RANGE_S = (0.1, 0.4)  # pause between sentences
LEAD_RANGE_S = (0.0, 0.2)  # silence before the first word
TRIM_TOP_DB = 50  # what counts as the silence espeak-ng leaves around an utterance
FADE_S = 0.01  # a cut mid-word ends on a fade, not a click

ADJECTIVES = ("quiet", "tall", "young", "old", "bright", "tired", "clever", "gentle", "busy", "little",
              "happy", "brave", "careful", "lonely", "proud", "silent")
VERBS = ("paints", "finds", "carries", "watches", "follows", "builds", "cleans", "opens", "visits",
         "draws", "moves", "reaches", "fixes", "counts", "holds", "leaves")
PLACES = ("near the river", "before dinner", "in the morning", "after the storm", "on the hill",
          "by the station", "at the market", "under the trees", "across the field", "in the park")
NOUNS = {
    "train": ("farmer", "teacher", "sailor", "doctor", "painter", "baker", "driver", "singer", "pilot",
              "student", "gardener", "captain", "bridge", "window", "basket", "letter", "garden", "lantern",
              "wagon", "ladder", "engine", "mirror", "blanket", "castle"),
    "heldout": ("miner", "tailor", "nurse", "hunter", "dancer", "writer", "kettle", "carpet", "pocket",
                "candle", "saddle", "rocket"),
}


@dataclass(frozen=True)
class Voice:
    """One speaker: espeak-ng ``-v language+variant -s rate -p pitch``."""

    language: str
    variant: str
    rate_wpm: int
    pitch: int


def draw_voice(rng: np.random.Generator) -> Voice:
    return Voice(
        language=str(rng.choice(LANGUAGES)),
        variant=str(rng.choice(VARIANTS)),
        rate_wpm=int(rng.integers(RATE_RANGE_WPM[0], RATE_RANGE_WPM[1] + 1)),
        pitch=int(rng.integers(PITCH_RANGE[0], PITCH_RANGE[1] + 1)),
    )


def draw_sentence(rng: np.random.Generator, split: str) -> str:
    """A sentence whose two nouns come from ``split``'s list ("train" or "heldout")."""
    nouns = NOUNS[split]
    subject, thing = (nouns[i] for i in rng.choice(len(nouns), size=2, replace=False))
    adjective, other, verb, place = (str(rng.choice(words)) for words in (ADJECTIVES, ADJECTIVES, VERBS, PLACES))
    return f"The {adjective} {subject} {verb} the {other} {thing} {place}."


def speech_clip(rng: np.random.Generator, n_samples: int, split: str) -> tuple[np.ndarray, dict]:
    """One speaker saying ``split`` sentences, exactly ``n_samples`` long and peaking at 1;
    float64, with params (kind, voice, text) for tests and measures."""
    voice = draw_voice(rng)
    parts, sentences = [np.zeros(_samples(rng.uniform(*LEAD_RANGE_S)))], []
    while sum(part.size for part in parts) < n_samples:
        sentences.append(draw_sentence(rng, split))
        parts += [synthesize(sentences[-1], voice), np.zeros(_samples(rng.uniform(*GAP_RANGE_S)))]
    wav = np.concatenate(parts)[:n_samples]
    fade = min(_samples(FADE_S), n_samples)
    wav[n_samples - fade:] *= np.linspace(1.0, 0.0, fade)
    params = {"kind": "speech", "voice": f"{voice.language}+{voice.variant}", "rate_wpm": voice.rate_wpm,
              "pitch": voice.pitch, "text": " ".join(sentences)}
    return wav / np.max(np.abs(wav)), params


@functools.lru_cache(maxsize=4096)
def synthesize(text: str, voice: Voice) -> np.ndarray:
    """``text`` spoken by ``voice`` at 24 kHz, silence trimmed; float64, read-only (it is cached)."""
    if shutil.which(ESPEAK) is None:
        raise RuntimeError(f"{ESPEAK} is not installed; speech clips need it: apt-get install espeak-ng")
    command = [ESPEAK, "-v", f"{voice.language}+{voice.variant}", "-s", str(voice.rate_wpm),
               "-p", str(voice.pitch), "--stdout", text]
    wav, rate = sf.read(io.BytesIO(subprocess.run(command, capture_output=True, check=True).stdout))
    wav = librosa.resample(wav, orig_sr=rate, target_sr=SAMPLE_RATE, res_type="soxr_hq")
    wav, _ = librosa.effects.trim(wav, top_db=TRIM_TOP_DB)
    wav.flags.writeable = False
    return wav


def _samples(seconds: float) -> int:
    return round(seconds * SAMPLE_RATE)
