"""The device-side decode pieces: mask rows, the draw, the static-cache LM step, reusable states."""

from dataclasses import replace

import pytest
import torch

import torch.nn.functional as F

from auk_app.audex.decode import DecodeState, _cache_bias, draw, lm_logits
from auk_app.audex.phase_table import allowed_table, row_schedule
from auk_app.audex.tta import TTARVQPhaseMaskLogitsProcessor
from auk_app.progress import silent
from tests.audex.runs import sampling
from tests.audex.test_audex_tta_processor import END, PHASES, START, VOCAB, BatchUpdate, Params, tta
from tests.audex.vllm_types import tta_rvq_args
from tests.conftest import requires_cuda


@pytest.mark.parametrize("codec_cap", [None, 8])
def test_table_rows_mask_exactly_as_the_processor_does(codec_cap):
    """Positions 0..cap+3, walked token by token: the processor's mask equals the scheduled row."""
    processor = TTARVQPhaseMaskLogitsProcessor(None, "cpu", False)
    output = []
    processor.update_state(BatchUpdate(added=[(0, tta(codec_cap=codec_cap), [1, START], output)]))
    allowed = allowed_table(PHASES, END, VOCAB, "cpu")
    schedule = row_schedule(12, codec_cap, "cpu")
    for position in range(12):
        masked = processor.apply(torch.zeros(1, VOCAB))[0]
        assert torch.equal(torch.isfinite(masked), allowed[schedule[position]]), position
        output.append(PHASES[position % 4][0])


def test_table_rows_on_the_demo_vocabulary(pipeline):
    """The real layout (codec block after the markers, padding rows past the tokenizer)."""
    vocab, width = pipeline.sampler.thinker.vocab, pipeline.sampler.thinker.model.config.vocab_size
    allowed = allowed_table(vocab.phase_token_ids, vocab.end_tid, width, "cpu")
    assert allowed.sum(1).tolist() == [1024, 1024, 1024, 1024, 1025, 1]
    assert not allowed[:, vocab.tokenizer_size:].any()
    processor = TTARVQPhaseMaskLogitsProcessor(None, "cpu", False)
    output = []
    processor.update_state(BatchUpdate(added=[(0, Params({"tta_rvq": tta_rvq_args(vocab, 8)}), [], output)]))
    schedule = row_schedule(11, 8, "cpu")
    for position in range(11):
        assert torch.equal(torch.isfinite(processor.apply(torch.zeros(1, width))[0]), allowed[schedule[position]])
        output.append(vocab.phase_token_ids[position % 4][0])


def _draw(scores, *, seed=0, temperature=1.0, top_k=1000, top_p=1.0):
    return int(draw(
        torch.tensor(scores, dtype=torch.float32), temperature=torch.tensor(temperature),
        top_k_index=torch.tensor(min(top_k, len(scores)) - 1), top_p=torch.tensor(top_p),
        generator=torch.Generator().manual_seed(seed),
    ))  # fmt: skip


def test_draw_follows_the_probabilities_and_never_picks_a_forbidden_id():
    inf = float("-inf")
    probs = torch.tensor([0.5, 0.25, 0.15, 0.1])
    scores = [inf, *probs.log().tolist(), inf]
    picks = torch.tensor([_draw(scores, seed=s) for s in range(4000)])
    assert set(picks.tolist()) <= {1, 2, 3, 4}
    frequencies = torch.bincount(picks, minlength=6)[1:5].float() / len(picks)
    assert (frequencies - probs).abs().max() < 0.03  # ~3.5 standard errors at 4000 draws
    assert {_draw([inf, 0.0, inf], seed=s, top_k=3) for s in range(50)} == {1}  # k above the allowed count


def test_draw_top_k_keeps_ties_and_top_p_keeps_the_most_likely():
    scores = [3.0, 1.0, 2.0, 2.0, 0.0]
    assert {_draw(scores, seed=s, top_k=2) for s in range(200)} == {0, 2, 3}  # 2nd and 3rd tie at 2.0
    assert {_draw(scores, seed=s, top_p=1e-6) for s in range(50)} == {0}
    # p = 0.5: the three least likely total 0.335 (<= 0.5) and go; 0 (0.665) stays.
    assert {_draw([2.0, 1.0, 0.5, -1.0], seed=s, top_p=0.5) for s in range(200)} == {0}
    assert {_draw(scores, seed=s, temperature=1e-4) for s in range(50)} == {0}


def test_static_cache_logits_equal_transformers_forward(pipeline):
    """Prompt, then two fed tokens: the last-position logits of the full transformers forward."""
    model = pipeline.sampler.thinker.model
    cond, null = pipeline.prompt_ids("Rain falling on a tin roof.", guided=True)
    fed = [[pipeline.sampler.thinker.vocab.phase_token_ids[p][7 * p] for p in range(2)]] * 2
    state = DecodeState(model, pipeline.sampler.thinker.vocab, rows=2, positions=len(cond) + 8, masked=True)
    prompts = torch.tensor([cond, null])
    with torch.no_grad():
        got = [lm_logits(model, state.keys, state.values, prompts, torch.arange(len(cond)))]
        for i in range(2):
            ids = torch.tensor([[fed[0][i]], [fed[1][i]]])
            got.append(lm_logits(model, state.keys, state.values, ids, torch.tensor([len(cond) + i])))
        for i, logits in enumerate(got):
            full = torch.cat((prompts, torch.tensor(fed)[:, :i]), dim=1)
            want = model(full).logits[:, -1].float()
            # Attention over the padded cache sums in another order: float32 rounding only.
            torch.testing.assert_close(logits, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_cache_bias_attends_exactly_as_the_boolean_mask(pipeline, dtype):
    """Built once per step, the additive mask gives each layer's attention the boolean mask's result
    to the bit (the attention call would convert the boolean mask into the same tensor)."""
    model = pipeline.sampler.thinker.model
    groups = model.model.layers[0].self_attn.num_key_value_groups
    keys = [torch.zeros(2, 2, 24, 16, dtype=dtype)]
    positions = torch.tensor([9, 10, 11])
    bias = _cache_bias(model, keys, positions)
    visible = torch.arange(24)[None, :] <= positions[:, None]
    assert bias.shape == (groups * 3, 24) and bias.dtype == dtype
    repeated = visible.repeat(groups, 1)
    assert torch.equal(bias == 0, repeated) and bool((bias[~repeated] == float("-inf")).all())
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, n, 16, generator=generator).to(dtype) for n in (groups * 3, 24, 24))
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=visible.repeat(groups, 1))
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=bias), want, rtol=0, atol=0)


def test_a_reused_state_decodes_as_a_fresh_one(pipeline):
    """States are pooled on CUDA: a request after another must not see the earlier one's cache."""
    model, vocab = pipeline.sampler.thinker.model, pipeline.sampler.thinker.vocab
    cond, null = pipeline.prompt_ids("Rain falling on a tin roof.", guided=True)
    other, other_null = pipeline.prompt_ids("A dog barking in the distance.", guided=True)
    knobs = sampling(cfg_scale=3.0, temperature=1.0, top_k=80, top_p=1.0, seed=1, codec_cap=40)

    def decode(state, prompts, knobs):
        state.start(knobs)
        state.choose(state.prefill(model, torch.tensor(prompts)))
        for _ in range(23):
            state.advance(model)
        return state.generated[:24].tolist()

    with torch.no_grad():
        fresh = decode(DecodeState(model, vocab, rows=2, positions=96, masked=True), [cond, null], knobs)
        reused = DecodeState(model, vocab, rows=2, positions=96, masked=True)
        decode(reused, [other, other_null], replace(knobs, seed=9, cfg_scale=1.5))
        again = decode(reused, [cond, null], knobs)
    assert again == fresh


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_graph_replays_give_the_eager_tokens_on_cuda(demo_snapshot, dtype):
    """The first request of a shape captures, the next ones replay the pooled graph."""
    from auk_app.audex.pipeline import AudexPipeline
    from auk_app.audex.sampler import sample_stream
    from tests.audex.reference_loop import sample_stream_eager

    pipeline = AudexPipeline.from_paths(demo_snapshot.audex_root, demo_snapshot.xcodec_dir, device="cuda", dtype=dtype)
    thinker = pipeline.load().sampler.thinker
    cond, null = pipeline.prompt_ids("Rain falling on a tin roof.", guided=True)
    for seed in range(3):
        params = sampling(codec_cap=200, seed=seed)
        fast = sample_stream(thinker.model, cond, null, thinker.vocab, params, label="Sampling", progress=silent)
        eager = sample_stream_eager(thinker.model, cond, null, thinker.vocab, params)
        assert fast.token_ids == eager.token_ids, seed
