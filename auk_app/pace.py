"""A speaker's pace: syllables per second of voiced time, from what a clip says and the clip itself.

New words (zero-shot TTS, word edits) take as long as the reference speaker would take to say
them: the transcript's syllables over the clip's voiced time give the rate, and a new text's
syllables over that rate give its length. Syllables, not bytes or words, because they are what
takes time to say in both languages: a Chinese character is one, an English word one to several.

Voiced time is the clip's speech without its pauses: 20 ms frames above an energy floor, from
the first such frame to the last, less every quieter stretch of PAUSE_SECONDS or more (the usual
threshold between a pause and the gaps inside words, such as a stop's closure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import groupby

import numpy as np

FRAME_SECONDS = 0.02
PAUSE_SECONDS = 0.25
SPEECH_RANGE_DB = 30.0  # a frame this far under the clip's loud level (its 95th percentile) is not speech…
NOISE_MARGIN_DB = 6.0  # …nor one within this of its noise floor (its 10th percentile), in a noisy clip
MIN_VOICED_SECONDS = 0.5  # less voiced time than this gives no rate worth trusting
MIN_SYLLABLES = 2

_CJK = r"\u3400-\u9fff\uf900-\ufaff"
_KANA = r"\u3040-\u30ff"
_TOKEN = re.compile(rf"[{_CJK}{_KANA}]|\d|[a-z]+(?:'[a-z]+)*")
# Digits are read one by one ("9" nine, "2024" two-zero-two-four): a rough reading of numbers,
# which a transcript rarely holds many of.
_DIGIT_SYLLABLES = {"0": 2, "1": 1, "2": 1, "3": 1, "4": 1, "5": 1, "6": 1, "7": 2, "8": 1, "9": 1}
_VOWEL_GROUPS = re.compile(r"[aeiouy]+")
# A final e is silent after a consonant ("make"), and so is the e of -es and -ed except after the
# sounds that need it ("makes", "jumped"; but "boxes", "places", "wanted"); "-le" after a
# consonant is a syllable of its own ("table", "tables").
_SILENT_E = re.compile(r"[^aeiouy]e$|[^aeiouysxzcg]es$|[^aeiouytd]ed$")
_SYLLABIC_LE = re.compile(r"[^aeiouy]les?$")


def count_syllables(text: str) -> int:
    """Syllables of ``text``: one per Chinese character or kana, one or more per English word (its
    vowel groups, less a silent final e and the silent e of -es and -ed), one or two per digit."""
    total = 0
    for token in _TOKEN.findall((text or "").lower()):
        if token.isdigit():
            total += _DIGIT_SYLLABLES[token]
        elif token.isascii():
            total += _english_syllables(token)
        else:
            total += 1
    return total


def _english_syllables(word: str) -> int:
    word = word.replace("'", "")
    count = len(_VOWEL_GROUPS.findall(word))
    if count > 1 and _SILENT_E.search(word) and not _SYLLABIC_LE.search(word):
        count -= 1
    return max(count, 1)


def voiced_seconds(wav: np.ndarray, sample_rate: int) -> float:
    """Seconds of speech in a mono clip, pauses left out (see the module's docstring); 0 if silent."""
    wav = np.asarray(wav, dtype=np.float64).reshape(-1)
    frame = max(1, round(sample_rate * FRAME_SECONDS))
    n = wav.size // frame
    if n == 0:
        return 0.0
    power = np.mean(wav[: n * frame].reshape(n, frame) ** 2, axis=1)
    if not np.any(power):
        return 0.0
    levels = 10 * np.log10(np.maximum(power, 1e-20))
    loud, floor = np.percentile(levels, 95), np.percentile(levels, 10)
    speech = levels > max(loud - SPEECH_RANGE_DB, min(floor + NOISE_MARGIN_DB, loud - NOISE_MARGIN_DB))
    first, last = np.flatnonzero(speech)[[0, -1]]
    runs = [(is_speech, len(list(run))) for is_speech, run in groupby(speech[first:last + 1])]
    pause = round(PAUSE_SECONDS / FRAME_SECONDS)
    return sum(n for is_speech, n in runs if is_speech or n < pause) * FRAME_SECONDS


@dataclass(frozen=True)
class SpeakingRate:
    """A speaker's pace: ``syllables`` said in ``voiced_seconds`` of speech."""

    syllables: int
    voiced_seconds: float

    @property
    def per_second(self) -> float:
        return self.syllables / self.voiced_seconds

    def seconds_for(self, text: str) -> float:
        """How long ``text`` takes at this pace."""
        return count_syllables(text) / self.per_second

    def describe(self) -> str:
        return (f"the clip's pace, {self.per_second:.1f} syllables/s "
                f"({self.syllables} syllables in {self.voiced_seconds:.2f} s of speech)")

    def to_manifest(self) -> dict:
        return {"syllables": self.syllables, "voiced_seconds": round(self.voiced_seconds, 3),
                "syllables_per_second": round(self.per_second, 3)}


def speaking_rate(transcript: str, voiced: float | None) -> SpeakingRate | None:
    """The pace of a clip that says ``transcript`` in ``voiced`` seconds of speech (from
    :func:`voiced_seconds`); None when either is too small to trust or not known."""
    syllables = count_syllables(transcript)
    if voiced is None or voiced < MIN_VOICED_SECONDS or syllables < MIN_SYLLABLES:
        return None
    return SpeakingRate(syllables, voiced)
