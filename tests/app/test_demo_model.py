"""The shipped demo model against its bars on freshly generated held-out clips, through /edit_audio.

Instructions word for word, the app's default model and knobs, harmonic tones of 220–660 Hz with
3–5 partials, 2–3 s of any sample count (training/data.py's held-out seed space, disjoint from
training). Bars: volume within ±1.5 dB (median over 20 clips), pitch within ±50 cents, denoise
≥ 8 dB better than the noisy input, text-to-tone F0 within ±3 %, every output valid.
"""

import itertools

import numpy as np
import pytest
import soundfile as sf

from training.data import heldout_cases
from training.evaluation import BARS, evaluate_family

pytestmark = pytest.mark.slow
CLIPS = {"volume": 20, "pitch": 12, "denoise": 12, "tone": 12}
SEED = 0
# Bars the shipped model does not reach (medians of `python -m bench.bench_demo --clips 20`): the
# tests still run and assert the bar; strict, so the day a bar is met the suite says so.
UNMET = {
    "volume": pytest.mark.xfail(strict=True, reason=(
        "bar: median |error| ≤ 1.5 dB; measured 2.1 dB: every edit moves the level the requested way, but by "
        "about two thirds of the requested gain; the 81-minute CPU model still carries part of the source level over")),
    "pitch": pytest.mark.xfail(strict=True, reason=(
        "bar: median |error| ≤ 50 cents; measured 200 cents, what copying the source scores: the model keeps the "
        "source's pitch; a shift needs every partial re-synthesised with new phase, not learned in the budget")),
    "denoise": pytest.mark.xfail(strict=True, reason=(
        "bar: median SNR gain ≥ 8 dB; measured 1.0 dB: the model keeps most of the 5 dB-SNR noise bed of the "
        "source")),
}


@pytest.fixture(scope="module")
def edit_through_api(client, tmp_path_factory):
    """``edit(source, instruction, seconds)`` as a user of /edit_audio runs it."""
    folder = tmp_path_factory.mktemp("heldout")
    numbers = itertools.count()

    def edit(source, instruction, seconds):
        audio = None
        if source is not None:
            audio = folder / f"clip{next(numbers)}.wav"
            sf.write(str(audio), source, 24000, subtype="FLOAT")  # the exact clip, no 16-bit rounding
        from gradio_client import handle_file

        wav_path, _, manifest = client.predict(
            audio=handle_file(str(audio)) if audio else None, instruction=instruction,
            seconds=0 if source is not None else seconds, seed=SEED, randomize_seed=False,
            api_name="/edit_audio",
        )
        wav, rate = sf.read(wav_path, dtype="float32")
        assert rate == 24000 and manifest["sample_rate"] == 24000 and manifest["model"] == "demo"  # the default without weights
        return wav

    return edit


@pytest.fixture(scope="module")
def scores(edit_through_api):
    """Each family's score, computed once and shared by the validity and the bar tests."""
    cache = {}

    def score(family):
        if family not in cache:
            cache[family] = evaluate_family(edit_through_api, heldout_cases(family, CLIPS[family], SEED))
        return cache[family]

    return score


@pytest.mark.parametrize("family", list(CLIPS))
def test_demo_outputs_are_valid(scores, family):
    score = scores(family)
    assert all(clip.valid for clip in score.clips), "an output was not finite, in [-1, 1] and of the input's length"


@pytest.mark.parametrize("family", [pytest.param(f, marks=UNMET.get(f, ())) for f in CLIPS])
def test_demo_model_meets_its_bar(scores, family):
    score = scores(family)
    bar = BARS[family]
    values = [round(clip.value, 3) for clip in score.clips]
    if bar.absolute:
        assert score.median <= bar.limit, f"median |{family} error| {score.median:.3f} {bar.unit} > {bar.limit}: {values}"
    else:
        assert score.median >= bar.limit, f"median {family} gain {score.median:.3f} {bar.unit} < {bar.limit}: {values}"


def test_volume_edits_move_the_level_the_requested_way(scores):
    """What the demo does reach on volume: the direction of every edit, if not its full size."""
    for clip in scores("volume").clips:
        change = clip.measured["rms_out_db"] - clip.measured["rms_in_db"]
        assert (change > 0) == clip.instruction.startswith("Increase"), (clip.instruction, round(change, 2))


def test_outputs_keep_any_input_length(edit_through_api):
    """Automatic duration: exactly the source's sample count, whole frames or not."""
    for n in (24_000, 24_001, 36_479, 50_123):
        t = np.arange(n) / 24000
        out = edit_through_api((0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32), "Increase the volume by 3 dB.", n / 24000)
        assert out.shape == (n,) and np.isfinite(out).all() and np.abs(out).max() <= 1.0
