"""Seconds ↔ latent frames: upstream's rounding, and the inverse the builder proposes."""

from __future__ import annotations

import math

import pytest

from auk_app.config import frames_for_seconds, seconds_for_frames


@pytest.mark.parametrize(
    ("seconds", "frames"),
    [(2.24, 113), (1.1, 56), (6.0, 300), (5.59, 280), (3.5, 175), (0.02, 1), (1.0, 50), (0.51, 26)],
)
def test_frames_follow_upstreams_float_expression(seconds, frames):
    # upstream AuK and vLLM-Omni: ceil(gen_seconds * 24000 / 480), float error included
    assert frames_for_seconds(seconds) == frames == math.ceil(seconds * 24000 / 480)


def test_seconds_for_frames_maps_back_to_the_same_frames_over_the_whole_range():
    assert all(frames_for_seconds(seconds_for_frames(n)) == n for n in range(1, 65_537))
    assert seconds_for_frames(100) == 2.0 and seconds_for_frames(112) == 2.23  # 2.24 s would be 113 frames
