import numpy as np
import pytest

from training.data import TASKS, heldout_cases
from training.evaluation import BARS, evaluate_family


def _oracle(cases):
    """An edit that answers each case, in order, with its own target."""
    targets = iter([case.target for case in cases])
    return lambda source, instruction, seconds: next(targets)


@pytest.mark.parametrize("family", TASKS)
def test_oracle_meets_every_bar(family):
    cases = heldout_cases(family, 1, seed=0)  # one clip: pYIN costs ~0.5 s per 2-3 s clip
    score = evaluate_family(_oracle(cases), cases)
    assert score.passed and len(score.clips) == 1
    assert all(clip.valid for clip in score.clips)
    if BARS[family].absolute:
        assert score.median < 0.1 * BARS[family].limit


def test_do_nothing_fails_volume_by_the_requested_gain():
    cases = heldout_cases("volume", 6, seed=0)
    score = evaluate_family(lambda source, instruction, seconds: source, cases)
    assert not score.passed
    np.testing.assert_allclose([clip.value for clip in score.clips], [-3, 3, -6, 6, -10, 10], atol=1e-9)
    assert score.median == pytest.approx(6.0)


def test_do_nothing_gains_no_snr_on_denoise():
    cases = heldout_cases("denoise", 3, seed=0)
    score = evaluate_family(lambda source, instruction, seconds: source, cases)
    assert score.median == 0.0 and not score.passed
    assert all(3.0 < clip.measured["snr_in_db"] < 6.0 for clip in score.clips)


def test_wrong_length_output_fails_even_with_the_right_level():
    cases = heldout_cases("volume", 2, seed=0)
    targets = iter([case.target for case in cases])
    score = evaluate_family(lambda source, instruction, seconds: next(targets)[:-1], cases)
    assert score.median < 0.01 and not score.passed
    assert not any(clip.valid for clip in score.clips)


def test_unvoiced_output_counts_as_failing():
    cases = heldout_cases("tone", 1, seed=0)
    score = evaluate_family(lambda source, instruction, seconds: np.zeros(round(seconds * 24_000)), cases)
    assert score.median == np.inf and not score.passed


def test_cases_from_two_families_are_rejected():
    cases = heldout_cases("volume", 1) + heldout_cases("tone", 1)
    with pytest.raises(ValueError, match="mix"):
        evaluate_family(_oracle(cases), cases)
