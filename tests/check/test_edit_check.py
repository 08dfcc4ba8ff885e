"""The edit check on real audio: espeak-ng speech and numpy tones and noise, edited by
known amounts with librosa and numpy, measured back within tolerance; wrong edits fail."""

from __future__ import annotations

import json
import re
import subprocess

import librosa
import numpy as np
import pytest
import soundfile as sf

from auk_app import instructions
from auk_app.audio_io import full_scale_samples
from auk_app.check import MEASURED, UNMEASURED, Clip, EditCheck, check, rank, target_from_text, target_of
from auk_app.config import Limits
from auk_app.dsp import resample
from auk_app.recognise import Recognised, recognise

RATE = 24000


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> np.ndarray:
    """Two seconds of espeak-ng speech at 24 kHz, its own silence at the ends trimmed off."""
    path = tmp_path_factory.mktemp("speech") / "speech.wav"
    subprocess.run(["espeak-ng", "-w", str(path), "Hello there, how are you today?"], check=True)
    wav, rate = sf.read(path, dtype="float32")
    wav = resample(wav, rate, RATE)
    start, end = Clip(wav, RATE).active
    return wav[start:end]


@pytest.fixture(scope="module")
def source(speech) -> Clip:
    """The speech as one measured Clip, shared by every check against it (pYIN runs once)."""
    return Clip(speech, RATE)


def gain(wav: np.ndarray, db: float) -> np.ndarray:
    return wav * np.float32(10 ** (db / 20))


def pitch_shifted(wav: np.ndarray, steps: float) -> np.ndarray:
    """librosa's pitch shift at the source's RMS level: its phase vocoder alone leaves espeak-ng speech
    3 to 4 dB quieter, which the check reports as an unasked level change."""
    shifted = librosa.effects.pitch_shift(wav, sr=RATE, n_steps=steps)
    return shifted * np.float32(np.sqrt(np.mean(wav**2) / np.mean(shifted**2)))


# ----------------------------------------------------------------------------- targets


@pytest.mark.parametrize("language", instructions.LANGUAGES)
@pytest.mark.parametrize(("key", "fields", "asked"), [
    ("volume", {"mode": "Decrease", "amount": "6"}, -6.0),
    ("volume", {"mode": "Increase", "amount": "10"}, 10.0),
    ("pitch", {"mode": "Lower", "amount": "2"}, -2.0),
    ("pitch", {"mode": "Raise", "amount": "3"}, 3.0),
    ("speed", {"amount": "1.5"}, 1.5),
    ("speed", {"amount": "0.75"}, 0.75),
])
def test_builder_templates_parse_back_to_their_fields_and_target(language, key, fields, asked):
    instruction = instructions.build(key, fields, source_seconds=3.0, limits=Limits(), language=language).instruction
    found = recognise(instruction)
    assert found.task == key and found.fields["amount"] == fields["amount"]
    assert target_of(found).asked == asked


def test_every_builder_task_is_measured_or_says_why_not():
    for key in instructions.TASKS_BY_KEY:
        for language in instructions.LANGUAGES:
            built = instructions.build(key, {"text": "hi", "original": "there"}, source_seconds=3.0, limits=Limits(), language=language)
            target = target_from_text(built.instruction)
            assert target.task in MEASURED or target.reason == UNMEASURED[key], (key, language)
    for mode in ("Remove noise", "Remove noise and reverberation"):
        assert target_of(Recognised("enhance", {"mode": mode})).task == "denoise"
    assert not target_of(Recognised("enhance", {"mode": "Remove reverberation"})).measurable


@pytest.mark.parametrize(("text", "task", "asked"), [
    ("Make it 6 dB quieter", "volume", -6.0),
    ("降低6分贝", "volume", -6.0),
    ("音量调大3分贝", "volume", 3.0),
    ("Turn it up by +4.5dB please", "volume", 4.5),
    ("Keep the pitch, make it 6 dB quieter", "volume", -6.0),
    ("raise the pitch by 2 semitones", "pitch", 2.0),
    ("Shift the pitch down two semitones.", "pitch", -2.0),
    ("升高两个半音", "pitch", 2.0),
    ("降低十二个半音", "pitch", -12.0),
    ("shift it by -300 cents", "pitch", -3.0),
    ("take it up an octave", "pitch", 12.0),
    ("speed up 1.5x", "speed", 1.5),
    ("slow down 2x", "speed", 0.5),
    ("make it 25% faster", "speed", 1.25),
    ("play it at half speed", "speed", 0.5),
    ("放慢到0.8倍", "speed", 0.8),
    ("Generate a 440 Hz sine tone.", "tone", 440.0),
    ("生成一个220赫兹的正弦波", "tone", 220.0),
    ("trim the silence", "trim", None),
    ("去掉开头和结尾的静音", "trim", None),
    ("Remove the background hiss", "denoise", None),
    ("请只去除背景噪声，保留其他内容，输出等长结果。", "denoise", None),
])
def test_free_text_targets_and_their_signs(text, task, asked):
    target = target_from_text(text)
    assert (target.task, target.asked, target.measurable) == (task, asked, True)


@pytest.mark.parametrize("text", ["Change the volume by 6 dB", "Make it sound warmer", "Add some noise"])
def test_free_text_without_a_target_or_a_direction_is_not_measured(text):
    target = target_from_text(text)
    assert not target.measurable and target.reason


# ----------------------------------------------------------------------------- right edits pass


def test_a_gain_is_measured_in_lufs_and_passes(speech, source):
    result = check("将音量降低6分贝。", source, gain(speech, -5.9), RATE)
    assert result.passed and abs(result.got - -5.9) < 0.05 and result.kept > 0.99
    assert result.display() == "asked −6 dB · got −5.9 dB ✓"
    assert "LUFS" in result.note


def test_a_clip_too_short_to_gate_falls_back_to_rms():
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(RATE // 4) / RATE)
    result = check("Make it 3 dB louder", tone, gain(tone, 3), RATE)
    assert result.passed and "RMS" in result.note and abs(result.got - 3) < 0.01


@pytest.mark.parametrize("steps", [2, -3])
def test_a_pitch_shift_is_measured_in_cents_and_passes(speech, source, steps):
    shifted = pitch_shifted(speech, steps)
    direction = "Raise" if steps > 0 else "Lower"
    result = check(f"{direction} the pitch by {abs(steps)} semitones.", source, shifted, RATE)
    assert result.passed and abs(result.got - 100 * steps) <= 20, result
    assert result.kept > 0.8
    sign = re.escape("+" if steps > 0 else "−")  # asked and got both in semitones, got to a tenth (pYIN's grid is 0.2)
    pattern = rf"asked {sign}{abs(steps)} semitones · got {sign}{abs(steps)}(\.\d)? semitones ✓"
    assert re.fullmatch(pattern, result.display()), result.display()


def test_asked_and_got_are_shown_in_the_same_unit():
    got_less = EditCheck("pitch", 200.0, 190.0, "cents", 50.0, True)
    assert got_less.display() == "asked +2 semitones · got +1.9 semitones ✓"
    assert EditCheck("pitch", -100.0, -96.0, "cents", 50.0, True).display() == "asked −1 semitone · got −1 semitone ✓"
    assert EditCheck("pitch", 150.0, 0.0, "cents", 50.0, False).display() == "asked +1.5 semitones · got +0 semitones ✗"


def test_a_time_stretch_is_measured_as_a_speed_factor_and_passes(speech, source):
    result = check("将语速调整为1.5倍。", source, librosa.effects.time_stretch(speech, rate=1.5), RATE)
    assert result.passed and abs(result.got - 1.5) < 0.05 and result.kept > 0.6, result


def test_trimmed_silence_passes_and_padded_silence_fails(speech):
    padded = np.pad(speech, (RATE, RATE // 2))
    assert check("trim the silence", padded, speech, RATE).passed
    kept_padding = check("trim the silence", padded, padded, RATE)
    assert not kept_padding.passed and kept_padding.got == pytest.approx(1.0, abs=0.02)


def test_removed_noise_passes_and_a_quieter_noisy_clip_fails(speech):
    noise = np.random.default_rng(0).normal(0, 0.01, speech.size).astype(np.float32)
    noisy = Clip(speech + noise, RATE)
    cleaned = check("Remove the background noise", noisy, speech + 0.01 * noise, RATE)
    assert cleaned.passed and cleaned.got > 20, cleaned
    assert not check("Remove the background noise", noisy, 0.5 * (speech + noise), RATE).passed


def test_a_generated_tone_is_measured_by_its_f0():
    tone = 0.5 * np.sin(2 * np.pi * 440 * np.arange(RATE) / RATE)
    assert check("Generate a 440 Hz sine tone.", None, tone, RATE).passed
    assert not check("Generate a 330 Hz sine tone.", None, tone, RATE).passed


# ----------------------------------------------------------------------------- wrong edits fail


def test_the_demos_chinese_volume_mistake_fails(speech, source):
    result = check("将音量降低6分贝。", source, gain(speech, 0.12), RATE)
    assert result.passed is False and result.display() == "asked −6 dB · got +0.1 dB ✗"


def test_the_demos_chinese_pitch_mistake_fails(speech, source):
    result = check("将音调降低2个半音。", source, pitch_shifted(speech, 2.7), RATE)
    assert result.passed is False and abs(result.got - 270) <= 20
    assert result.display().startswith("asked −2 semitones · got +2.") and result.display().endswith(" semitones ✗")


def test_a_right_level_with_the_source_lost_fails(speech, source):
    noise = np.random.default_rng(1).normal(0, 1, speech.size).astype(np.float32)
    noise *= np.float32(np.sqrt(np.mean(speech**2)) / np.sqrt(np.mean(noise**2)) * 10 ** (-6 / 20))
    result = check("Make it 6 dB quieter", source, noise, RATE)
    assert result.passed is False and result.kept < 0.5 and "kept" in result.display()


def test_a_speed_edit_that_changes_nothing_fails(speech, source):
    assert not check("speed up 1.5x", source, speech, RATE).passed


def test_a_result_that_clips_says_so_on_its_line(speech):
    loud = speech / np.abs(speech).max() * np.float32(0.9)
    louder = gain(loud, 3)  # right by the number, but the WAV holds its peaks at full scale
    at_full_scale = full_scale_samples(louder)
    assert at_full_scale > 10
    result = check("Increase the volume by 3 dB.", loud, louder, RATE)
    assert result.passed and result.clipped == at_full_scale
    assert result.display() == f"asked +3 dB · got +3 dB ✓ but clips: {at_full_scale:,} samples at full scale"
    assert result.to_manifest()["clipped"] == at_full_scale
    wrong = check("Increase the volume by 9 dB.", loud, louder, RATE)
    assert wrong.display().endswith(f"✗ and clips: {at_full_scale:,} samples at full scale")
    unmeasured = check("Change the emotion to happy.", loud, louder, RATE)
    assert unmeasured.display().endswith(f"; the result clips: {at_full_scale:,} samples at full scale")
    clean = check("Increase the volume by 3 dB.", loud, gain(loud, 0.5), RATE)
    assert clean.clipped == 0 and clean.display().endswith("✗")  # no clipping, nothing said


def test_rank_puts_a_clean_pass_before_a_closer_one_that_clips():
    closer_but_clipping = EditCheck("volume", 3.0, 3.0, "dB", 1.0, True, kept=1.0, clipped=120)
    clean = EditCheck("volume", 3.0, 2.4, "dB", 1.0, True, kept=1.0)
    failing = EditCheck("volume", 3.0, 0.0, "dB", 1.0, False, kept=1.0)
    assert rank([failing, closer_but_clipping, clean]) == [clean, closer_but_clipping, failing]


# ----------------------------------------------------------------------------- record and ranking


def test_unmeasurable_instructions_say_which_task_and_why(speech, source):
    result = check("Change the emotion to happy.", source, speech, RATE)
    assert result.passed is None and result.task == "emotion"
    assert result.display() == f"emotion: cannot be measured ({UNMEASURED['emotion']})"
    assert check("Make it 6 dB quieter", None, speech, RATE).passed is None


def test_the_manifest_entry_has_the_issue_keys_and_is_json():
    result = EditCheck("pitch", -200.0, 270.0, "cents", 50.0, False, kept=float("nan"))
    entry = result.to_manifest()
    assert {"task", "asked", "got", "unit", "tolerance", "pass"} <= entry.keys()
    assert entry["pass"] is False and entry["kept"] is None
    json.dumps(entry, allow_nan=False)
    assert result.display() == "asked −2 semitones · got +2.7 semitones ✗"


def test_rank_puts_passing_first_then_the_smaller_error_then_the_most_kept():
    def volume(got, kept, passed=None):
        return EditCheck("volume", -6.0, got, "dB", 1.0, abs(got + 6) <= 1 if passed is None else passed, kept=kept)

    close_but_changed, close, further, wrong = volume(-6.02, 0.9), volume(-6.0, 1.0), volume(-6.6, 1.0), volume(-3, 1.0)
    unmeasured = EditCheck("emotion", None, None, "", None, None, "why")
    assert rank([unmeasured, wrong, further, close_but_changed, close]) == [
        close, close_but_changed, further, wrong, unmeasured]


def test_candidates_rank_by_their_measured_checks(speech, source):
    candidates = [gain(speech, db) for db in (0.12, -6.4, -5.9, -9.0)]
    checks = [check("将音量降低6分贝。", source, wav, RATE) for wav in candidates]
    assert [round(c.got, 1) for c in rank(checks)] == [-5.9, -6.4, -9.0, 0.1]
