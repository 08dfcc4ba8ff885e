"""Instruction texts per task: the AuK cookbook's template first, then paraphrases.

Training uses the first template word for word half of the time (``EXACT_SHARE``), because
the bars are measured with exactly that wording ("Raise the pitch by 1 semitones." included),
and a paraphrase otherwise so the text encoder sees more than one phrasing (numbers as digits
or, for pitch, as words: "Shift the pitch up two semitones."). Held-out clips call
these functions without a Generator and always get the first template.
"""

import numpy as np

EXACT_SHARE = 0.5

VOLUME_UP = (
    "Increase the volume by {db} dB.",
    "Make it {db} dB louder.",
    "Turn the volume up by {db} dB.",
    "Boost the level by {db} dB.",
    "Make it louder by {db} dB.",
)
VOLUME_DOWN = (
    "Decrease the volume by {db} dB.",
    "Make it {db} dB quieter.",
    "Turn the volume down by {db} dB.",
    "Reduce the level by {db} dB.",
    "Make it quieter by {db} dB.",
)
# The AuK template keeps "semitones" even for 1; paraphrases use the singular where it fits.
PITCH_UP = (
    "Raise the pitch by {n} semitones.",
    "Shift the pitch up by {n} {unit}.",
    "Transpose it up by {n} {unit}.",
    "Make it {n} {unit} higher.",
    "Shift the pitch up {word} {unit}.",
)
PITCH_DOWN = (
    "Lower the pitch by {n} semitones.",
    "Shift the pitch down by {n} {unit}.",
    "Transpose it down by {n} {unit}.",
    "Make it {n} {unit} lower.",
    "Shift the pitch down {word} {unit}.",
)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
DENOISE = (
    "Remove only the background noise, preserve everything else, and output audio of the same length.",
    "Remove the background noise and keep everything else.",
    "Clean up the noise in this audio without changing its length.",
    "Denoise this clip and leave the rest untouched.",
)
TONE = (
    "Generate a {hz} Hz sine tone.",
    "Create a pure {hz} Hz tone.",
    "Make a sine wave at {hz} Hz.",
    "Produce a {hz} Hz sine wave.",
)


def volume_instruction(gain_db: int, rng: np.random.Generator | None = None) -> str:
    """Text for a signed whole-dB gain: +6 → "Increase the volume by 6 dB."."""
    templates = VOLUME_UP if gain_db > 0 else VOLUME_DOWN
    return _pick(templates, rng).format(db=abs(gain_db))


def pitch_instruction(semitones: int, rng: np.random.Generator | None = None) -> str:
    """Text for a signed whole-semitone shift: -2 → "Lower the pitch by 2 semitones."."""
    templates = PITCH_UP if semitones > 0 else PITCH_DOWN
    n = abs(semitones)
    word = NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)
    return _pick(templates, rng).format(n=n, word=word, unit="semitone" if n == 1 else "semitones")


def denoise_instruction(rng: np.random.Generator | None = None) -> str:
    return _pick(DENOISE, rng)


def tone_instruction(f0_hz: int, rng: np.random.Generator | None = None) -> str:
    """Text for an integer frequency: 440 → "Generate a 440 Hz sine tone."."""
    return _pick(TONE, rng).format(hz=f0_hz)


def _pick(templates: tuple[str, ...], rng: np.random.Generator | None) -> str:
    if rng is None or rng.random() < EXACT_SHARE:
        return templates[0]
    return templates[rng.integers(1, len(templates))]
