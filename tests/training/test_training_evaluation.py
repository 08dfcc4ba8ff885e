import librosa
import numpy as np
import pytest

from training.data import heldout_cases
from training.evaluation import BARS, ENVELOPE, FAMILIES, FLOOR, LEVEL, MELODY, PITCH, Bar, evaluate_family
from training.sounds import SAMPLE_RATE, noise

# Clips per (family, material): enough to cover every condition; pYIN costs ~0.5 s per second of audio.
CLIPS = {"volume": 4, "pitch": 4, "denoise": 1, "tone": 1}
KEYS = [(family, material) for material, families in FAMILIES.items() for family in families]


def _oracle(cases):
    """An edit that answers each case, in order, with its target; speech pitch (no target)
    with librosa's phase-vocoder shift, which moves voiced frames by the interval within cents."""
    answers = iter(
        case.target if case.target is not None
        else np.clip(librosa.effects.pitch_shift(case.source, sr=SAMPLE_RATE, n_steps=case.params["semitones"]), -1, 1)
        for case in cases
    )
    return lambda source, instruction, seconds: next(answers)


def _do_nothing(source, instruction, seconds):
    return source


def test_every_family_and_material_has_bars():
    assert set(BARS) == set(KEYS)


@pytest.mark.parametrize(("family", "material"), KEYS)
def test_oracle_meets_every_bar(family, material):
    cases = heldout_cases(family, CLIPS[family] if material == "tone" else 2, seed=0, material=material)
    score = evaluate_family(_oracle(cases), cases)
    assert score.passed, [(b.bar, b.median) for b in score.bars]
    assert all(b.n_clips > 0 for b in score.bars) and all(clip.valid for clip in score.clips)
    for result in score.bars:
        if result.bar.rule == "|x| <=":
            assert result.median < 0.2 * result.bar.limit


def test_do_nothing_fails_volume_by_the_requested_gain():
    cases = heldout_cases("volume", 4, seed=0)
    score = evaluate_family(_do_nothing, cases)
    assert not score.passed
    np.testing.assert_allclose([clip.measured[LEVEL] for clip in score.clips], [-6, 6, -12, 12], atol=1e-6)
    assert [(b.bar.condition, b.median, b.met) for b in score.bars if b.bar.measure == LEVEL] == [
        ("±6 dB", pytest.approx(6.0), False), ("±12 dB", pytest.approx(12.0), False)]


def test_do_nothing_keeps_the_speech_envelope_and_melody_but_not_the_level():
    cases = heldout_cases("volume", 2, seed=0, material="speech")
    results = {b.bar.measure: b for b in evaluate_family(_do_nothing, cases).bars}
    assert not results[LEVEL].met and results[ENVELOPE].median == pytest.approx(1.0) and results[MELODY].median == 1.0
    assert results[FLOOR].met


def test_noise_of_the_right_level_is_not_speech():
    cases = heldout_cases("volume", 2, seed=0, material="speech")
    rng = np.random.default_rng(0)
    answers = iter(case.target.std() * noise(rng, case.n_samples, "white") for case in cases)
    score = evaluate_family(lambda source, instruction, seconds: np.clip(next(answers), -1, 1), cases)
    results = {b.bar.measure: b for b in score.bars}
    assert not results[ENVELOPE].met and results[ENVELOPE].median < 0.3
    assert not results[MELODY].met and results[MELODY].median < 0.2
    assert not results[FLOOR].met and not score.passed


def test_added_hiss_fails_the_noise_floor_on_a_clean_tone():
    cases = heldout_cases("volume", 4, seed=0)
    rng = np.random.default_rng(0)
    answers = iter(case.target + 1e-3 * noise(rng, case.n_samples, "white") for case in cases)  # -60 dBFS hiss
    results = {(b.bar.measure, b.bar.condition): b for b in evaluate_family(lambda *args: next(answers), cases).bars}
    assert results[LEVEL, "±6 dB"].met and results[LEVEL, "±12 dB"].met
    # white noise at -60 dBFS RMS puts its 10th-percentile cell at -92 dB, 8 above the -100 dB reference
    assert not results[FLOOR, None].met and results[FLOOR, None].median == pytest.approx(8.0, abs=1.0)


def test_do_nothing_fails_pitch_by_the_requested_interval():
    cases = heldout_cases("pitch", 2, seed=0, material="speech")
    (result,) = evaluate_family(_do_nothing, cases).bars
    assert result.bar.measure == PITCH and result.median == pytest.approx(200, abs=5) and not result.met


def test_do_nothing_gains_no_snr_on_denoise():
    cases = heldout_cases("denoise", 2, seed=0, material="speech")
    score = evaluate_family(_do_nothing, cases)
    assert score.bars[0].median == 0.0 and not score.passed


def test_wrong_length_output_fails_even_with_the_right_level():
    cases = heldout_cases("volume", 4, seed=0)
    targets = iter([case.target for case in cases])
    score = evaluate_family(lambda source, instruction, seconds: next(targets)[:-1], cases)
    assert all(b.median < 0.01 for b in score.bars if b.bar.measure == LEVEL) and not score.passed
    assert not any(clip.valid for clip in score.clips)


def test_unvoiced_output_counts_as_failing():
    cases = heldout_cases("tone", 1, seed=0)
    score = evaluate_family(lambda source, instruction, seconds: np.zeros(round(seconds * 24_000)), cases)
    assert score.bars[0].median == np.inf and not score.passed


def test_a_bar_with_no_clips_of_its_condition_is_not_met():
    cases = heldout_cases("volume", 1, seed=0)  # one ±6 dB clip: nothing for the ±12 dB bar
    score = evaluate_family(_oracle(cases), cases)
    assert [b.n_clips for b in score.bars] == [1, 0, 1] and not score.passed


@pytest.mark.parametrize(("rule", "limit", "values", "median", "met"), [
    ("|x| <=", 1.0, [-1.0, 0.5, np.nan], 1.0, True),
    (">=", 0.5, [0.9, np.nan, np.nan], -np.inf, False),
    (">", 0.5, [0.5, 0.5, 0.6], 0.5, False),
    ("<=", 3.0, [4.0, -9.0, 2.0], 2.0, True),
])
def test_bar_rules(rule, limit, values, median, met):
    bar = Bar("x", limit, "u", rule)
    assert bar.median(np.array(values)) == median and bar.met(median) is met


def test_cases_from_two_materials_are_rejected():
    cases = heldout_cases("volume", 1) + heldout_cases("volume", 1, material="speech")
    with pytest.raises(ValueError, match="mix"):
        evaluate_family(_oracle(cases), cases)
