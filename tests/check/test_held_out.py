"""The check on sounds a person brings that the measures were not built from: a chord made quieter,
a denoised 44.1 kHz stereo MP3, a request with a direction and no number, and an edit that changed
what was not asked (the level of a speed request). The calibration behind these, on the held-out
sounds of ``bench.kept_sounds``: docs/edit-check.md."""

from __future__ import annotations

import numpy as np
import pytest

from auk_app.check import KEEP_MIN, check
from bench.bench_kept import EDITS, KEPT, known_cases, wiener
from bench.kept_sounds import RATE, Sound, chord, speech, uploaded, vibrato_tone
from training.long_recordings import noisy_speech

A_CHORD = (220.0, 277.0, 330.0)
KNOWN_MISSES = {("G major", "noise of its long-term spectrum, −6 dB"), ("noisy MP3", "the speech removed with the noise")}


def gain(wav: np.ndarray, db: float) -> np.ndarray:
    return wav * np.float32(10 ** (db / 20))


@pytest.fixture(scope="module")
def a_chord() -> np.ndarray:
    return chord(A_CHORD, 2.0, seed=0)


@pytest.fixture(scope="module")
def spoken() -> np.ndarray:
    return speech(31)


def test_a_chord_made_6_db_quieter_passes_and_its_melody_is_not_measured(a_chord):
    result = check("Decrease the volume by 6 dB.", a_chord, gain(a_chord, -6), RATE)
    assert result.passed, result
    assert result.kept_by["melody"] is None and result.kept >= 0.9  # a chord has no single pitch to follow
    assert "melody not measured" in result.note and result.display() == "asked −6 dB · got −6 dB ✓"


def test_a_chord_turned_into_another_chord_fails(a_chord):
    other = chord((196.0, 246.9, 293.7), 2.0, partials=3, struck=True, seed=1)
    result = check("Decrease the volume by 6 dB.", a_chord, gain(other * np.float32(np.std(a_chord) / np.std(other)), -6),
                   RATE)
    assert result.passed is False and result.kept < KEEP_MIN, result


def test_a_pitch_edit_of_a_chord_is_not_measured_rather_than_failed(a_chord):
    result = check("Raise the pitch by 2 semitones.", a_chord, a_chord, RATE)
    assert result.passed is None and result.display().startswith("pitch: cannot be measured (")


def test_a_denoised_44k_stereo_mp3_passes():
    noisy, clean = noisy_speech(4.0, 42, 5.0)
    upload = uploaded(noisy, "MP3")
    result = check("Remove the background noise.", upload, wiener(upload, clean[:upload.size]), RATE)
    assert result.passed and result.got > 15 and result.kept >= 0.9, result
    assert result.kept_by["spectrum"] is None  # noise removal changes the spectrum by design


def test_speech_removed_with_the_noise_fails():
    noisy, clean = noisy_speech(4.0, 42, 5.0)
    result = check("Remove the background noise.", noisy, gain(noisy - clean, -20), RATE)
    assert result.passed is False and result.kept < KEEP_MIN, result


def test_an_unasked_level_change_is_reported_beside_a_speed_request(spoken):
    result = check("Speed this up a little.", spoken, gain(spoken, -6.3), RATE)
    assert result.passed is False and result.unasked == ("level −6.3 dB",), result
    assert result.display().startswith("asked faster · got 1×") and result.display().endswith(
        "✗ and also changed: level −6.3 dB")
    assert check("Decrease the volume by 6 dB.", spoken, gain(spoken, -6.3), RATE).unasked == ()


def test_a_pitch_edit_that_also_made_it_quieter_says_so(spoken):
    import librosa

    shifted = librosa.effects.pitch_shift(spoken, sr=RATE, n_steps=2)
    shifted = gain(shifted * np.float32(np.std(spoken) / np.std(shifted)), -4)
    result = check("Raise the pitch by 2 semitones.", spoken, shifted, RATE)
    (change,) = result.unasked
    assert result.passed and change.startswith("level −") and 3 <= float(change.split("−")[1].split()[0]) <= 5
    assert f"✓ but also changed: {change}" in result.display()


@pytest.mark.parametrize(("text", "db", "passed"), [
    ("Make it a bit quieter.", -3.0, True), ("Make it a bit quieter.", 3.0, False),
    ("Make it a bit quieter.", -0.5, False), ("Make it a little louder.", 3.0, True)])
def test_a_direction_without_a_number_is_checked_for_its_direction(spoken, text, db, passed):
    result = check(text, spoken, gain(spoken, db), RATE)
    assert result.passed is passed, result
    assert result.asked_text() in ("quieter", "louder")


def test_the_check_is_right_on_held_out_sounds_of_every_family():
    """Every edit of known outcome (bench.bench_kept.EDITS) on held-out chords, tones, speech and an
    MP3 of speech in noise: no known-good edit fails for what it kept, and every loss is caught but
    the two misses docs/edit-check.md names (a sustained chord against a band of noise around its
    notes; an MP3's speech removed with its noise at 10 dB SNR)."""
    noisy, clean = noisy_speech(4.0, 43, 10.0)
    sounds = [Sound("E diminished", "chord", chord((164.8, 196.0, 233.1), 2.0, partials=3, struck=True, seed=21)),
              Sound("G major", "chord", chord((196.0, 246.9, 293.7), 2.0, seed=20)),
              Sound("880 Hz", "tone", chord((880.0,), 2.0, seed=25)), Sound("vibrato", "tone", vibrato_tone(330.0, 2.0)),
              Sound("speaker 32", "speech", speech(32)), Sound("speaker 33", "speech", speech(33)),
              Sound("noisy MP3", "speech in noise", uploaded(noisy, "MP3"), clean),
              Sound("noisy", "speech in noise", noisy_speech(4.0, 41, 0.0)[0], noisy_speech(4.0, 41, 0.0)[1])]
    cases = [c for c in known_cases(sounds) if not c.edit.startswith("speed")]
    wrong = [(c.sound, c.edit, c.kept) for c in cases if c.right is False]
    assert not [c for c in cases if c.right is False and c.label == KEPT], wrong
    assert {w[:2] for w in wrong} <= KNOWN_MISSES and sum(c.label == KEPT for c in cases) >= 15
    assert set(EDITS) - {c.edit for c in cases} == {"speed 1.25× (phase vocoder)"}
