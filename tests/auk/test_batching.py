"""Step batching: concurrent solves share DiT steps, and each still gets its solo result.

Requests run from threads on tiny seeded models on the CPU. A gate in the first request's
progress holds the driver after its first step until every request has been submitted, so
the requests really share steps (checked with the batcher's counters) instead of finishing
one after another by chance. Solo runs (one request in the batcher) take the exact-shape
stepper, as ``sample_latents`` does; shared steps run padded contexts side by side, which moves
results by rounding only, so comparisons use the reference fixtures' float32 tolerance
(``|got - want| <= 1e-5 + 1e-5·|want|``; measured: at most 7e-7 on latents of magnitude ~4).
"""

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
import torch

from auk_app.auk.batching import StepBatcher
from auk_app.auk.dit import AuKStepContext, AuKTransformer
from auk_app.auk.pipeline import AuKPipeline
from auk_app.auk.request import EditRequest
from auk_app.auk.sampler import SolveSpec, sample_latents, solve
from auk_app.auk.step_graphs import StepGraphs
from auk_app.auk.step_reuse import StepTally
from auk_app.config import Limits
from auk_app.errors import Cancelled
from tests.auk.test_pipeline import _tone, weights  # noqa: F401  (weights: the module's checkpoint fixture)
from tests.conftest import requires_cuda

TOLERANCE = dict(rtol=1e-5, atol=1e-5)
GATE_SECONDS = 60  # far above the few seconds the others need to submit; a failure then shows as a count


@pytest.fixture(scope="module")
def dit() -> AuKTransformer:
    torch.manual_seed(0)
    return AuKTransformer(dim=32, heads=2, dim_head=16, ff_mult=2.0, latent_dim=8, text_hidden_dim=12,
                          num_layers=1, num_single_layers=1).eval()


def _solve_request(index: int, frames: int, **knobs) -> dict:
    """One request: its own text length, a reference with a masked last frame, a seed."""
    generator = torch.Generator().manual_seed(100 + index)
    ref_mask = torch.ones(1, 30, dtype=torch.bool)
    ref_mask[:, -1] = False
    return dict(text=torch.randn(1, 7 + index, 12, generator=generator), c_mask=None,
                ref=torch.randn(1, 30, 8, generator=generator), ref_mask=ref_mask, gen_frames=frames,
                seed=index, **knobs)


def _wait_for(count: Callable[[], int], wanted: int) -> None:
    deadline = time.monotonic() + GATE_SECONDS
    while count() < wanted and time.monotonic() < deadline:
        time.sleep(0.01)


def _in_threads(run, n: int) -> tuple[list, list]:
    """``run(i)`` for i < n, each in its own thread: (results, exceptions) by index."""
    results, errors = [None] * n, [None] * n

    def target(i):
        try:
            results[i] = run(i)
        except BaseException as exc:  # checked by the caller, request by request
            errors[i] = exc

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a request hung"
    return results, errors


def _batched(batcher: StepBatcher, requests: list[dict], gate_on: int = 0, wanted: int | None = None):
    """Every request through ``batcher`` at once; request ``gate_on`` holds the first step."""
    wanted = len(requests) if wanted is None else wanted

    def run(i):
        request = dict(requests[i])
        if i == gate_on:
            own = request.get("on_step")

            def on_step(done, total):
                if done == 1:
                    _wait_for(lambda: batcher.live, wanted)
                if own is not None:
                    own(done, total)

            request["on_step"] = on_step
        return batcher.sample(SolveSpec(**request))

    return _in_threads(run, len(requests))


# ----------------------------------------------------------------------------- the batcher on a DiT


def test_concat_lays_requests_rows_end_to_end(dit):
    contexts = [dit.prepare(torch.randn(1, 5, 12), target_frames=4, cfg_infer=cfg) for cfg in (True, False)]
    joined = AuKStepContext.concat(contexts)
    assert joined.branches == 1 and joined.text.shape[0] == 3
    assert torch.equal(joined.text[2:], contexts[1].text) and torch.equal(joined.rope_single[0][:2], contexts[0].rope_single[0])


def test_concurrent_solves_share_steps_and_equal_their_solo_runs(dit):
    # Each its own length (one 64-frame bucket), grid, nfe, cfg (0: one row) and seed.
    knobs = [dict(nfe=6, cfg_strength=2.0), dict(nfe=4, cfg_strength=0.0),
             dict(nfe=8, cfg_strength=1.5, sway_sampling_coef=-1.0), dict(t_grid=[0, 0.3, 0.7, 1], cfg_strength=2.0)]
    requests = [_solve_request(i, frames, **k) for i, (frames, k) in enumerate(zip((40, 50, 33, 60), knobs))]
    solo = [sample_latents(dit, **request) for request in requests]
    batcher = StepBatcher(StepGraphs(dit), max_batch=4)
    steps: list[list[int]] = [[] for _ in requests]
    for i, request in enumerate(requests):
        request["on_step"] = lambda done, total, i=i: steps[i].append((done, total))
    got, errors = _batched(batcher, requests)
    assert errors == [None] * 4
    assert batcher.largest_batch == 4 and batcher.batched_steps >= 3
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, **TOLERANCE)
    assert [s[-1] for s in steps] == [(6, 6), (4, 4), (8, 8), (3, 3)]  # each its own progress, in order
    assert all([d for d, _ in s] == list(range(1, len(s) + 1)) for s in steps)
    assert batcher.live == 0


def test_cached_and_interval_guided_solves_share_steps_and_equal_their_solo_runs(dit):
    # A step cache skips some of a request's DiT steps and a guidance interval switches its rows
    # between two and one mid-solve; the others step on meanwhile, and each still gets its solo run.
    knobs = [dict(nfe=12, cfg_strength=2.0, step_cache=1.0), dict(nfe=10, cfg_strength=2.0, cfg_interval=(0.2, 0.7)),
             dict(nfe=10, cfg_strength=2.0, step_cache=1.0, cfg_interval=(0.3, 1.0)), dict(nfe=8, cfg_strength=0.0)]
    requests = [_solve_request(i, frames, **k) for i, (frames, k) in enumerate(zip((40, 50, 33, 60), knobs))]
    solo_tallies = [StepTally() for _ in requests]
    solo = [solve(dit, SolveSpec(**request, tally=tally)) for request, tally in zip(requests, solo_tallies)]
    tallies = [StepTally() for _ in requests]
    for request, tally in zip(requests, tallies):
        request["tally"] = tally
    batcher = StepBatcher(StepGraphs(dit), max_batch=4)
    got, errors = _batched(batcher, requests)
    assert errors == [None] * 4 and batcher.largest_batch == 4
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, **TOLERANCE)
    assert [t.reused_steps for t in solo_tallies] == [5, 0, 4, 0]  # every other step but the first and last
    assert [t.guided_steps for t in solo_tallies][1] < 10 and solo_tallies[3].guided_steps == 0
    for alone, shared in zip(solo_tallies, tallies):
        assert (shared.dit_steps, shared.reused_steps, shared.guided_steps) == (
            alone.dit_steps, alone.reused_steps, alone.guided_steps)
        assert alone.shared_steps == 0 and 0 < shared.shared_steps <= shared.dit_steps


def test_max_batch_caps_a_step_and_the_others_take_turns(dit):
    requests = [_solve_request(i, 40, nfe=5, cfg_strength=2.0) for i in range(3)]
    solo = [sample_latents(dit, **request) for request in requests]
    batcher = StepBatcher(StepGraphs(dit), max_batch=2)
    got, errors = _batched(batcher, requests)
    assert errors == [None] * 3 and batcher.largest_batch == 2
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, **TOLERANCE)


def test_lone_requests_taking_turns_each_step_on_their_own_static_context(dit, monkeypatch):
    # The static-buffer path (a CUDA graph's inputs, run eagerly here) keeps one context per bucket.
    # With max_batch 1 requests of one bucket take turns alone: each must step on its own context,
    # not on the one the previous request copied in.
    graphs = StepGraphs(dit)
    stepper = graphs.stepper
    monkeypatch.setattr(graphs, "stepper", lambda **request: stepper(**request, static=True))
    requests = [_solve_request(i, 40, nfe=5, cfg_strength=2.0) for i in range(3)]
    solo = [sample_latents(dit, graphs=graphs, **request) for request in requests]
    batcher = StepBatcher(graphs, max_batch=1)
    got, errors = _batched(batcher, requests)
    assert errors == [None] * 3 and batcher.largest_batch == 1
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, rtol=0, atol=0)  # alone: the solo stepper's own arithmetic


@pytest.mark.parametrize("failure", [Cancelled("stopped"), RuntimeError("a broken progress bar")])
def test_a_request_whose_callback_raises_leaves_alone(dit, failure):
    requests = [_solve_request(i, 40, nfe=6, cfg_strength=2.0) for i in range(3)]
    solo = [sample_latents(dit, **request) for request in requests]
    seen = []

    def failing(done, total):
        seen.append(done)
        if done == 2:
            raise failure

    requests[1]["on_step"] = failing
    batcher = StepBatcher(StepGraphs(dit), max_batch=4)
    got, errors = _batched(batcher, requests)
    assert errors[1] is failure and got[1] is None and seen == [1, 2]  # raised in its own thread, no step after
    assert errors[0] is None and errors[2] is None and batcher.largest_batch == 3
    for i in (0, 2):
        torch.testing.assert_close(got[i], solo[i], **TOLERANCE)
    assert batcher.live == 0


def test_requests_of_different_buckets_do_not_share_steps(dit):
    # 40 frames pad to 64, 100 frames to 128: two buckets, each request alone in its own.
    requests = [_solve_request(0, 40, nfe=4, cfg_strength=2.0), _solve_request(1, 100, nfe=4, cfg_strength=2.0)]
    solo = [sample_latents(dit, **request) for request in requests]
    batcher = StepBatcher(StepGraphs(dit), max_batch=4)
    got, errors = _batched(batcher, requests)
    assert errors == [None, None] and batcher.largest_batch == 1 and batcher.batched_steps == 0
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, rtol=0, atol=0)  # alone: the exact solo stepper


def _on_cuda(dim: int, dim_head: int, frames: list[int], **knobs) -> tuple[AuKTransformer, list[dict]]:
    """A seeded one-block DiT of width ``dim`` on CUDA, and one request per entry of ``frames`` there."""
    device = torch.device("cuda")
    torch.manual_seed(0)
    model = AuKTransformer(dim=dim, heads=2, dim_head=dim_head, ff_mult=2.0, latent_dim=8, text_hidden_dim=12,
                           num_layers=1, num_single_layers=1).to(device).eval()
    requests = [{k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in _solve_request(i, n, **knobs).items()}
                for i, n in enumerate(frames)]
    return model, requests


@requires_cuda
def test_on_cuda_a_lone_request_replays_its_graph_and_shared_steps_stay_close():
    model, requests = _on_cuda(32, 16, [40, 41, 42])
    for request, knobs in zip(requests, (dict(nfe=4, cfg_strength=2.0), dict(nfe=5, cfg_strength=0.0), dict(nfe=6))):
        request.update(knobs)
    graphs = StepGraphs(model)  # float32
    sample_latents(model, graphs=graphs, **requests[0])  # weights not yet seen: eager; the next requests capture
    solo = [sample_latents(model, graphs=graphs, **request) for request in requests]
    batcher = StepBatcher(graphs, max_batch=4)
    alone = batcher.sample(SolveSpec(**requests[0]))
    got, errors = _batched(batcher, requests)
    torch.testing.assert_close(alone, solo[0], rtol=0, atol=0)  # alone: the same graph replays
    assert errors == [None] * 3 and batcher.largest_batch == 3 and len(graphs) == 2  # cfg and not
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, rtol=1e-4, atol=1e-4)  # eager batched kernels vs the graph's


# ----------------------------------------------------------------------------- through the pipeline


@pytest.fixture(scope="module")
def pipeline(weights):  # noqa: F811
    return AuKPipeline(weights / "AuK", text_encoder_path=weights / "Qwen2.5-Omni-3B", device="cpu",
                       limits=Limits(max_input_seconds=3.0), max_batch=4)


def _edits(clip) -> list[EditRequest]:
    """Four edits of one clip: other instructions, seeds, nfe, cfg and grids; one 64-frame bucket."""
    return [
        EditRequest("Raise the pitch by 2 semitones.", audio=clip, seed=1, nfe=6),
        EditRequest("Decrease the volume by 10 dB.", audio=clip, seed=2, nfe=4, cfg=0.0),
        EditRequest("Remove the background noise.", audio=clip, seed=3, nfe=5, cfg=1.0, sway=None),
        EditRequest("Increase the volume by 3 dB.", audio=clip, seed=4, t_grid="0,0.4,0.8,1"),
    ]


def _generate_all(pipeline, edits, hooks: dict | None = None) -> tuple[list, list]:
    """Every edit through ``pipeline`` from its own thread; the first holds its first step.
    ``hooks[i]`` may give request i its own ``progress`` and ``should_stop``."""
    hooks = hooks or {}

    def run(i):
        own = dict(hooks.get(i, {}))
        own_progress = own.pop("progress", None)

        def progress(phase, done, total):
            if i == 0 and phase == "sample" and done == 1:
                _wait_for(lambda: pipeline.batcher.live, len(edits))
            if own_progress is not None:
                own_progress(phase, done, total)

        return pipeline.generate(edits[i], progress=progress, **own)

    pipeline.load()
    return _in_threads(run, len(edits))


def test_concurrent_edits_share_steps_and_equal_their_solo_runs(pipeline, tmp_path):
    edits = _edits(_tone(tmp_path / "clip.wav", seconds=0.8))
    solo = [pipeline.generate(edit).wav for edit in edits]
    before = pipeline.batcher.batched_steps
    got, errors = _generate_all(pipeline, edits)
    assert errors == [None] * 4
    assert pipeline.batcher.largest_batch == 4 and pipeline.batcher.batched_steps - before >= 2
    for want, result in zip(solo, got):
        np.testing.assert_allclose(result.wav, want, **TOLERANCE)
    assert [r.record.recipe.nfe for r in got] == [6, 4, 5, 3]
    assert all(r.record.steps["dit_steps"] == r.record.recipe.nfe and r.record.steps["shared_steps"] > 0 for r in got)


def test_an_edits_record_counts_the_steps_that_ran_the_dit(pipeline, tmp_path):
    clip = _tone(tmp_path / "clip.wav", seconds=0.8)
    plain = pipeline.generate(EditRequest("Raise the pitch by 2 semitones.", audio=clip, seed=1, nfe=8)).record
    fewer = pipeline.generate(EditRequest("Raise the pitch by 2 semitones.", audio=clip, seed=1, nfe=8,
                                          step_cache=1.0, cfg_interval="0.2, 0.9")).record
    assert plain.steps == dict(dit_steps=8, reused_steps=0, guided_steps=8, shared_steps=0)
    assert fewer.recipe.step_cache == 1.0 and fewer.recipe.cfg_interval == (0.2, 0.9)
    assert fewer.steps["dit_steps"] + fewer.steps["reused_steps"] == 8 and fewer.steps["reused_steps"] == 3
    assert 0 < fewer.steps["guided_steps"] < fewer.steps["dit_steps"]


def test_stop_ends_only_its_own_edit(pipeline, tmp_path):
    edits = _edits(_tone(tmp_path / "clip.wav", seconds=0.8))[:3]
    solo = [pipeline.generate(edit).wav for edit in edits]
    steps = []
    hooks = {1: dict(progress=lambda phase, done, total: steps.append(done) if phase == "sample" else None,
                     should_stop=lambda: len(steps) >= 2)}  # request 1's Stop, pressed after its second step
    got, errors = _generate_all(pipeline, edits, hooks)
    assert isinstance(errors[1], Cancelled) and steps == [1, 2]
    assert errors[0] is None and errors[2] is None
    for i in (0, 2):
        np.testing.assert_allclose(got[i].wav, solo[i], **TOLERANCE)
    assert pipeline.batcher.live == 0


# ----------------------------------------------------------------------------- packed attention


def test_packed_attention_is_each_rows_attention_over_its_valid_tokens_alone():
    from auk_app.auk.packing import attend_packed, packing_of

    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(3, 2, 10, 8, generator=generator) for _ in range(3))
    mask = torch.ones(3, 10, dtype=torch.bool)
    mask[0, 7:] = False
    mask[1, 2:4] = False  # valid tokens need not be contiguous
    mask[1, 9] = False
    out = attend_packed(q, k, v, packing_of(mask))
    for row in range(3):
        keep = mask[row]
        alone = torch.nn.functional.scaled_dot_product_attention(q[row:row + 1, :, keep], k[row:row + 1, :, keep],
                                                                 v[row:row + 1, :, keep])
        torch.testing.assert_close(out[row, keep], alone[0].transpose(0, 1).flatten(1), rtol=1e-6, atol=1e-6)
        assert not out[row, ~keep].any()  # zeros at the padding


def test_packed_shared_steps_equal_each_request_alone(dit, monkeypatch):
    # Four requests of one bucket share steps with packed attention (counted: every shared step's
    # attention calls pack); each equals its solo run, and a packed step equals the padded one.
    from auk_app.auk import dit as dit_module

    packed_calls = []
    real = dit_module.attend_packed
    monkeypatch.setattr(dit_module, "attend_packed", lambda *args: packed_calls.append(1) or real(*args))
    knobs = [dict(nfe=5, cfg_strength=2.0), dict(nfe=4, cfg_strength=0.0), dict(nfe=6, cfg_strength=1.5),
             dict(nfe=5, cfg_strength=2.0, cfg_interval=(0.2, 0.7))]
    requests = [_solve_request(i, frames, **k) for i, (frames, k) in enumerate(zip((40, 50, 33, 60), knobs))]
    solo = [solve(dit, SolveSpec(**request)) for request in requests]
    assert not packed_calls  # alone, nothing is packed
    batcher = StepBatcher(StepGraphs(dit), max_batch=4, pack=True)
    got, errors = _batched(batcher, requests)
    assert errors == [None] * 4 and batcher.largest_batch == 4 and batcher.batched_steps >= 3
    assert len(packed_calls) == 2 * batcher.batched_steps  # one joint and one single block per shared step
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, **TOLERANCE)
    contexts = [dit.prepare(torch.randn(1, 6, 12), target_frames=64, mask=torch.arange(64)[None] < 40 + i,
                            c_mask=torch.arange(6)[None] < 4 + i, ref=torch.randn(1, 30, 8),
                            ref_mask=torch.arange(30)[None] < 29, cfg_infer=True) for i in range(2)]
    padded = AuKStepContext.concat(contexts)
    packed = padded.with_packing()
    assert packed.packing is not None and padded.packing is None
    x, time = torch.randn(4, 64, 8), torch.tensor([0.3, 0.3, 0.6, 0.6])
    with torch.inference_mode():
        valid = padded.target_mask[..., None]
        torch.testing.assert_close(dit.step(x, time, packed) * valid, dit.step(x, time, padded) * valid, **TOLERANCE)


@requires_cuda
def test_on_cuda_packed_shared_steps_run_varlen_attention_and_stay_close():
    from auk_app.auk import packing

    model, requests = _on_cuda(64, 32, [40, 47, 54], nfe=4, cfg_strength=2.0)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        solo = [sample_latents(model, **request) for request in requests]
        graphs = StepGraphs(model, compute=torch.bfloat16)
        batcher = StepBatcher(graphs, max_batch=4, pack=True)
        got, errors = _batched(batcher, requests)
    assert packing.varlen_attn is not None and errors == [None] * 3 and batcher.batched_steps >= 2
    for want, result in zip(solo, got):
        torch.testing.assert_close(result, want, rtol=3e-2, atol=3e-2)  # bf16: other kernels, other sums
