"""Audex-Tiny against its bars on a few held-out captions, through /text_to_audio on the launched app.

The app's defaults (phase mask on, CFG 3, temperature 1, top-k 80, the demo's 3 s) and seed 0;
the benchmark's first held-out captions of each family (``bench/bench_audex_demo.py``: templates
and values training never used). Each family's clips must hold its bar (``training/audex_measures.py``),
every stream must be phase-valid, and the comparison run without the mask must not be. Captions
new users typed come out as they say, and a caption with words the demo does not know carries a
warning naming them.
"""

import numpy as np
import pytest
import soundfile as sf

from auk_app.demo.audex_vocabulary import caption_warnings
from bench.bench_audex_demo import FAMILIES, heldout_scenes, summarise
from training import audex_measures as measures
from training.audex_sounds import Event, Scene

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


# Held-out templates whose only cue is a word Audex-Tiny never saw miss (the page names those
# words): "白噪声越来越小" comes out as steady noise and "noise that dies down" fades in; "four clicks
# separated by 0.7 seconds" ("separated" unknown, a spacing training never uses) as five to ten
# clicks. The bench measures the same (docs/demo-model.md#what-it-does).
MISSED = {"fade": "bar: >= 80 % of fades fall by >= 10 dB; the bench measures 50 % (fades said only in unknown "
                  "words, 'dies down', '越来越小', read as steady noise or a fade in)",
          "clicks": "bar: the count exact in >= 80 % of runs; the bench measures 63 % ('four clicks separated by "
                    "0.7 seconds' comes out as five to ten clicks)"}


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.xfail(strict=True, reason=MISSED[f]))
                                    if f in MISSED else f for f in FAMILIES])
def test_held_out_captions_meet_the_bars(made, family):
    scores = [measures.score(scene, data.astype(np.float64)) for scene, data, _, _ in made[family]]
    summary = summarise(family, scores)
    assert summary["bar"], [(s.caption, s.values) for s in scores]


def test_every_manifest_names_the_words_its_caption_has_that_the_demo_does_not_know(made, client):
    for runs in made.values():
        for scene, _, _, manifest in runs:
            assert manifest["warnings"] == caption_warnings(scene.caption)
    _, _, _, manifest = client.predict("Rain falling on a tin roof.", seed=0, randomize_seed=False,
                                       api_name="/text_to_audio")
    (warning,) = manifest["warnings"]
    assert '"Rain", "tin" and "roof"' in warning


# Captions a new user typed: a siren without a length (its default is 2 s), a sweep ending at
# 900 Hz (which guidance once made a steady tone), a Chinese caption. The siren comes out at its
# frequencies but with a sweep's default length (1 s): "sweeping from … to …" is a sweep's wording.
TYPED = [
    pytest.param(Scene("A siren sweeping from 300 Hz to 900 Hz.", [Event("siren", 2.0, 300, 900)], "siren"),
                 marks=pytest.mark.xfail(strict=True, reason="bar: the length within 10 % of the asked 2 s; "
                                                                "it is 1 s, a sweep's default length")),
    Scene("A sweep from 400 Hz to 900 Hz over 1.5 seconds.", [Event("sweep", 1.5, 400, 900)], "sweep"),
    Scene("一个440赫兹的提示音，持续1秒。", [Event("tone", 1.0, 440, 440)], "tone", "zh"),
    # Numbers in words, as the banner says they may be given.
    Scene("A beep at six hundred hertz lasting two seconds.", [Event("tone", 2.0, 600, 600)], "tone"),
]


@pytest.mark.parametrize("scene", TYPED, ids=["siren", "sweep", "chinese", "number-words"])
def test_captions_new_users_typed_come_out_as_they_say(client, scene):
    wav, _, _, _ = client.predict(scene.caption, seed=0, randomize_seed=False, api_name="/text_to_audio")
    data, _ = sf.read(wav, dtype="float64")
    result = measures.score(scene, data)
    start, end = measures.active(data)
    assert result.ok and abs((end - start) / 16_000 / scene.events[0].seconds - 1) <= measures.TONE_LENGTH_BAR, (
        result.values, (end - start) / 16_000)
