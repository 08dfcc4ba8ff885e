"""Editing a region of a long recording through /edit_audio: the whole file comes back, identical
outside the region, with seams that do not click; clear refusals; a 10-minute file costs about a
short edit."""

from __future__ import annotations

import time

import numpy as np
import pytest
import soundfile as sf
from gradio_client import handle_file
from gradio_client.exceptions import ValidationError

pytestmark = pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")
SR = 24_000
FAST = {"nfe": 4, "seed": 3, "randomize_seed": False, "api_name": "/edit_audio"}


def _speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    """A gliding tone under a syllable envelope plus a little noise: every sample differs from its neighbours."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    tone = np.sin(2 * np.pi * (180 * t + 20 * np.sin(2 * np.pi * 0.3 * t)))
    wav = 0.3 * tone * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)) + 0.01 * rng.standard_normal(t.size)
    return wav.astype(np.float32)


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("region") / "forty_seconds.wav"
    sf.write(path, _speechlike(40.0), SR, subtype="PCM_16")
    return path


def _pcm(path) -> np.ndarray:
    data, rate = sf.read(str(path), dtype="int16")
    assert rate == SR
    return data


def test_a_region_edit_returns_the_whole_file_unchanged_outside_the_region(client, long_clip):
    wav, figure, manifest, *_ = client.predict(audio=handle_file(str(long_clip)), instruction="Decrease the volume by 6 dB.",
                                           region_start=12.0, region_end=17.0, **FAST)
    source, out = _pcm(long_clip), _pcm(wav)
    start, end = 12 * SR, 17 * SR
    assert out.shape == source.shape
    np.testing.assert_array_equal(out[:start], source[:start])  # the same integers, not just close
    np.testing.assert_array_equal(out[end:], source[end:])
    assert not np.array_equal(out[start:end], source[start:end])
    # The model reads at most the 6 s clips AuK-Tiny was trained on: the region and 0.5 s on each side.
    assert manifest["region"] == [12.0, 17.0] and manifest["region_context"] == [0.5, 0.5]
    assert manifest["region_crossfade"] == 0.05 and manifest["region_seconds"] == pytest.approx(5.0)
    assert manifest["gen_frames"] == 300
    for seam in (start, end):  # no click: the steps at a seam stay within the source's own steps there
        steps = np.abs(np.diff(out[seam - 1200: seam + 1200].astype(np.int32)))
        local = np.abs(np.diff(source[seam - 4800: seam + 4800].astype(np.int32)))
        assert steps.max() <= 1.5 * local.max(), (seam, steps.max(), local.max())


def test_a_region_edit_reports_the_regions_own_level_change(client, long_clip):
    wav, _, manifest, *_ = client.predict(audio=handle_file(str(long_clip)), instruction="Decrease the volume by 10 dB.",
                                      region_start=20.0, region_end=24.0, **FAST)
    source, out = (_pcm(path).astype(np.float64) for path in (long_clip, wav))
    part = slice(20 * SR, 24 * SR)
    measured = 20 * np.log10(np.sqrt(np.mean(out[part] ** 2)) / np.sqrt(np.mean(source[part] ** 2)))
    assert manifest["region_level_change"]["rms_dbfs"] == pytest.approx(measured, abs=0.05)
    assert manifest["region_level_change"]["rms_dbfs"] < -6  # the whole file's change is diluted by 36 s
    # The edit check measures the region alone too: its LUFS change, near the region's RMS change.
    assert manifest["check"]["task"] == "volume" and manifest["check"]["asked"] == -10.0
    assert manifest["check"]["got"] == pytest.approx(measured, abs=1.5)
    assert manifest["level_change"]["rms_dbfs"] > -2


def test_a_longer_region_shifts_the_rest_of_the_file(client, long_clip):
    wav, _, manifest, *_ = client.predict(audio=handle_file(str(long_clip)), instruction="Decrease the volume by 6 dB.",
                                      region_start=12.0, region_end=17.0, seconds=7.0, **FAST)
    source, out = _pcm(long_clip), _pcm(wav)
    grown = out.shape[0] - source.shape[0]
    assert manifest["region_seconds"] == pytest.approx(5.0 + grown / SR) and abs(grown - 2 * SR) <= 480
    np.testing.assert_array_equal(out[: 12 * SR], source[: 12 * SR])
    np.testing.assert_array_equal(out[17 * SR + grown:], source[17 * SR:])


REFUSALS = [
    ({"region_start": 5.0, "region_end": 5.0}, "region_end", "must come after region_start"),
    ({"region_start": 30.0, "region_end": 45.0}, "region_end", "past the clip's end at 40.00 s"),
    ({"region_start": 1.0, "region_end": 35.0}, "region_end", "the model edits at most 30 s at a time"),
]


@pytest.mark.parametrize(("region", "parameter", "words"), REFUSALS, ids=[r[2][:20] for r in REFUSALS])
def test_bad_regions_are_refused_with_their_sentence(client, long_clip, region, parameter, words):
    with pytest.raises(ValidationError) as refused:
        client.predict(audio=handle_file(str(long_clip)), instruction="Decrease the volume by 6 dB.", **region, **FAST)
    assert f"- {parameter}: " in str(refused.value) and words in str(refused.value)


@pytest.mark.slow
def test_a_ten_minute_file_costs_about_a_short_edit(client, tmp_path):
    short, long = tmp_path / "five_seconds.wav", tmp_path / "ten_minutes.wav"
    sf.write(short, _speechlike(5.0), SR, subtype="PCM_16")
    sf.write(long, _speechlike(600.0, seed=1), SR, subtype="PCM_16")
    timings = {}
    for name, path, region in (("short", short, {}), ("long", long, {"region_start": 300.0, "region_end": 305.0})):
        started = time.perf_counter()
        wav, _, _, *_ = client.predict(audio=handle_file(str(path)), instruction="Decrease the volume by 6 dB.",
                                   **region, **FAST)
        timings[name] = time.perf_counter() - started
    assert _pcm(wav).shape == (600 * SR,)
    # The model sees 11 s instead of 5; reading, drawing and writing 10 minutes adds a little. A pass
    # over the whole file would cost about 120 short edits.
    assert timings["long"] < 8 * timings["short"], timings

    over = tmp_path / "over_ten_minutes.wav"
    sf.write(over, _speechlike(601.0, seed=2), SR, subtype="PCM_16")
    with pytest.raises(ValidationError, match="the limit is 600 s"):
        client.predict(audio=handle_file(str(over)), instruction="Decrease the volume by 6 dB.",
                       region_start=1.0, region_end=2.0, **FAST)


def test_a_zero_region_end_means_the_whole_clip(client, tmp_path):
    short = tmp_path / "short.wav"
    sf.write(short, _speechlike(1.0), SR, subtype="PCM_16")  # a number box sends 0, not empty
    wav, _, manifest, *_ = client.predict(audio=handle_file(str(short)), instruction="Decrease the volume by 6 dB.",
                                      region_start=0, region_end=0, **FAST)
    assert manifest["region"] is None and _pcm(wav).shape == (SR,)
