"""The source speaker's pace (``auk_app.pace``) on real speech: espeak-ng says sentences at three
rates, and the pace measured on one sentence times other sentences by the same speaker, where the
fixed bytes-per-second rate does not follow the speaker. Syllable counts are checked against
espeak-ng's own phonemes."""

from __future__ import annotations

import io
import re
import subprocess

import numpy as np
import pytest
import soundfile as sf

from auk_app.config import Limits
from auk_app.instructions import build, speech_seconds
from auk_app.pace import count_syllables, speaking_rate, voiced_seconds

SOURCE = "Every morning the old fisherman walked slowly down to the harbour to check his nets."
OTHERS = (  # what the same speaker then says: the new text to time
    "Please remember to switch off the lights before you leave the building tonight.",
    "Our train was delayed by almost an hour because of the heavy snow.",
    "Nobody expected the quiet student to win the national chess championship.",
)


def espeak(text: str, wpm: int = 175) -> tuple[np.ndarray, int]:
    out = subprocess.run(["espeak-ng", "-v", "en-us", "-s", str(wpm), "--stdout", text],
                         capture_output=True, check=True).stdout
    wav, rate = sf.read(io.BytesIO(out), dtype="float32")
    return wav, rate


def espeak_syllables(text: str) -> int:
    """Syllables as espeak-ng pronounces ``text``: its vowel phonemes (diphthongs as one)."""
    phonemes = subprocess.run(["espeak-ng", "-q", "-x", text], capture_output=True, text=True, check=True).stdout
    return len(re.findall(r"[aAeEiIoOuUV@03]+", phonemes))


@pytest.mark.parametrize("text", [SOURCE, *OTHERS, "She bought three oranges and some fresh vegetables."])
def test_english_syllables_match_espeaks_pronunciation(text):
    assert abs(count_syllables(text) - espeak_syllables(text)) <= 0.1 * espeak_syllables(text)


def test_syllables_in_chinese_digits_and_word_endings():
    assert count_syllables("今天天气很好。") == 6  # one per character, punctuation none
    assert count_syllables("Call 911") == 1 + 3 and count_syllables("") == 0
    assert [count_syllables(w) for w in ("make", "makes", "jumped", "wanted", "boxes", "table", "free", "the")] == [
        1, 1, 1, 2, 2, 2, 1, 1]


def test_voiced_time_leaves_out_silence_and_pauses_but_not_short_gaps():
    wav, rate = espeak(SOURCE)
    voiced = voiced_seconds(wav, rate)
    silence = np.zeros(rate, dtype=np.float32)
    assert voiced_seconds(np.concatenate([silence, wav, silence]), rate) == pytest.approx(voiced, abs=0.02)
    half = wav.size // 2
    paused = np.concatenate([wav[:half], silence, wav[half:]])  # a 1 s pause mid-sentence
    assert voiced_seconds(paused, rate) == pytest.approx(voiced, abs=0.1)
    gapped = np.concatenate([wav[:half], silence[: rate // 10], wav[half:]])  # 0.1 s: a gap inside speech
    assert voiced_seconds(gapped, rate) == pytest.approx(voiced + 0.1, abs=0.04)
    assert voiced_seconds(silence, rate) == 0.0


def test_voiced_time_holds_in_a_noisy_clip():
    wav, rate = espeak(SOURCE)
    silence = np.zeros(rate, dtype=np.float32)
    padded = np.concatenate([silence, wav, silence])
    noise = np.random.default_rng(0).normal(0, 1, padded.size).astype(np.float32)
    noisy = padded + noise * np.float32(np.sqrt(np.mean(wav**2)) * 10 ** (-20 / 20))  # 20 dB SNR
    assert voiced_seconds(noisy, rate) == pytest.approx(voiced_seconds(wav, rate), rel=0.1)


@pytest.mark.parametrize("wpm", [90, 175, 240])
def test_the_measured_pace_times_new_sentences_by_the_same_speaker(wpm):
    pace = speaking_rate(SOURCE, voiced_seconds(*espeak(SOURCE, wpm)))
    for text in OTHERS:
        actual = voiced_seconds(*espeak(text, wpm))
        assert pace.seconds_for(text) == pytest.approx(actual, rel=0.12), text
        if wpm != 175:  # a slow or a fast speaker: the fixed rate (about 120 words a minute) misses by far more
            assert abs(speech_seconds(text) - actual) > 2 * abs(pace.seconds_for(text) - actual)


def test_no_pace_without_enough_words_or_voice():
    assert speaking_rate("", 3.0) is None and speaking_rate("hi", 3.0) is None
    assert speaking_rate(SOURCE, None) is None and speaking_rate(SOURCE, 0.2) is None


def test_the_builder_times_new_words_at_the_clips_pace_where_it_is_known():
    wav, rate = espeak(SOURCE, 240)
    voiced, seconds = voiced_seconds(wav, rate), wav.size / rate
    new = OTHERS[0]
    paced = build("zero_shot_tts", {"text": new, "original": SOURCE}, source_seconds=seconds, limits=Limits(),
                  voiced_seconds=voiced)
    pace = speaking_rate(SOURCE, voiced)
    assert paced.pace == pace and paced.duration.seconds == pytest.approx(pace.seconds_for(new), abs=0.02)
    assert "syllables/s" in paced.duration.reason and paced.instruction.endswith(f'"{new}"')
    fixed = build("zero_shot_tts", {"text": new}, source_seconds=seconds, limits=Limits(), voiced_seconds=voiced)
    assert fixed.pace is None and fixed.duration.seconds == pytest.approx(speech_seconds(new), abs=0.02)
    edit = build("content_edit", {"mode": "Replace", "original": "old fisherman", "text": "young fisherwoman"},
                 source_seconds=seconds, limits=Limits(), voiced_seconds=voiced, transcript=SOURCE)
    delta = pace.seconds_for("young fisherwoman") - pace.seconds_for("old fisherman")
    assert edit.pace == pace and edit.duration.seconds == pytest.approx(seconds + delta, abs=0.02)
    volume = build("volume", {}, source_seconds=seconds, limits=Limits(), voiced_seconds=voiced, transcript=SOURCE)
    assert volume.pace is None and volume.duration.seconds == 0  # same-length tasks are not paced


def test_a_whole_recording_longer_than_a_clip_has_its_voiced_time(tmp_path):
    """Read under a whole recording's limits, as the upload check reads it: a 40 s file has a pace."""
    from auk_app.service import Studio, StudioConfig
    from auk_app.ui.handlers import Handlers

    wav, rate = espeak("The quick brown fox jumps over the lazy dog near the river bank.")
    long = np.concatenate([wav, np.zeros(rate, np.float32)] * (1 + int(40 * rate / (wav.size + rate))))
    path = tmp_path / "long.wav"
    sf.write(path, long, rate)
    assert long.size / rate > Limits().max_input_seconds
    _, _, voiced, _ = Handlers(Studio(StudioConfig(device="cpu"))).on_audio_change(str(path))
    assert voiced is not None and 0.5 * long.size / rate < voiced < long.size / rate
