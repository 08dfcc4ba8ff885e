"""The step cache and the guidance interval on the reference fixtures' DiT, float32 on the CPU.

Each solve's DiT calls are recorded (the real step, as in test_sampler), and the whole trajectory
is then rebuilt from them by hand: Euler steps with the CFG blend where a step ran both rows, and
the previous step's blended velocity where it ran none. The sampler must land on exactly that, so
these tests pin which steps reuse, which are guided, and what a reused step takes.
"""

import pytest
import torch

from auk_app.auk.configs import BASE_RECIPE, flash_recipe
from auk_app.auk.sampler import SolveSpec, build_time_grid, draw_noise, solve
from auk_app.auk.step_reuse import StepTally, relative_change
from tests.conftest import load_case

BASE = dict(nfe=32, cfg_strength=2.0, sway_sampling_coef=-1.0)  # the Base recipe


@pytest.fixture(scope="module")
def inputs():
    _, tensors = load_case("sampler_h_sway")
    return dict(text=tensors["input.text"], c_mask=tensors["input.c_mask"], ref=tensors["input.ref"],
                ref_mask=tensors["input.ref_mask"], gen_frames=9, seed=7)


def _recorded_solve(dit, **spec):
    """(latents, tally, DiT calls as (x, t, velocity rows)) of one solve."""
    calls, real_step = [], dit.step

    def recorded_step(x, time, ctx):
        out = real_step(x, time, ctx)
        calls.append((x.clone(), float(time), out.clone()))
        return out

    dit.step = recorded_step
    try:
        tally = StepTally()
        latents = solve(dit, SolveSpec(**spec, tally=tally))
    finally:
        del dit.step
    return latents, tally, calls


def _rebuilt(dit, inputs, calls, cfg: float, reused: set[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The Euler solve rebuilt from the recorded calls, reusing at the steps in ``reused``; also the
    state before each step."""
    grid = build_time_grid(nfe=32, sway_sampling_coef=-1.0, t_grid=None)
    x = draw_noise(9, dit.latent_dim, seed=inputs["seed"], generator=None, device="cpu", dtype=torch.float32)
    made, states, v = iter(calls), [], None
    for i in range(32):
        states.append(x)
        if i not in reused:
            _, _, out = next(made)
            v = out[:1] + cfg * (out[:1] - out[1:]) if out.shape[0] == 2 else out
        x = x + (grid[i + 1] - grid[i]) * v
    assert next(made, None) is None
    return x, states


def test_modulated_input_is_the_first_blocks_own_for_the_target_frames(fixture_model, inputs):
    # The probe a step cache compares is what the first block really modulates, in both CFG rows.
    dit, seen = fixture_model.dit, []
    hook = dit.transformer_blocks[0].attn_norm_x.register_forward_hook(lambda m, args, out: seen.append(out[0]))
    x, time = torch.randn(1, 9, 64), torch.tensor(0.3)
    try:
        with torch.inference_mode():
            ctx = dit.prepare(inputs["text"], target_frames=9, c_mask=inputs["c_mask"], ref=inputs["ref"],
                              ref_mask=inputs["ref_mask"], cfg_infer=True)
            dit.step(x, time, ctx)
            probe = dit.modulated_input(x, time)
    finally:
        hook.remove()
    inside = seen[0][:, -9:]  # [reference | target] rows, conditional then unconditional
    torch.testing.assert_close(probe, inside[:1], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(probe, inside[1:], rtol=1e-6, atol=1e-6)


def test_threshold_zero_is_the_full_solve_bit_for_bit(fixture_model, inputs):
    full, tally, calls = _recorded_solve(fixture_model.dit, **inputs, **BASE)
    off, off_tally, _ = _recorded_solve(fixture_model.dit, **inputs, **BASE, step_cache=0.0)
    assert torch.equal(full, off)
    assert tally == off_tally == StepTally(dit_steps=32, guided_steps=32) and len(calls) == 32


def test_a_cached_step_reuses_the_previous_velocity_never_twice_in_a_row(fixture_model, inputs):
    dit = fixture_model.dit
    latents, tally, calls = _recorded_solve(dit, **inputs, **BASE, step_cache=0.28)
    grid = build_time_grid(nfe=32, sway_sampling_coef=-1.0, t_grid=None).tolist()
    ran = [grid.index(t) for _, t, _ in calls]  # the steps that ran the DiT
    reused = set(range(32)) - set(ran)
    assert 4 <= len(reused) <= 16 and tally == StepTally(dit_steps=32 - len(reused), reused_steps=len(reused),
                                                         guided_steps=32 - len(reused))
    assert {0, 31}.isdisjoint(reused) and not any(i + 1 in reused for i in reused)
    rebuilt, states = _rebuilt(dit, inputs, calls, 2.0, reused)
    torch.testing.assert_close(latents, rebuilt, rtol=1e-6, atol=1e-6)
    with torch.inference_mode():  # a step reuses exactly where the probe moved less than the threshold
        for i in range(1, 31):
            if i - 1 not in reused:
                moved = relative_change(dit.modulated_input(states[i], torch.tensor(grid[i])),
                                        dit.modulated_input(states[i - 1], torch.tensor(grid[i - 1])))
                assert (i in reused) == (moved < 0.28), (i, moved)


def test_guidance_runs_both_rows_only_inside_its_interval(fixture_model, inputs):
    dit = fixture_model.dit
    latents, tally, calls = _recorded_solve(dit, **inputs, **BASE, cfg_interval=(0.1, 0.8))
    rows = {t: out.shape[0] for _, t, out in calls}
    assert len(calls) == 32 and all(rows[t] == (2 if 0.1 <= t <= 0.8 else 1) for t in rows)
    assert tally.guided_steps == sum(r == 2 for r in rows.values()) and 5 < tally.guided_steps < 32
    rebuilt, _ = _rebuilt(dit, inputs, calls, 2.0, set())
    torch.testing.assert_close(latents, rebuilt, rtol=1e-6, atol=1e-6)
    full, _, _ = _recorded_solve(dit, **inputs, **BASE)
    whole, _, _ = _recorded_solve(dit, **inputs, **BASE, cfg_interval=(0.0, 1.0))
    assert torch.equal(whole, full) and not torch.allclose(latents, full, rtol=1e-3, atol=1e-3)


def test_both_together_reuse_across_a_guidance_switch(fixture_model, inputs):
    latents, tally, calls = _recorded_solve(fixture_model.dit, **inputs, **BASE, step_cache=0.28,
                                            cfg_interval=(0.1, 0.8))
    grid = build_time_grid(nfe=32, sway_sampling_coef=-1.0, t_grid=None).tolist()
    reused = set(range(32)) - {grid.index(t) for _, t, _ in calls}
    assert reused and tally.dit_steps + tally.reused_steps == 32
    rebuilt, _ = _rebuilt(fixture_model.dit, inputs, calls, 2.0, reused)
    torch.testing.assert_close(latents, rebuilt, rtol=1e-6, atol=1e-6)


def test_flash_takes_neither_knob_and_says_so():
    asked = {"step_cache": 0.2, "cfg_interval": (0.1, 0.9), "nfe": None}
    flash = flash_recipe().over(asked)
    assert flash.step_cache == 0.0 and flash.cfg_interval is None and flash.ignored == ("cfg_interval", "step_cache")
    base = BASE_RECIPE.over(asked)
    assert base.step_cache == 0.2 and base.cfg_interval == (0.1, 0.9) and base.ignored == ()
    spec = SolveSpec.of(base, text=None, c_mask=None, ref=None, ref_mask=None, gen_frames=1)
    assert spec.step_cache == 0.2 and spec.cfg_interval == (0.1, 0.9)
