"""AuKTransformer against the reference fixtures, the released key layout and the real size."""

import pytest
import torch

from auk_app import AuKTransformer, dit_state_dict
from tests.conftest import FIXTURES, assert_matches_reference, fixture_config, load_case

DIT_CASES = ["dit_a_plain", "dit_b_ref_cmask", "dit_b2_all_masks", "dit_d_cfg_infer"]


def _forward(dit, tensors, flags):
    inputs = {k.removeprefix("input."): v for k, v in tensors.items() if k.startswith("input.")}
    x, text, time = inputs.pop("x"), inputs.pop("text"), inputs.pop("time")
    with torch.no_grad():
        return dit(x, text, time, **inputs, **flags)


@pytest.mark.parametrize("case", DIT_CASES)
def test_forward_matches_reference(fixture_model, case):
    meta, tensors = load_case(case)
    got = _forward(fixture_model.dit, tensors, meta["args"]["flags"])
    assert_matches_reference(got, tensors["output.velocity"])


def test_module_keys_equal_the_released_keys():
    from safetensors.torch import load_file

    dit = AuKTransformer(**fixture_config("dit_config.json"))
    released = load_file(str(FIXTURES / "dit_weights_released.safetensors"))
    plain = load_file(str(FIXTURES / "dit_weights.safetensors"))
    assert dit_state_dict(released).keys() == plain.keys() == dit.state_dict().keys()
    dit.load_state_dict(dit_state_dict(released), strict=True)


def test_stored_inv_freq_is_used(fixture_model):
    """The release rounds inv_freq to bf16; recomputing it must change the output well above tolerance."""
    meta, tensors = load_case("dit_b_ref_cmask")
    dit = fixture_model.dit
    stored = dit.rotary_embed.inv_freq.clone()
    dim_head = stored.numel() * 2
    analytic = 1.0 / (10000 ** (torch.arange(0, dim_head, 2).float() / dim_head))
    assert not torch.equal(stored, analytic)
    try:
        dit.rotary_embed.inv_freq = analytic
        moved = _forward(dit, tensors, meta["args"]["flags"])
    finally:
        dit.rotary_embed.inv_freq = stored
    assert (moved - tensors["output.velocity"]).abs().max() > 1e-4


@pytest.mark.parametrize("cast", [lambda m: m.to(torch.bfloat16), lambda m: m.half(), lambda m: m.to("cpu", torch.bfloat16)],
                         ids=["to-bf16", "half", "to-cpu-bf16"])
def test_a_dit_cast_whole_keeps_its_rotary_table_in_float32(cast):
    """Cast to bf16, the fixture's frequencies (float32, not bf16-exact) moved cos and sin by 0.09
    over 490 positions (0.2 at the release's head width); the table must not move at all."""
    import copy

    dit = AuKTransformer(**fixture_config("dit_config.json"))
    cast_dit = cast(copy.deepcopy(dit))
    positions = torch.arange(490)[None]
    assert cast_dit.proj_out.weight.dtype != torch.float32 and cast_dit.rotary_embed.inv_freq.dtype == torch.float32
    for want, got in zip(dit.rotary_embed.tables(positions), cast_dit.rotary_embed.tables(positions), strict=True):
        assert torch.equal(want, got)


def test_cfg_infer_equals_explicit_branches(fixture_model):
    meta, tensors = load_case("dit_d_cfg_infer")
    dit = fixture_model.dit
    joint = _forward(dit, tensors, {"cfg_infer": True})
    cond = _forward(dit, tensors, {})
    uncond = _forward(dit, tensors, {"drop_audio_cond": True, "drop_text": True})
    batch = cond.shape[0]
    # A doubled batch changes the GEMM blocking, which moves float32 results by ~1.5e-6.
    torch.testing.assert_close(joint[:batch], cond, rtol=0, atol=1e-5)
    torch.testing.assert_close(joint[batch:], uncond, rtol=0, atol=1e-5)
    assert (cond - uncond).abs().max() > 1e-2


def test_text_cache_reused_until_cleared(fixture_model):
    meta, tensors = load_case("dit_d_cfg_infer")
    dit = fixture_model.dit
    first = _forward(dit, tensors, {"cfg_infer": True, "cache": True})
    try:
        assert dit.text_cond is not None
        other = dict(tensors, **{"input.text": tensors["input.text"] * 3})
        cached = _forward(dit, other, {"cfg_infer": True, "cache": True})
        torch.testing.assert_close(cached, first, rtol=0, atol=0)  # the cache ignored the new text
    finally:
        dit.clear_cache()
    assert dit.text_cond is None
    fresh = _forward(dit, other, {"cfg_infer": True, "cache": True})
    dit.clear_cache()
    assert (fresh - first).abs().max() > 1e-3


def test_zero_length_reference_counts_as_absent(fixture_model):
    meta, tensors = load_case("dit_a_plain")
    empty = dict(tensors, **{"input.ref": tensors["input.x"][:, :0], "input.ref_mask": torch.ones(2, 0, dtype=torch.bool)})
    torch.testing.assert_close(_forward(fixture_model.dit, empty, {}), _forward(fixture_model.dit, tensors, {}), rtol=0, atol=0)


def test_attn_mask_flag_changes_masked_attention_only(fixture_model):
    """With the flag off attention runs unmasked (a different result), padded rows stay zeroed."""
    meta, tensors = load_case("dit_b2_all_masks")
    config = dict(fixture_config("dit_config.json"), attn_mask_enabled=False)
    unmasked = AuKTransformer(**config)
    unmasked.load_state_dict(fixture_model.dit.state_dict())
    got = _forward(unmasked, tensors, meta["args"]["flags"])
    assert (got - tensors["output.velocity"]).abs().max() > 1e-3


def test_real_base_configuration_on_meta_device():
    with torch.device("meta"):
        dit = AuKTransformer(
            dim=1536, heads=24, dim_head=64, ff_mult=2, latent_dim=64, text_hidden_dim=2048,
            num_layers=10, num_single_layers=20,
        )
    state = dit.state_dict()
    assert len(state) == 418
    assert sum(t.numel() for t in state.values()) == 1_530_538_592
    assert sum(p.numel() for p in dit.parameters()) == 1_530_538_560
    assert state["rotary_embed.inv_freq"].shape == (32,)


def test_a_masked_extra_reference_frame_leaves_the_velocity_as_without_it(fixture_model):
    """Upstream encodes the whole clip and masks the frame a leftover of ≥ 136 samples adds; with
    the fixtures' mask-following positions that frame then changes nothing, and unmasked it would."""
    meta, tensors = load_case("dit_a_plain")
    x, text, time = tensors["input.x"][:1], tensors["input.text"][:1], tensors["input.time"][:1]
    ref = torch.randn(1, 6, x.shape[2], generator=torch.Generator().manual_seed(3))
    valid = torch.ones(1, 5, dtype=torch.bool)
    masked = torch.cat([valid, torch.zeros(1, 1, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        without = fixture_model.dit(x, text, time, ref=ref[:, :5], ref_mask=valid)
        with_masked = fixture_model.dit(x, text, time, ref=ref, ref_mask=masked)
        with_unmasked = fixture_model.dit(x, text, time, ref=ref, ref_mask=torch.ones(1, 6, dtype=torch.bool))
    # one more (masked) key changes the attention kernel's summation order: float32 rounding only
    torch.testing.assert_close(with_masked, without, rtol=1e-5, atol=1e-5)
    assert (with_unmasked - without).abs().max() > 1e-3


def test_one_prepared_context_serves_every_step_exactly(fixture_model):
    """prepare runs once per request; each step on its context is the full forward, bit for bit."""
    _, tensors = load_case("dit_d_cfg_infer")
    dit = fixture_model.dit
    x, text = tensors["input.x"], tensors["input.text"]
    masks = {k: tensors[f"input.{k}"] for k in ("mask", "c_mask", "ref", "ref_mask")}
    with torch.no_grad():
        ctx = dit.prepare(text, target_frames=x.shape[1], cfg_infer=True, **masks)
        for scale, time in ((1.0, 0.1), (-2.0, 0.9)):
            got = dit.step(x * scale, torch.tensor(time), ctx)
            want = dit(x * scale, text, torch.tensor(time), cfg_infer=True, **masks)
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_context_copies_only_into_one_of_its_layout(fixture_model):
    _, tensors = load_case("dit_b_ref_cmask")
    dit = fixture_model.dit
    x, text, ref = tensors["input.x"], tensors["input.text"], tensors["input.ref"]
    with torch.no_grad():
        with_ref = dit.prepare(text, target_frames=x.shape[1], ref=ref, ref_mask=tensors["input.ref_mask"])
        without_ref = dit.prepare(text, target_frames=x.shape[1])
        static = with_ref.clone()
        static.copy_(dit.prepare(text * 2, target_frames=x.shape[1], ref=ref, ref_mask=tensors["input.ref_mask"]))
    assert not torch.equal(static.text, with_ref.text)
    with pytest.raises(ValueError, match="differ"):
        static.copy_(without_ref)
