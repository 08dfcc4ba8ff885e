"""The mask-restricted output head: the same logits, probabilities and draws as the full masked path."""

import pytest
import torch

from auk_app.audex.decode import DecodeState, draw, guide, lm_hidden, lm_logits, sampling_probs
from auk_app.audex.phase_head import PhaseHead
from auk_app.audex.phase_table import allowed_table
from tests.audex.runs import sampling

KNOB_SETS = [
    dict(temperature=1.0, top_k=80, top_p=1.0),  # the recipe
    dict(temperature=0.7, top_k=5, top_p=1.0),
    dict(temperature=1.3, top_k=2000, top_p=1.0),  # k beyond every row's allowed count
    dict(temperature=1.0, top_k=1025, top_p=0.8),  # k = the drawn width: past rows 0-3's 1,024
    dict(temperature=0.9, top_k=300, top_p=0.5),
    dict(temperature=1.0, top_k=1, top_p=1.0),
]


@pytest.fixture(scope="module")
def layout(pipeline):
    """(allowed table [6, V], a PhaseHead of the demo LM) for the demo vocabulary."""
    vocab, model = pipeline.sampler.thinker.vocab, pipeline.sampler.thinker.model
    allowed = allowed_table(vocab.phase_token_ids, vocab.end_tid, model.config.vocab_size, "cpu")
    return allowed, PhaseHead(allowed, model.lm_head)


def _tensors(knobs, width):
    return dict(
        temperature=torch.tensor(knobs["temperature"]), top_p=torch.tensor(knobs["top_p"]),
        top_k_index=torch.tensor(min(knobs["top_k"], width) - 1),
    )  # fmt: skip


def _scores(seed, width):
    """Random guided-looking scores [V] rounded to quarters, so that many allowed ids tie (as bf16
    logits do): ties are where an unstable sort would rank the two paths' ids differently."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(width, generator=generator) * 12).round() / 4


def test_columns_are_the_mask_rows_in_id_order(layout):
    allowed, head = layout
    union = allowed.any(0).nonzero()[:, 0]
    assert len(union) == 4097 and torch.equal(head.ids[:4097], union) and len(head.ids) == 4352
    assert (head.ids[4097:] == union[-1]).all()  # padding rows repeat the last id
    assert head.width == 1025 and (~head.padding).sum(1).tolist() == [1024, 1024, 1024, 1024, 1025, 1]
    for row in range(6):
        kept = head.row_ids[row][~head.padding[row]]
        assert torch.equal(kept, allowed[row].nonzero()[:, 0]), row  # ascending, and exactly the row
        assert not head.padding[row, : len(kept)].any()  # padding only after the allowed columns


@pytest.mark.parametrize("row", range(6))
@pytest.mark.parametrize("knobs", KNOB_SETS)
def test_probabilities_over_allowed_ids_equal_the_full_masked_ones(layout, knobs, row):
    allowed, head = layout
    width = allowed.shape[1]
    for seed in range(3):
        scores = _scores(seed, width)
        masked = scores.masked_fill(~allowed[row], float("-inf"))
        full_probs, full_order = sampling_probs(masked, **_tensors(knobs, width))
        restricted, ids = head.restrict(scores[head.ids], torch.tensor([row]))
        probs, order = sampling_probs(restricted, **_tensors(knobs, head.width))
        by_id = torch.zeros(width).index_put_((ids[order],), probs)
        # Same scores, same ranks, exact zeros past them: the float32 sums agree to the bit on CPU.
        torch.testing.assert_close(by_id, torch.zeros(width).index_put_((full_order,), full_probs), rtol=0, atol=0)
        assert not by_id[~allowed[row]].any() and by_id.max() > 0  # top-p's survivors are not renormalised


@pytest.mark.parametrize("knobs", KNOB_SETS)
def test_restricted_draws_pick_the_full_draws_ids_and_use_the_same_noise(layout, knobs):
    allowed, head = layout
    width = allowed.shape[1]
    for seed in range(40):
        row = seed % 6
        scores = _scores(seed, width)
        full_generator, generator = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        masked = scores.masked_fill(~allowed[row], float("-inf"))
        full = draw(masked, generator=full_generator, **_tensors(knobs, width))
        restricted, ids = head.restrict(scores[head.ids], torch.tensor([row]))
        pick = draw(restricted, generator=generator, noise_width=width, **_tensors(knobs, head.width))
        assert int(ids[pick]) == int(full) and bool(allowed[row, full]), (seed, row)
        assert torch.equal(generator.get_state(), full_generator.get_state())  # later draws stay in step


def test_restricted_logits_are_the_full_heads_at_those_ids(pipeline, layout):
    """Prompt, then one fed token, guided and not: the restricted head's scores are the full head's."""
    _, head = layout
    model, vocab = pipeline.sampler.thinker.model, pipeline.sampler.thinker.vocab
    cond, null = pipeline.prompt_ids("Rain falling on a tin roof.", guided=True)
    state = DecodeState(model, vocab, rows=2, positions=len(cond) + 4, masked=False)
    head.gather_rows(model.lm_head)
    prompt = (torch.tensor([cond, null]), torch.arange(len(cond)))
    feeds = [prompt, (torch.tensor([[vocab.end_tid]] * 2), torch.tensor([len(cond)]))]
    with torch.no_grad():
        for ids, positions in feeds:
            hidden = lm_hidden(model, state.keys, state.values, ids, positions)
            full = model.lm_head(hidden)[:, 0].float()
            torch.testing.assert_close(head.logits(hidden), full[:, head.ids], rtol=0, atol=0)
            scale = torch.tensor(3.0)
            torch.testing.assert_close(guide(head.logits(hidden), scale), guide(full, scale)[head.ids], rtol=0, atol=0)
        torch.testing.assert_close(full, lm_logits(model, state.keys, state.values, ids, positions), rtol=0, atol=0)


def test_a_masked_state_scores_the_union_and_an_unmasked_one_the_whole_vocabulary(pipeline):
    model, vocab = pipeline.sampler.thinker.model, pipeline.sampler.thinker.vocab
    cond, _ = pipeline.prompt_ids("Rain falling on a tin roof.", guided=False)
    knobs = sampling(cfg_scale=1.0, temperature=1.0, top_k=80, top_p=1.0, seed=0, codec_cap=8)
    prompts = torch.tensor([cond])
    with torch.no_grad():
        masked, unmasked = (DecodeState(model, vocab, rows=1, positions=len(cond) + 2, masked=m) for m in (True, False))
        for state in (masked, unmasked):
            state.start(knobs)
        restricted, full = masked.prefill(model, prompts), unmasked.prefill(model, prompts)
        reference = lm_logits(model, unmasked.keys, unmasked.values, prompts, torch.arange(len(cond)))[0]
    assert unmasked.phase_head is None and int(unmasked.top_k_index) == 79
    torch.testing.assert_close(full, reference, rtol=0, atol=0)  # the whole head, as the plain LM computes it
    torch.testing.assert_close(restricted, full[masked.phase_head.ids], rtol=0, atol=0)
