"""The DiT step's static-shape path: buckets, padding, static buffers; the capture itself on CUDA only.

Off CUDA the static path runs the same buffers eagerly, so everything but the capture is checked
here on the CPU against the plain prepare/step pair and the reference fixtures.
"""

import pytest
import torch

from auk_app import AuKTransformer, dit_state_dict
from auk_app.auk.step_graphs import REF_MULTIPLE, TARGET_MULTIPLE, TEXT_MULTIPLE, StepGraphs, bucket, pad_to_bucket
from tests.auk.test_sampler import SAMPLER_CASES, _run
from tests.conftest import FIXTURES, assert_matches_reference, fixture_config, load_case, requires_cuda


def _dit(**overrides) -> AuKTransformer:
    """A fresh fixture DiT (its own graph cache), float32 on the CPU."""
    from safetensors.torch import load_file

    dit = AuKTransformer(**{**fixture_config("dit_config.json"), **overrides})
    dit.load_state_dict(dit_state_dict(load_file(str(FIXTURES / "dit_weights_released.safetensors"))))
    return dit.eval()


def _request(n_ref: int | None, *, ref_mask: bool = True, extra_masked_ref_frame: bool = False):
    """One request (batch 1) built from the dit_a_plain inputs, with an optional reference."""
    _, tensors = load_case("dit_a_plain")
    x, text, time = tensors["input.x"][:1], tensors["input.text"][:1], tensors["input.time"][0]
    generator = torch.Generator().manual_seed(5)
    request = dict(text=text, c_mask=None, ref=torch.zeros(1, 0, x.shape[2]), ref_mask=None, target_frames=x.shape[1])
    if n_ref is not None:
        request["ref"] = torch.randn(1, n_ref, x.shape[2], generator=generator)
        if ref_mask:
            mask = torch.ones(1, n_ref, dtype=torch.bool)
            mask[:, -1] = not extra_masked_ref_frame
            request["ref_mask"] = mask
    return x, time, request


def test_bucket_rounds_up_to_the_multiple():
    assert [bucket(n, 64) for n in (0, 1, 64, 65, 500)] == [0, 64, 64, 128, 512]
    assert [bucket(n, 50) for n in (0, 250, 251)] == [0, 250, 300]


REQUESTS = {
    "text_only": dict(n_ref=None),
    "reference_with_masked_extra_frame": dict(n_ref=6, extra_masked_ref_frame=True),
    "reference_without_mask": dict(n_ref=6, ref_mask=False),
}


@pytest.mark.parametrize("cfg_infer", [True, False])
@pytest.mark.parametrize("name", REQUESTS)
def test_padded_step_equals_the_exact_shape_step(name, cfg_infer):
    dit = _dit()
    x, time, request = _request(**REQUESTS[name])
    padded = pad_to_bucket(dit, **request)
    assert padded.target_frames == bucket(x.shape[1], TARGET_MULTIPLE) > x.shape[1]
    assert padded.text.shape[1] == bucket(request["text"].shape[1], TEXT_MULTIPLE)
    if padded.ref is not None:
        assert padded.ref.shape[1] == bucket(request["ref"].shape[1], REF_MULTIPLE)
    graphs = StepGraphs(dit)
    with torch.no_grad():
        want = graphs.stepper(**request, cfg_infer=cfg_infer, static=False)(x, time)
        got = graphs.stepper(**request, cfg_infer=cfg_infer, static=True)(x, time)
    assert got.shape == want.shape == (2 if cfg_infer else 1, *x.shape[1:])
    # Padding changes only the GEMM and attention blocking: float32 rounding, well inside the bound.
    assert_matches_reference(got, want)


def test_padding_that_would_move_valid_frames_keeps_the_exact_shape():
    x, time, request = _request(None)
    unmasked = pad_to_bucket(_dit(attn_mask_enabled=False), **request)
    assert unmasked.mask is None and unmasked.target_frames == x.shape[1]
    assert unmasked.text.shape == request["text"].shape
    # Text padding of its own without an audio mask: the single blocks would run on plain positions.
    c_mask = torch.ones(request["text"].shape[:2], dtype=torch.bool)
    c_mask[:, -2:] = False
    own_padding = pad_to_bucket(_dit(), **{**request, "c_mask": c_mask})
    assert own_padding.mask is None and own_padding.text.shape == request["text"].shape
    assert torch.equal(own_padding.c_mask, c_mask)


def test_a_bucket_serves_the_next_request_of_its_shape():
    dit = _dit()
    x, time, first = _request(6, extra_masked_ref_frame=True)
    second = dict(first, text=first["text"] * -0.5, ref=first["ref"].flip(1), target_frames=x.shape[1] - 3)
    graphs = StepGraphs(dit)
    with torch.no_grad():
        graphs.stepper(**first, cfg_infer=True, static=True)(x, time)
        got = graphs.stepper(**second, cfg_infer=True, static=True)(x[:, 3:], time * 0.5)
        want = graphs.stepper(**second, cfg_infer=True, static=False)(x[:, 3:], time * 0.5)
    assert len(graphs) == 1  # one bucket: 12 and 9 frames both pad to 64
    assert_matches_reference(got, want)


@pytest.mark.parametrize("case", SAMPLER_CASES)
def test_static_steps_reproduce_the_sampler_fixtures(fixture_model, case):
    meta, tensors = load_case(case)
    _, calls = _run(fixture_model.dit, meta, tensors)
    args = meta["args"]
    step = StepGraphs(_dit()).stepper(
        text=tensors["input.text"], c_mask=tensors["input.c_mask"], ref=tensors["input.ref"],
        ref_mask=tensors["input.ref_mask"], target_frames=args["gen_frames"], cfg_infer=True, static=True,
    )
    with torch.no_grad():
        for k, (x, t, _) in enumerate(calls):
            assert_matches_reference(step(x, t), tensors["output.step_dit_out"][k])


def test_the_default_off_cuda_runs_prepare_and_step_without_buffers():
    dit = _dit()
    graphs = StepGraphs(dit)
    x, time, request = _request(6)
    with torch.no_grad():
        got = graphs.stepper(**request, cfg_infer=True)(x, time)
        want = dit(x, request["text"], time, ref=request["ref"], ref_mask=request["ref_mask"], cfg_infer=True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert len(graphs) == 0


def test_graphs_are_captured_only_for_weights_that_stayed_put():
    dit = _dit()
    graphs = StepGraphs(dit)
    x, time, request = _request(None)
    with torch.no_grad():
        graphs.stepper(**request, cfg_infer=False, static=True)(x, time)
    assert len(graphs) == 1
    assert not graphs._buckets.weights_stayed(dit) and len(graphs) == 0  # unseen weights: buckets dropped
    assert graphs._buckets.weights_stayed(dit)
    dit.double()  # new storage, as an offloaded module gets when it comes back
    assert not graphs._buckets.weights_stayed(dit)


def test_graphs_run_at_their_compute_dtype_whatever_the_callers_autocast():
    """The step's precision is the one its owner gave, not the ambient autocast: under an outer
    bf16 autocast a float32 StepGraphs still computes in float32, and a bf16 one casts itself."""
    dit = _dit()
    x, time, request = _request(6)
    with torch.no_grad():
        want = StepGraphs(dit).stepper(**request, cfg_infer=True)(x, time)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            float32 = StepGraphs(dit).stepper(**request, cfg_infer=True)(x, time)
        bf16 = StepGraphs(dit, compute=torch.bfloat16).stepper(**request, cfg_infer=True)(x, time)
    torch.testing.assert_close(float32, want, rtol=0, atol=0)
    assert bf16.dtype == torch.bfloat16 and not torch.equal(bf16.float(), want)


@requires_cuda
@pytest.mark.parametrize(
    ("precision", "compiled"),
    # Compiled in the served precision only: each other one is a compilation of its own.
    [("float32", False), ("autocast-bf16", False), ("bfloat16", False), ("bfloat16", True)],
)
def test_graph_replay_equals_the_eager_step_on_cuda(precision, compiled):
    from auk_app.runtime import pick_precision

    device = torch.device("cuda")
    chosen = pick_precision(device, precision)
    dit = _dit().to(device=device, dtype=chosen.weights)
    graphs = StepGraphs(dit, compute=chosen.compute)
    if compiled:
        dit.compile_blocks()
    x, time, request = _request(6, extra_masked_ref_frame=True)
    request = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in request.items()}
    x, time = x.to(device, chosen.weights), time.to(device)
    # The first request runs eagerly (weights not yet seen), the second captures, the third replays
    # that graph under a new autocast context.
    for scale in (1.0, -0.5, 2.0):
        inputs = dict(request, text=request["text"] * scale)
        with torch.inference_mode():
            got = graphs.stepper(**inputs, cfg_infer=True)(x, time)
            with torch.compiler.set_stance("force_eager"):
                want = graphs.stepper(**inputs, cfg_infer=True, static=False)(x, time)
        tolerance = 1e-5 if precision == "float32" else 2e-2  # bf16 GEMMs of other blocking
        torch.testing.assert_close(got.float(), want.float(), rtol=tolerance, atol=tolerance)
    assert len(graphs) == 1


def test_compiled_blocks_step_equals_the_eager_step():
    """Regional compilation (Inductor's CPU code here, Triton on CUDA) against the same module
    forced eager; the static path is the one a CUDA graph captures."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    dit = _dit()
    dit.compile_blocks()
    x, time, request = _request(6, extra_masked_ref_frame=True)
    graphs = StepGraphs(dit)
    with torch.no_grad():
        with torch.compiler.set_stance("force_eager"):
            want = graphs.stepper(**request, cfg_infer=True, static=True)(x, time)
        got = graphs.stepper(**request, cfg_infer=True, static=True)(x, time)
    assert_matches_reference(got, want)
    assert counters["stats"]["unique_graphs"] >= 2  # the compiled kernels really ran: one graph per block kind
