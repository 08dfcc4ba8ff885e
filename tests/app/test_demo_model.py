"""The shipped demo model against its bars on freshly generated held-out clips, through /edit_audio.

Instructions word for word as the app writes them (and two paraphrases), the app's default model
and knobs, training/data.py's held-out seed space (disjoint from training): harmonic tones of
150–700 Hz, 2–3 s, and espeak-ng speech of held-out sentences, 2–6 s, any sample count. Bars
(training/evaluation.py, medians over 4 clips per family and material, every condition covered): tones, volume ±6 dB
within 1.5 dB and ±12 dB within 2 dB, pitch ±2/±4 semitones within 50 cents, denoise on 5 dB SNR
white noise ≥ +8 dB, text-to-tone F0 within 3 %; speech, volume ±6 dB within 1.5 dB, pitch ±2
semitones within 50 cents on voiced frames, denoise ≥ +6 dB, and after a volume edit the 20 ms
envelope correlates ≥ 0.8 and most voiced frames keep their F0 within 100 cents; volume outputs
add no noise floor; every output valid.
"""

import dataclasses
import itertools

import numpy as np
import pytest
import soundfile as sf

from training.data import heldout_cases
from training.evaluation import FAMILIES, evaluate_family

pytestmark = pytest.mark.slow
CLIPS = 4  # per family and material: the round-robin covers every condition once; pYIN on speech makes more costly
SEED = 0
KEYS = [(family, material) for material, families in FAMILIES.items() for family in families]
PARAPHRASES = {  # held-out condition -> a user's own wording of it
    ("volume", "Increase the volume by 6 dB."): "Make it louder by 6 dB",
    ("pitch", "Raise the pitch by 2 semitones."): "Shift the pitch up two semitones",
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

        wav_path, _, manifest, *_ = client.predict(
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
    """Each family and material's score, computed once and shared by the validity and the bar tests."""
    cache = {}

    def score(family, material):
        if (family, material) not in cache:
            cases = heldout_cases(family, CLIPS, SEED, material)
            cache[family, material] = evaluate_family(edit_through_api, cases)
        return cache[family, material]

    return score


@pytest.mark.parametrize(("family", "material"), KEYS)
def test_demo_outputs_are_valid(scores, family, material):
    score = scores(family, material)
    assert all(clip.valid for clip in score.clips), "an output was not finite, in [-1, 1] and of the input's length"


@pytest.mark.parametrize(("family", "material"), KEYS)
def test_demo_model_meets_its_bars(scores, family, material):
    missed = [
        f"{result.bar.measure} ({result.bar.condition or 'all'}): median {result.median:.3f} {result.bar.unit}, "
        f"bar {result.bar.rule} {result.bar.limit:g}"
        for result in scores(family, material).bars if not result.met
    ]
    assert not missed, missed


@pytest.mark.parametrize(("family", "instruction"), list(PARAPHRASES))
def test_paraphrases_meet_the_bars(edit_through_api, family, instruction):
    """A user's own wording works like the builder's: the tone clips of that condition, reworded."""
    cases = [dataclasses.replace(case, instruction=PARAPHRASES[family, instruction])
             for case in heldout_cases(family, 8, SEED) if case.instruction == instruction]
    score = evaluate_family(edit_through_api, cases)
    covered = [result for result in score.bars if result.n_clips]
    assert covered and all(result.met for result in covered), [(r.bar.measure, r.median) for r in covered]
    assert all(clip.valid for clip in score.clips)


def test_outputs_keep_any_input_length(edit_through_api):
    """Automatic duration: exactly the source's sample count, whole frames or not."""
    for n in (24_000, 24_001, 36_479, 50_123):
        t = np.arange(n) / 24000
        out = edit_through_api((0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32), "Increase the volume by 3 dB.", n / 24000)
        assert out.shape == (n,) and np.isfinite(out).all() and np.abs(out).max() <= 1.0
