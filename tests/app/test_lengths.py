"""One length story: the upload verdict, /inspect_audio, the builder, the route an edit takes and the
limits text say the same of the same clip, from the same limits the edit uses."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from auk_app import instructions, lengths
from auk_app.config import Limits
from auk_app.errors import KnobError
from auk_app.recognise import recognise
from auk_app.whole_file import route

LIMITS = Limits()
SPEED, QUIETER = "Adjust the speech speed to 1.5x.", "Decrease the volume by 6 dB."


@pytest.fixture(scope="module")
def handlers():
    from auk_app.service import Studio, StudioConfig
    from auk_app.ui.handlers import Handlers

    return Handlers(Studio(StudioConfig(device="cpu")))


def _clip(tmp_path, seconds: float) -> str:
    path = tmp_path / f"clip_{seconds:g}.wav"
    rate = 8000
    sf.write(path, (0.2 * np.sin(2 * np.pi * 220 * np.arange(round(seconds * rate)) / rate)).astype(np.float32), rate)
    return str(path)


def _route(path: str, instruction: str, handlers):
    from auk_app.auk.request import EditRequest

    clip = handlers.studio.uploads.read(path, LIMITS.for_whole())
    request = EditRequest(instruction, audio=path)
    try:
        return route(clip, request, recognise(instruction), window=6.0, label="AuK-Tiny (demo)", limits=LIMITS)
    except KnobError as refused:
        return str(refused)


@pytest.mark.parametrize("seconds", [4, 12, 40, 120])
def test_the_verdicts_the_builder_and_the_route_tell_one_story(handlers, tmp_path, seconds):
    path = _clip(tmp_path, seconds)
    verdict, length, _, _ = handlers.on_audio_change(path, None, None, "demo")
    inspected = handlers.inspect_audio(path)
    assert inspected["verdict"] != "rejected" and length == pytest.approx(seconds)
    story = lengths.uses(seconds, 6.0, LIMITS)
    assert story in verdict and story in inspected["message"]  # the page and the API, word for word
    speed = instructions.build("speed", {"amount": "1.5"}, source_seconds=seconds, limits=LIMITS).problem
    volume = instructions.build("volume", {"mode": "Decrease", "amount": "6"}, source_seconds=seconds,
                                limits=LIMITS).problem
    assert volume == ""  # a volume edit runs on any of them
    whole_volume, speed_route = _route(path, QUIETER, handlers), _route(path, SPEED, handlers)
    assert whole_volume.whole == (seconds > 6)
    if seconds <= LIMITS.max_target_seconds:
        assert speed == "" and not isinstance(speed_route, str) and not speed_route.whole
    else:  # longer than a region: the builder, the route and the verdict send a speed change to a region
        assert "choose a region of at most 30 s" in speed and "choose a region of at most 30 s" in story
        assert speed_route == lengths.whole_refusal(6.0, LIMITS)


def test_the_limits_text_names_the_three_ways_with_the_edits_own_lengths(handlers):
    from auk_app.ui.text import about_page

    summary = lengths.summary(LIMITS)
    assert summary in about_page(LIMITS, "120 MB")
    for number in ("30 s", "10 minutes", "60 minutes"):
        assert number in summary
    assert lengths.uses(700, 6.0, LIMITS).endswith("cut it to at most 10 minutes and choose a region of at most 30 s.")
