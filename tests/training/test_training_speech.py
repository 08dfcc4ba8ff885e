import numpy as np
import pytest

from training import speech
from training.measures import f0_hz
from training.sounds import SAMPLE_RATE
from training.speech import NOUNS, Voice, draw_sentence, speech_clip, synthesize


def test_clip_is_exact_length_peak_one_and_seeded():
    wav, params = speech_clip(np.random.default_rng(0), 60_001, "train")
    again, _ = speech_clip(np.random.default_rng(0), 60_001, "train")
    np.testing.assert_array_equal(wav, again)
    assert wav.shape == (60_001,) and np.max(np.abs(wav)) == pytest.approx(1.0)
    assert params["kind"] == "speech" and params["text"].startswith("The ")
    assert wav[-1] == 0.0  # the cut ends on a fade


def test_synthesis_is_24_khz_voiced_speech_and_cached_read_only():
    voice = Voice("en-us", "m3", 160, 50)
    wav = synthesize("The quiet farmer paints the old bridge near the river.", voice)
    assert 1.5 * SAMPLE_RATE < wav.size < 5 * SAMPLE_RATE and not wav.flags.writeable
    assert 60 < f0_hz(wav) < 250  # a speaking voice
    assert synthesize("The quiet farmer paints the old bridge near the river.", voice) is wav


def test_sentence_splits_use_disjoint_nouns():
    rng = np.random.default_rng(1)
    for split, other in (("train", "heldout"), ("heldout", "train")):
        words = {w.strip(".") for _ in range(50) for w in draw_sentence(rng, split).split()}
        assert words & set(NOUNS[split]) and not words & set(NOUNS[other])


def test_missing_espeak_names_the_package(monkeypatch):
    monkeypatch.setattr(speech.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install espeak-ng"):
        synthesize.__wrapped__("Hello.", Voice("en-us", "m1", 150, 50))
