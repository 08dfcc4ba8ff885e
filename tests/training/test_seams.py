"""The seam measures find a click, a gain step and a timbre change, and nothing where a recording
runs on as its source does."""

import numpy as np
import pytest

from training.long_recordings import noisy_speech, slow_tones
from training.seams import control_points, level_step_db, sample_jump, seam_measures, seam_points, spectral_step_db

SR = 24_000


@pytest.fixture(scope="module")
def tones():
    return slow_tones(20, seed=1)


def test_a_click_is_a_jump_far_above_the_signals_own(tones):
    at = 10 * SR
    clicked = tones.copy()
    clicked[at:] = -clicked[at:]  # a polarity flip: one sample jumps by twice the level
    assert sample_jump(tones, at) < 4 and sample_jump(clicked, at) > 10


def test_a_gain_step_is_a_level_step_the_source_does_not_have(tones):
    at = 10 * SR
    stepped = tones.copy()
    stepped[at:] *= 10 ** (-2 / 20)
    assert level_step_db(stepped, at) - level_step_db(tones, at) == pytest.approx(-2.0, abs=0.01)


def test_a_timbre_change_is_a_spectral_step(tones):
    at = 10 * SR
    muffled = tones.copy()
    spectrum = np.fft.rfft(muffled[at:])
    spectrum[np.fft.rfftfreq(muffled.size - at, 1 / SR) > 500] *= 0.1
    muffled[at:] = np.fft.irfft(spectrum, muffled.size - at)
    assert spectral_step_db(muffled, at) > spectral_step_db(tones, at) + 5


def test_a_gain_that_differs_between_windows_is_measured_at_the_seams_and_not_between_them():
    noisy, _ = noisy_speech(30, seed=3)
    seams, crossfade = [250, 500, 750, 1000], 50  # frames, as a WindowPlan gives them
    points, controls = seam_points(seams, crossfade, 480), control_points(seams, crossfade, 480)
    assert points[:3] == [250 * 480, 275 * 480, 300 * 480] and controls[:3] == [375 * 480, 400 * 480, 425 * 480]
    assert (seam_measures(noisy, noisy, points, controls)["level_step_db"].excess_at_seams == 0).all()
    gains = np.ones(noisy.size, np.float32)
    gains[(seams[1] + crossfade // 2) * 480 :] = 10 ** (1.5 / 20)  # the third window 1.5 dB louder, cut hard
    measured = seam_measures(noisy * gains, noisy, points, controls)
    assert measured["level_step_db"].excess_at_seams.max() == pytest.approx(1.5, abs=0.05)
    assert measured["level_step_db"].excess_at_controls.max() < 0.01
    assert measured["sample_jump"].excess_at_controls.max() < 1e-6  # jumps are relative to the signal's own
