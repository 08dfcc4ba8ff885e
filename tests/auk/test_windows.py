"""The windows of a long recording and the join of their latents."""

import math

import pytest
import torch

from auk_app.auk.windows import LatentJoiner, plan_windows

HOP = 480


@pytest.mark.parametrize("window_frames, overlap_frames", [(300, 50), (30, 10), (9, 1), (1500, 50)])
def test_windows_cover_the_recording_evenly_and_every_seam_lies_inside_two_windows(window_frames, overlap_frames):
    for frames in [*range(1, 4 * window_frames, max(1, window_frames // 7)), 180 * 50 + 3, 3600 * 50]:
        for short in (0, 137):
            n = max(1, frames * HOP - short)
            plan = plan_windows(n, window=window_frames * HOP, overlap=overlap_frames * HOP, hop=HOP)
            starts = [start for start, _ in plan.windows]
            assert plan.windows[0][0] == 0 and plan.windows[-1][1] == n
            assert all(start % HOP == 0 for start in starts)
            assert all(stop - start == window_frames * HOP for start, stop in plan.windows[:-1])
            assert window_frames * HOP - HOP < plan.windows[-1][1] - plan.windows[-1][0] <= window_frames * HOP \
                or len(plan.windows) == 1
            stride = window_frames - overlap_frames
            fewest = 1 if n <= window_frames * HOP else math.ceil((plan.frames - overlap_frames) / stride)
            assert len(plan.windows) == fewest
            assert len(plan.seams) == len(plan.windows) - 1 and plan.crossfade == overlap_frames
            for k, seam in enumerate(plan.seams):  # inside both neighbours, after the previous seam
                assert plan.first_frame(k + 1) <= seam and (seam + overlap_frames) * HOP <= plan.windows[k][1]
                assert k == 0 or seam >= plan.seams[k - 1] + overlap_frames


def test_an_overlap_past_a_third_of_the_window_is_refused():
    with pytest.raises(ValueError, match="at most a third of the window"):
        plan_windows(100 * HOP, window=30 * HOP, overlap=11 * HOP, hop=HOP)


def _windows_of(whole: torch.Tensor, plan) -> list[torch.Tensor]:
    return [whole[plan.first_frame(k) : plan.first_frame(k) + plan.window_frames(k)] for k in range(len(plan.windows))]


def test_windows_that_agree_join_into_exactly_the_recording_they_were_cut_from():
    # Linear weights sum to one, so frames both windows agree on come back unchanged; equal-power
    # weights (cos, sin) would raise them by up to 41 % in each seam's middle.
    plan = plan_windows(1000 * HOP + 100, window=300 * HOP, overlap=50 * HOP, hop=HOP)
    whole = torch.randn(plan.frames, 87)
    joiner = LatentJoiner(plan)
    joined = torch.cat([joiner.add(window) for window in _windows_of(whole, plan)])
    torch.testing.assert_close(joined, whole, atol=1e-6, rtol=0)


def test_a_seam_fades_linearly_from_one_window_to_the_next_and_holds_only_the_seam():
    plan = plan_windows(700 * HOP, window=300 * HOP, overlap=50 * HOP, hop=HOP)
    assert len(plan.windows) == 3
    joiner = LatentJoiner(plan)
    values = [torch.full((plan.window_frames(k), 1), float(k)) for k in range(3)]
    first = joiner.add(values[0])
    assert first.shape[0] == plan.seams[0] and joiner._tail.shape[0] == plan.crossfade  # only the seam is held
    second = joiner.add(values[1])
    fade = second[: plan.crossfade, 0]
    torch.testing.assert_close(fade, (torch.arange(50) + 0.5) / 50)  # window 0 → window 1, weights summing to one
    assert torch.all(second[plan.crossfade :] == 1.0)
    third = joiner.add(values[2])
    assert first.shape[0] + second.shape[0] + third.shape[0] == plan.frames
    with pytest.raises(ValueError, match="all of them were added"):
        joiner.add(values[2])


def test_a_window_short_of_its_frames_is_refused():
    plan = plan_windows(700 * HOP, window=300 * HOP, overlap=50 * HOP, hop=HOP)
    with pytest.raises(ValueError, match="window 0 needs 300 frames; got 299"):
        LatentJoiner(plan).add(torch.zeros(299, 4))
