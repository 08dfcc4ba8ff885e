"""Audex-Tiny against its bars on a few held-out captions, through /text_to_audio on the launched app.

The app's defaults (phase mask on, CFG 3, temperature 1, top-k 80, the demo's 3 s) and seed 0;
the benchmark's first held-out captions of each family (``bench/bench_audex_demo.py``: wordings and
values training never used). Each family's clips must hold its bar (``training/audex_measures.py``),
every stream must be phase-valid, and the comparison run without the mask must not be.
"""

import numpy as np
import pytest
import soundfile as sf

from bench.bench_audex_demo import FAMILIES, heldout_scenes, summarise
from training import audex_measures as measures

CLIPS = 3  # per family: a median of three holds a bar with one run off


@pytest.fixture(scope="module")
def made(client):
    """Family -> [(scene, waveform, report, manifest)] for the first CLIPS held-out captions."""
    out = {}
    for family in FAMILIES:
        out[family] = []
        for i, scene in enumerate(heldout_scenes(family, CLIPS)):
            wav, _, report, manifest = client.predict(
                scene.caption, seed=0, randomize_seed=False, compare_unmasked=family == "tone" and i == 0,
                api_name="/text_to_audio",
            )
            data, rate = sf.read(wav, dtype="float32")
            assert rate == 16_000
            out[family].append((scene, data, report, manifest))
    return out


def test_every_stream_is_phase_valid_and_made_by_audex_tiny(made):
    for family, runs in made.items():
        for scene, data, report, manifest in runs:
            assert report["phase_valid"] and report["decodable"], (family, scene.caption)
            assert manifest["model"] == "Audex-Tiny (demo)" and manifest["demo_model"] is True
            assert manifest["cfg_scale"] == 3.0 and manifest["use_mask"] is True


def test_without_the_mask_the_stream_is_not_valid(made):
    _, _, _, manifest = made["tone"][0]
    assert manifest["unmasked"]["report"]["phase_valid"] is False


@pytest.mark.parametrize("family", FAMILIES)
def test_held_out_captions_meet_the_bars(made, family):
    scores = [measures.score(scene, data.astype(np.float64)) for scene, data, _, _ in made[family]]
    summary = summarise(family, scores)
    assert summary["bar"], [(s.caption, s.values) for s in scores]
