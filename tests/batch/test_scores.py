"""The batch's scores against values computed by hand on synthetic clips: a tone made 6 dB louder,
a clip stretched by a known factor, a tone shifted by a known interval, a known noise floor, a
transcript with one word too many, and the speaker encoder on one voice and on two."""

from __future__ import annotations

import math

import numpy as np
import pytest

from auk_app.batch import scores, speaker
from auk_app.check import Target

RATE = 24_000


def tone(hz: float, seconds: float = 2.0, peak: float = 0.1) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (peak * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_a_tone_made_6_db_louder_has_no_amplitude_error_and_a_change_of_6_db():
    source = tone(440)
    gain = 10 ** (6 / 20)
    got = scores.volume_scores(source, source * np.float32(gain), gain)
    # A = mean |x| of a sine of peak 0.1 is 0.1 · 2/π over whole periods (440 Hz: 880 in 2 s).
    assert got["amplitude_src"] == pytest.approx(0.1 * 2 / math.pi, rel=1e-4)
    assert got["aae"] == pytest.approx(0.0, abs=1e-6) and got["rae"] == pytest.approx(0.0, abs=1e-5)
    assert got["change_db"] == pytest.approx(6.0, abs=1e-4) and got["db_error"] == pytest.approx(0.0, abs=1e-4)
    # Asked 6 dB, got none: AAE = |A − 2A| = A (gain 1.995), RAE = 0.995, 6 dB short.
    same = scores.volume_scores(source, source, gain)
    assert same["rae"] == pytest.approx(gain - 1, rel=1e-4) and same["db_error"] == pytest.approx(-6.0, abs=1e-4)


def test_a_clip_stretched_by_a_known_factor_has_the_duration_errors_of_their_definitions():
    # Asked twice as fast from 2 s: target 1 s. A result of 1.25 s misses by 0.25 s, 12.5 % of the source.
    got = scores.speed_scores(2.0, 1.25, 2.0, None)
    assert got["ade"] == pytest.approx(0.25) and got["rde"] == pytest.approx(0.125)
    assert got["duration_ratio"] == pytest.approx(0.625) and got["speed_pass"] is True
    exact = scores.speed_scores(2.0, 1.0, 2.0, None)
    assert exact["ade"] == pytest.approx(0.0)
    # SpeechEditBench's pass: at least 5 % shorter for faster, 5 % longer for slower, by the ratio alone.
    assert scores.speed_scores(2.0, 1.92, None, "faster")["speed_pass"] is False  # 0.96
    assert scores.speed_scores(2.0, 1.9, None, "faster")["speed_pass"] is True  # 0.95
    assert scores.speed_scores(2.0, 2.1, 0.5, None)["speed_pass"] is True and \
        scores.speed_scores(2.0, 2.1, 0.5, None)["ade"] == pytest.approx(1.9)


def test_a_tone_shifted_by_a_known_interval_measures_that_shift_with_speech_edit_benchs_pyin():
    # 200 Hz up three semitones is 237.84 Hz; both lie on pYIN's 10-cent grid from 50 Hz.
    up = 200 * 2 ** (3 / 12)
    got = scores.pitch_scores(tone(200), tone(up), RATE, 3.0, None)
    assert got["f0_src_hz"] == pytest.approx(200, rel=0.003) and got["f0_out_hz"] == pytest.approx(up, rel=0.003)
    assert got["shift_st"] == pytest.approx(3.0, abs=0.06) and got["st_error"] == pytest.approx(0.0, abs=0.06)
    assert got["pitch_pass"] is True
    # Asked down 2 and got up 3: an error of 5 semitones, and no pass. A 0.2-semitone move is no pass either.
    wrong = scores.pitch_scores(tone(200), tone(up), RATE, -2.0, None)
    assert wrong["st_error"] == pytest.approx(5.0, abs=0.06) and wrong["pitch_pass"] is False
    small = scores.pitch_scores(tone(200), tone(200 * 2 ** (0.2 / 12)), RATE, None, "higher")
    assert small["pitch_pass"] is False


def test_the_word_error_rate_of_one_word_too_many_and_the_character_rate_of_chinese():
    got = scores.content_scores("The cat sat.", "the cat sat down")
    assert got["error_rate"] == pytest.approx(1 / 3) and got["error_unit"] == "WER" and got["content_kept"] is False
    assert scores.content_scores("The cat sat on the mat by the old door.", "the cat sat on the mat by the old door")[
        "content_kept"] is True
    chinese = scores.content_scores("今天天气很好", "今天天气真好")
    assert chinese["error_unit"] == "CER" and chinese["error_rate"] == pytest.approx(1 / 6)


def _noise_then_tone(noise_rms: float, seed: int) -> np.ndarray:
    """One second of white noise at ``noise_rms``, then a second of a 0.3-peak tone over the same noise."""
    rng = np.random.default_rng(seed)
    hiss = (noise_rms * rng.standard_normal(2 * RATE)).astype(np.float32)
    return hiss + np.concatenate([np.zeros(RATE, np.float32), tone(300, 1.0, 0.3)])


def test_a_noise_floor_20_db_lower_gains_20_db_of_snr_and_the_clean_reference_scores_best():
    noisy, cleaner = _noise_then_tone(0.01, 1), _noise_then_tone(0.001, 2)
    got = scores.enhancement_scores(noisy, cleaner, RATE)
    # The floor is the quietest tenth of 20 ms frames: the noise alone, −40 and −60 dBFS RMS.
    assert got["noise_floor_src"] == pytest.approx(-40, abs=1) and got["noise_floor_out"] == pytest.approx(-60, abs=1)
    assert got["snr_gain_db"] == pytest.approx(20, abs=1.5)
    clean = np.concatenate([np.zeros(RATE, np.float32), tone(300, 1.0, 0.3)])
    with_reference = scores.enhancement_scores(noisy, clean.copy(), RATE, clean)
    assert with_reference["stoi"] == pytest.approx(1.0, abs=1e-3) and with_reference["stoi_src"] < 1.0
    assert with_reference["pesq"] > 4.5 > with_reference["pesq_src"]  # wide-band PESQ tops out at 4.64


def test_joint_success_needs_the_target_and_the_content_and_a_task_comes_from_the_check_or_the_manifest():
    heard = {"text": ""}
    s = scores.Scoring("volume", Target("volume", -6.0), True, {}, "the cat sat", lambda audio, lang: heard["text"])
    source = tone(440)
    quieter = source * np.float32(10 ** (-6 / 20))
    heard["text"] = "the cat sat"
    kept = scores.score(s, source, quieter, RATE)
    assert kept["target_pass"] is True and kept["content_kept"] is True and kept["joint"] is True
    assert kept["db_error"] == pytest.approx(0.0, abs=1e-3)
    heard["text"] = "the dog ran"
    assert scores.score(s, source, quieter, RATE)["joint"] is False
    no_ear = scores.score(scores.Scoring("volume", Target("volume", -6.0), True, {}, "the cat sat"), source, quieter,
                          RATE)
    assert no_ear["joint"] is None and "error_rate" not in no_ear
    assert scores.task_of("time_stretch", Target("unknown")) == "speed" and scores.task_of(None, Target("denoise")) == "enhancement"
    # Ming's volume rows give the factor itself (vol(1.5)), not dB.
    ming = scores.score(scores.Scoring("volume", Target("unknown", reason="-"), None, {"amount": 1.5}), source,
                        source * np.float32(1.5), RATE)
    assert ming["aae"] == pytest.approx(0.0, abs=1e-6)


def test_the_speaker_encoder_loads_its_packaged_weights_offline_and_tells_one_voice_from_another(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from training.speech import Voice, synthesize

    first = Voice("en-us", "m3", 160, 50)
    one = synthesize("The quiet farmer paints the old bridge near the river.", first)
    same = synthesize("The young sailor carries a letter to the station.", first)
    other = synthesize("The young sailor carries a letter to the station.", Voice("en-gb-scotland", "f2", 160, 70))
    assert speaker.weights_file().stat().st_size > 10_000_000  # the package's own file, nothing downloaded
    assert speaker.similarity(one, one, RATE) == pytest.approx(1.0, abs=1e-5)
    assert speaker.similarity(one, same, RATE) > speaker.similarity(one, other, RATE) + 0.15
