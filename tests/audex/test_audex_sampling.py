"""Guided, masked sampling with the tiny random demo LM (real ArceeForCausalLM, real tokenizer)."""

import pytest
import torch

from auk_app.audex.params import AudexSampling
from auk_app.audex.prompt import build_tta_cond_prompt, build_tta_null_prompt
from auk_app.audex.sampler import CHUNK, sample_stream
from auk_app.config import Limits
from auk_app.errors import Cancelled, InputError
from tests.audex.reference_loop import sample_stream_eager
from tests.audex.runs import run, sampling

CAPTION = "Rain falling on a tin roof."
SEEDS = range(12)


def _greedy_reference(pipeline, caption, cfg_scale, codec_cap):
    """Teacher-forced recomputation without a KV cache: full forward per step, CFG blend, mask, argmax."""
    thinker = pipeline.sampler.thinker
    tokenizer, vocab, model = thinker.tokenizer, thinker.vocab, thinker.model
    cond_prompt = build_tta_cond_prompt(caption)
    cond = tokenizer.encode(cond_prompt)
    null = tokenizer.encode(build_tta_null_prompt(tokenizer, cond_prompt))
    tokens = []
    while not tokens or tokens[-1] != vocab.end_tid:
        position = len(tokens)
        with torch.no_grad():
            logits = model(torch.tensor([cond + tokens])).logits[0, -1].float()
            if cfg_scale > 1:
                uncond = model(torch.tensor([null + tokens])).logits[0, -1].float()
                logits = uncond + cfg_scale * (logits - uncond)
        if position >= codec_cap:
            allowed = [vocab.end_tid]
        else:
            allowed = list(vocab.phase_token_ids[position % 4])
            if position % 4 == 0 and position > 0:
                allowed.append(vocab.end_tid)
        allowed = torch.tensor(allowed)
        tokens.append(int(allowed[logits[allowed].argmax()]))
    return tuple(tokens)


@pytest.mark.parametrize("cfg_scale", [1.0, 2.5])
def test_greedy_stream_is_blend_then_mask_with_kv_cache(pipeline, cfg_scale):
    got = run(pipeline, CAPTION, cfg_scale=cfg_scale, codec_cap=8, top_k=1, decode=False)
    assert got.token_ids == _greedy_reference(pipeline, CAPTION, cfg_scale, codec_cap=8)


def test_guidance_changes_the_stream(pipeline):
    unguided = run(pipeline, CAPTION, cfg_scale=1.0, codec_cap=8, top_k=1, decode=False)
    guided = run(pipeline, CAPTION, cfg_scale=3.0, codec_cap=8, top_k=1, decode=False)
    assert unguided.token_ids != guided.token_ids


def test_tiny_top_p_and_tiny_temperature_are_greedy(pipeline):
    greedy = run(pipeline, CAPTION, codec_cap=16, top_k=1, seed=3, decode=False).token_ids
    assert run(pipeline, CAPTION, codec_cap=16, top_p=1e-6, seed=3, decode=False).token_ids == greedy
    assert run(pipeline, CAPTION, codec_cap=16, temperature=1e-4, seed=3, decode=False).token_ids == greedy


def test_masked_streams_are_always_phase_valid(pipeline):
    vocab = pipeline.sampler.thinker.vocab
    reasons = set()
    for seed in SEEDS:
        result = run(pipeline, CAPTION, codec_cap=48, seed=seed, decode=False)
        report = result.report
        assert report["phase_valid"] and report["decodable"], seed
        assert (report["non_codec_tokens"], report["upper_range_tokens"], report["dropped_tokens"]) == (0, 0, 0)
        assert result.token_ids[-1] == vocab.end_tid and report["frames"] >= 1
        assert report["codec_count"] == len(result.token_ids) - 1 == 4 * report["frames"] <= 48
        assert result.end_reason == ("codec_cap" if report["codec_count"] == 48 else "end_token")
        reasons.add(result.end_reason)
    assert "codec_cap" in reasons


def test_unmasked_streams_are_not_decodable(pipeline):
    totals = {"upper_range_tokens": 0, "non_codec_tokens": 0}
    for seed in SEEDS:
        result = run(pipeline, CAPTION, codec_cap=48, seed=seed, use_mask=False)
        report = result.report
        assert report["mismatch_count"] > 0 or report["non_codec_tokens"] > 0, seed
        assert not report["decodable"] and result.waveform.size == 0
        for key in totals:
            totals[key] += report[key]
    assert totals["upper_range_tokens"] > 0 and totals["non_codec_tokens"] > 0


def test_end_token_only_on_a_frame_boundary(pipeline):
    runs = (run(pipeline, CAPTION, codec_cap=400, seed=s, decode=False) for s in range(6))
    result = next((r for r in runs if r.end_reason == "end_token"), None)
    assert result is not None, "no seed in 0..5 sampled <audiogen_end> before the cap"
    assert result.token_ids[-1] == pipeline.sampler.thinker.vocab.end_tid
    assert 0 < result.report["codec_count"] < 400 and result.report["codec_count"] % 4 == 0


def test_stop_reasons_max_tokens_and_unmasked_cap(pipeline):
    result = run(pipeline, CAPTION, max_tokens=5, decode=False)
    assert (result.end_reason, len(result.token_ids)) == ("max_tokens", 5)
    assert result.report["dropped_tokens"] == 1 and result.report["frames"] == 1
    result = run(pipeline, CAPTION, codec_cap=8, use_mask=False, seed=1, decode=False)
    assert result.end_reason == "codec_cap" and len(result.token_ids) == 8


def test_same_seed_same_tokens_other_seed_other_tokens(pipeline):
    first = run(pipeline, CAPTION, codec_cap=40, seed=7, decode=False).token_ids
    rng_before = torch.get_rng_state()
    again = run(pipeline, CAPTION, codec_cap=40, seed=7, decode=False).token_ids
    assert torch.equal(torch.get_rng_state(), rng_before)  # the global RNG is neither used nor seeded
    other = run(pipeline, CAPTION, codec_cap=40, seed=8, decode=False).token_ids
    assert first == again and first != other


def test_progress_reports_every_token(pipeline):
    calls = []
    result = run(pipeline, CAPTION, codec_cap=12, seed=1, decode=False, progress=lambda *call: calls.append(call))
    assert calls == [("Sampling", i, 13) for i in range(1, len(result.token_ids) + 1)]


def _stream(pipeline, *, fast, **knobs):
    """The fast loop (``sample_stream``) or the eager reference on the demo LM with the caption's
    prompts; knobs go to AudexSampling."""
    params = sampling(CAPTION, **knobs)
    cond, null = pipeline.prompt_ids(CAPTION, guided=params.guided)
    thinker = pipeline.sampler.thinker
    loop = sample_stream if fast else sample_stream_eager
    return lambda progress=lambda *_: None, **hooks: loop(thinker.model, cond, null, thinker.vocab, params,
                                                          label="Sampling", progress=progress, **hooks)


@pytest.mark.parametrize("fast, checks_before_stop, tokens_made", [(True, 2, CHUNK), (False, 5, 5)])
def test_stop_is_checked_before_the_prompt_then_per_chunk_or_per_token(pipeline, fast, checks_before_stop, tokens_made):
    progress = []
    checks = iter(range(100))
    stream = _stream(pipeline, fast=fast, codec_cap=40)
    with pytest.raises(Cancelled, match=f"stopped after {tokens_made} of at most 41 tokens"):
        stream(should_stop=lambda: next(checks) >= checks_before_stop, progress=lambda _, d, t: progress.append(d))
    assert progress == list(range(1, tokens_made + 1))
    with pytest.raises(Cancelled, match="stopped after 0 of"):
        stream(should_stop=lambda: True)
    assert run(pipeline, CAPTION, codec_cap=8, should_stop=lambda: False, decode=False).report["phase_valid"]


@pytest.mark.parametrize(
    "knobs",
    [dict(cfg_scale=3.0), dict(cfg_scale=1.0), dict(cfg_scale=2.0, top_k=5, top_p=0.7, temperature=0.8),
     dict(cfg_scale=1.0, top_k=2000, temperature=1.3), dict(cfg_scale=3.0, top_k=1025, top_p=0.9),
     dict(cfg_scale=1.5, top_k=1), dict(cfg_scale=3.0, use_mask=False, codec_cap=24),
     dict(cfg_scale=1.0, top_k=300, top_p=0.8, use_mask=False, codec_cap=24)],
    ids=["guided", "unguided", "knobs", "k-past-the-row", "k-at-the-width", "greedy", "unmasked", "unmasked-knobs"],
)
def test_the_fast_loop_gives_the_eager_loops_tokens(pipeline, knobs):
    """Same seed, same device: the device-side mask table, the mask-restricted head (masked: the
    eager loop draws over the whole masked vocabulary) and chunked reads change nothing."""
    for seed in range(4):
        settings = dict({"codec_cap": 64}, **knobs, seed=seed)
        fast = _stream(pipeline, fast=True, **settings)()
        eager = _stream(pipeline, fast=False, **settings)()
        assert fast.token_ids == eager.token_ids and fast.end_reason == eager.end_reason, seed


def test_decoded_clip_has_frames_times_320_samples(pipeline):
    result = run(pipeline, CAPTION, codec_cap=40, seed=2)
    wav = result.waveform
    assert result.sample_rate == 16000 and wav.dtype.name == "float32" and wav.ndim == 1
    assert wav.shape[0] == result.report["frames"] * 320 == result.report["decoded_frames"] * 320
    assert bool(torch.isfinite(torch.from_numpy(wav)).all()) and float(wav.std()) > 0
    assert set(result.timings) == {"prefill", "sampling", "decode"} and result.tokens_per_second > 0
    assert run(pipeline, CAPTION, codec_cap=8, decode=False).waveform is None


@pytest.mark.parametrize(
    "kwargs, name",
    [({"cfg_scale": 0.5}, "cfg_scale"), ({"cfg_scale": 10.5}, "cfg_scale"), ({"cfg_scale": float("nan")}, "cfg_scale"),
     ({"codec_cap": 0}, "codec_cap"), ({"codec_cap": 6}, "codec_cap"), ({"codec_cap": 4004}, "codec_cap"),
     ({"max_tokens": 0}, "max_tokens"), ({"temperature": 0.0}, "temperature"), ({"top_k": 0}, "top_k"),
     ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"), ({"seed": -1}, "seed"), ({"use_mask": "no"}, "use_mask")],
)
def test_bad_values_are_rejected_before_any_model_work(kwargs, name):
    """The sampling refuses them when it is built: nothing can reach a pipeline unchecked."""
    with pytest.raises(InputError, match=rf"^{name} must"):
        sampling(CAPTION, **kwargs)


def test_empty_caption_is_rejected_before_any_model_work():
    with pytest.raises(InputError, match="caption is empty"):
        sampling("  ")


def test_an_overlong_caption_is_refused_before_any_model_work():
    with pytest.raises(InputError, match="The caption has 22499 characters; the limit is 1000"):
        sampling("rain " * 4500)


def test_the_caption_is_held_to_the_apps_configured_limits_not_the_defaults():
    with pytest.raises(InputError, match="The caption has 16 characters; the limit is 10"):
        AudexSampling(caption="rain on the roof", limits=Limits(max_caption_chars=10))
    assert AudexSampling(caption="rain", limits=Limits(max_caption_chars=10)).caption == "rain"

