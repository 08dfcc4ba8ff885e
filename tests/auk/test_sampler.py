"""Time grids and the Euler/CFG sampler against the reference fixtures."""

import pytest
import torch

from auk_app import build_time_grid, sample_latents
from auk_app.auk.sampler import source_origin
from auk_app.auk.checkpoint import FLASH_T_GRID
from tests.conftest import assert_matches_reference, load_case

SAMPLER_CASES = ["sampler_g_nfe4_cfg2", "sampler_h_sway", "sampler_i_t_grid"]


def test_time_grid_queries():
    meta, tensors = load_case("time_grid")
    for query, result in zip(meta["args"]["queries"], meta["results"]["queries"]):
        kwargs = dict(nfe=query["nfe"], sway_sampling_coef=query["sway_sampling_coef"], t_grid=query["t_grid"])
        if result["ok"]:
            grid = build_time_grid(**kwargs)
            assert grid.dtype == torch.float32
            torch.testing.assert_close(grid, tensors["output." + result["tensor"]], rtol=0, atol=0)
        else:
            with pytest.raises(ValueError, match="strictly increasing"):
                build_time_grid(**kwargs)


@pytest.mark.parametrize(
    "t_grid, match",
    [([0.0, float("nan"), 1.0], "finite"), ([[0.0, 1.0]], "1-D"), ([1.0, 0.5], "strictly increasing")],
)
def test_time_grid_rejections_say_what_is_wrong(t_grid, match):
    with pytest.raises(ValueError, match=match):
        build_time_grid(nfe=4, sway_sampling_coef=None, t_grid=t_grid)


def test_flash_grid_is_the_float32_sway_grid():
    grid = build_time_grid(nfe=4, sway_sampling_coef=-1.0, t_grid=None)
    assert grid.tolist() == list(FLASH_T_GRID)


def _run(dit, meta, tensors, **overrides):
    """The sampler on a fixture case; returns the latents and every DiT step as (x, t, velocity)."""
    args = meta["args"]
    calls = []
    real_step = dit.step

    def recorded_step(x, time, ctx):
        out = real_step(x, time, ctx)
        calls.append((x.clone(), time.clone(), out.clone()))
        return out

    dit.step = recorded_step  # the real step, recorded; the instance attribute shadows the method
    try:
        kwargs = dict(
            text=tensors["input.text"], c_mask=tensors["input.c_mask"], ref=tensors["input.ref"],
            ref_mask=tensors["input.ref_mask"], gen_frames=args["gen_frames"], nfe=args["nfe"],
            cfg_strength=args["cfg_strength"], sway_sampling_coef=args["sway_sampling_coef"],
            t_grid=args["t_grid"], seed=args["seed"],
        )
        kwargs.update(overrides)
        latents = sample_latents(dit, **kwargs)
    finally:
        del dit.step
    return latents, calls


@pytest.mark.parametrize("case", SAMPLER_CASES)
def test_sampler_matches_reference(fixture_model, case):
    meta, tensors = load_case(case)
    latents, calls = _run(fixture_model.dit, meta, tensors)
    assert_matches_reference(latents, tensors["output.latents"])
    assert len(calls) == meta["results"]["dit_calls"]
    assert {out.shape[0] for _, _, out in calls} == {meta["results"]["dit_call_batch"]}
    torch.testing.assert_close(calls[0][0], tensors["output.initial_noise"], rtol=0, atol=0)
    for k, (x, t, out) in enumerate(calls):
        assert_matches_reference(x, tensors["output.step_x"][k])
        assert float(t) == float(tensors["output.step_t"][k])
        assert_matches_reference(out, tensors["output.step_dit_out"][k])
    assert fixture_model.dit.text_cond is None  # the module's text cache is not the sampler's state


def test_generator_gives_the_seed_path_bit_for_bit(fixture_model):
    meta, tensors = load_case("sampler_g_nfe4_cfg2")
    by_seed, _ = _run(fixture_model.dit, meta, tensors)
    generator = torch.Generator("cpu").manual_seed(meta["args"]["seed"])
    by_generator, _ = _run(fixture_model.dit, meta, tensors, seed=None, generator=generator)
    assert torch.equal(by_seed, by_generator)
    state = torch.get_rng_state()
    _run(fixture_model.dit, meta, tensors)
    assert torch.equal(state, torch.get_rng_state()), "the global RNG must not be touched"


def test_noise_scale_multiplies_the_initial_noise_and_changes_the_path(fixture_model):
    meta, tensors = load_case("sampler_g_nfe4_cfg2")
    _, calls = _run(fixture_model.dit, meta, tensors, noise_scale=0.5)
    torch.testing.assert_close(calls[0][0], 0.5 * tensors["output.initial_noise"], rtol=0, atol=0)
    assert float(calls[0][1]) == float(tensors["output.step_t"][0])
    assert not torch.allclose(calls[1][0], tensors["output.step_x"][1], atol=1e-3)  # a different path, not a relabel


def test_an_origin_moves_the_start_and_the_noise_stays_the_seeds(fixture_model):
    meta, tensors = load_case("sampler_g_nfe4_cfg2")
    origin = torch.linspace(-1, 1, tensors["output.initial_noise"].numel()).reshape(tensors["output.initial_noise"].shape)
    _, calls = _run(fixture_model.dit, meta, tensors, noise_scale=0.02, origin=origin)
    torch.testing.assert_close(calls[0][0], origin + 0.02 * tensors["output.initial_noise"], rtol=0, atol=1e-7)


def test_the_source_origin_is_the_references_valid_frames_then_zeros():
    ref = torch.arange(1.0, 13.0).reshape(1, 3, 4)
    mask = torch.tensor([[True, True, False]])  # the encoder's extra, partial frame is padding
    origin = source_origin(ref, mask, 5)
    assert origin.shape == (1, 5, 4)
    assert torch.equal(origin[:, :2], ref[:, :2]) and not origin[:, 2:].any()
    assert torch.equal(source_origin(ref, None, 2), ref[:, :2])
    assert not source_origin(torch.zeros(1, 0, 4), None, 3).any()  # no source: the flow starts at noise


def test_cfg_below_threshold_runs_only_the_conditional_branch(fixture_model):
    meta, tensors = load_case("sampler_g_nfe4_cfg2")
    latents, calls = _run(fixture_model.dit, meta, tensors, cfg_strength=0.0)
    assert {out.shape[0] for _, _, out in calls} == {1}
    guided, _ = _run(fixture_model.dit, meta, tensors)
    assert (latents - guided).abs().max() > 1e-3


def test_on_step_reports_progress_and_can_stop(fixture_model):
    meta, tensors = load_case("sampler_g_nfe4_cfg2")
    seen = []

    def on_step(done, total):
        seen.append((done, total))
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(fixture_model.dit, meta, tensors, on_step=on_step)
    assert seen == [(1, 4), (2, 4)]
    assert fixture_model.dit.text_cond is None
