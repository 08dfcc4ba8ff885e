"""Where the time of a served step goes: FLOPs, wall time and kernel time by kind.

    python -m bench.profile_speed [--device cuda] [--size real] [--out PATH]

Profiles, on the models and inputs of ``bench_speed`` (random weights at the released shapes on
CUDA, scaled down elsewhere): one CFG DiT step as served (compiled blocks replayed from a CUDA
graph on CUDA) and its eager twin, a 10 s VAE decode, and an Audex token of a CFG pair (a whole
stream of the fast loop, divided by its tokens). For each it writes the FLOPs of one call
(PyTorch's FLOP counter on the eager code), the median wall time, and the kernel time by kind
(matrix products, attention, norms, fused Triton kernels, convolutions, copies and the other
elementwise kernels) from ``torch.profiler``; on the CPU the kinds are those of the operators'
own time. The object is printed and, on CUDA, written beside the speed record as
``bench/results/<date>-<gpu>-profile.json``: the README's account of where the time goes comes
from this file.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a plain script from anywhere

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from auk_app.auk.vae_decode import fast_decode  # noqa: E402
from auk_app.runtime import pick_device, pick_precision  # noqa: E402
from bench.bench_speed import (  # noqa: E402
    LEVERS, SIZES, Sizes, audex_sampling, audex_stream, build_audex, build_auk, lever_step, results_path, sync,
)
from bench.records import publish  # noqa: E402

# First match wins: attention before matmul (its kernels hold "gemm"-like names), fused Triton
# kernels before the kinds whose names they may borrow.
KINDS = (
    ("attention", r"flash|fmha|attention|sdpa|softmax"),
    ("fused_triton", r"^triton_"),
    ("matmul", r"gemm|cutlass|cublas|xmma|nvjet|wgmma|splitk|aten::(mm|addmm|bmm|linear|matmul)\b"),
    ("norm", r"layer_?norm|rms_?norm"),
    ("convolution", r"conv|winograd|implicit_|aten::_?convolution"),
    ("copy", r"copy|memcpy|memset|cat|catarray|aten::(to|_to_copy|clone|contiguous)\b"),
)
AUDEX_TOKENS = 256


def kind_of(name: str) -> str:
    """The kind of a kernel or operator, by name; ``elementwise`` when none matches."""
    lowered = name.lower()
    return next((kind for kind, pattern in KINDS if re.search(pattern, lowered)), "elementwise")


def kernel_ms(run: Callable[[], object], device: torch.device, calls: int = 3) -> dict[str, float]:
    """Milliseconds per call of each kind: device kernels on CUDA, operators' own time on the CPU."""
    activities = [ProfilerActivity.CUDA] if device.type == "cuda" else [ProfilerActivity.CPU]
    run()
    sync(device)
    with profile(activities=activities) as prof:
        for _ in range(calls):
            run()
        sync(device)
    totals: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        if device.type == "cuda":
            if event.device_type != torch.autograd.DeviceType.CUDA:
                continue
            spent = event.self_device_time_total
        else:
            spent = event.self_cpu_time_total
        totals[kind_of(event.key)] += spent / 1000 / calls
    totals = {kind: round(ms, 3) for kind, ms in sorted(totals.items(), key=lambda kv: -kv[1])}
    return {"total": round(sum(totals.values()), 3), **totals}


def wall_ms(run: Callable[[], object], device: torch.device, repeats: int = 10) -> float:
    run()
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        run()
        sync(device)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 3)


def gflop(run: Callable[[], object]) -> float:
    """GFLOPs of one call, counted on the eager code."""
    with torch.compiler.set_stance("force_eager"), FlopCounterMode(display=False) as counter:
        run()
    return round(counter.get_total_flops() / 1e9, 3)


def _figure(run: Callable[[], object], device: torch.device, *, flops: bool = True) -> dict:
    result = {"wall_ms": wall_ms(run, device), "kernels_ms": kernel_ms(run, device)}
    if flops:
        result["gflop"] = gflop(run)
    return result


def _dit_steps(sizes: Sizes, device: torch.device, compile: bool) -> dict:
    """One CFG step as served and eagerly, on bench_speed's 814-token request at real size."""
    precision = pick_precision(device)
    dit, vae, _ = build_auk(sizes, device)
    if compile:
        dit.compile_blocks()
    generator = torch.Generator().manual_seed(0)
    text = torch.randn(1, sizes.text_tokens, sizes.dit["text_hidden_dim"], generator=generator)
    ref = torch.randn(1, sizes.ref_frames, dit.latent_dim, generator=generator)
    request = dict(text=text.to(device, precision.weights), c_mask=None, ref=ref.to(device, precision.weights),
                   ref_mask=torch.ones(1, sizes.ref_frames, dtype=torch.bool, device=device),
                   target_frames=sizes.target_frames)  # fmt: skip
    x = torch.zeros(1, sizes.target_frames, dit.latent_dim, device=device, dtype=precision.weights)
    t = torch.tensor(0.5, device=device)
    result = {}
    for name, lever in (("dit_cfg_step_eager", "eager"), ("dit_cfg_step", "compiled_graphs")):
        stance, static = LEVERS[lever]
        with lever_step(dit, request, device, stance, static) as step:
            result[name] = _figure(lambda: step(x, t), device, flops=static is False)
    latents = torch.randn(1, sizes.target_frames, dit.latent_dim, generator=generator).to(device)
    with torch.inference_mode():
        result["vae_decode_10s"] = _figure(lambda: fast_decode(vae, latents), device, flops=False)
        result["vae_decode_10s"]["gflop"] = gflop(lambda: vae.decode(latents))
    return result


def _audex_token(sizes: Sizes, device: torch.device) -> dict:
    """Per token of a CFG pair on the fast loop; FLOPs of one 2-row token without a cache."""
    lm, vocab, cond, null = build_audex(sizes, device)
    tokens = min(AUDEX_TOKENS, sizes.audex_tokens)
    params = audex_sampling(tokens)

    def stream():
        return audex_stream(lm, cond, null, vocab, params, fast=True)

    figure = _figure(stream, device, flops=False)
    per_token = {
        "wall_ms": round(figure["wall_ms"] / tokens, 4),
        "kernels_ms": {kind: round(ms / tokens, 4) for kind, ms in figure["kernels_ms"].items()},
    }
    ids = torch.tensor([cond[:1], null[:1]], device=device)
    with torch.inference_mode():
        per_token["gflop_without_cache"] = gflop(lambda: lm(ids))
    per_token["weight_gb"] = round(sum(p.numel() * p.element_size() for p in lm.parameters()) / 1e9, 3)
    per_token["output_head_gb"] = round(lm.lm_head.weight.numel() * lm.lm_head.weight.element_size() / 1e9, 3)
    return {"audex_token": per_token, "audex_tokens_profiled": tokens}


def profile_all(size: str, device: torch.device, compile: bool | None = None) -> dict:
    """The profile object for ``size`` on ``device``."""
    sizes = SIZES[size]
    compile = device.type == "cuda" if compile is None else compile
    torch.manual_seed(0)
    result = {"device": str(device), "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
              "size": size, "torch": torch.__version__, "dit_compiled": compile,
              "tokens_per_cfg_branch": sizes.text_tokens + sizes.ref_frames + sizes.target_frames}  # fmt: skip
    result.update(_dit_steps(sizes, device, compile))
    if device.type == "cuda":
        torch.cuda.empty_cache()
    result.update(_audex_token(sizes, device))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", help="cuda, cuda:N or cpu (default: CUDA when present)")
    parser.add_argument("--size", choices=list(SIZES), help="default: real on CUDA, cpu otherwise")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, help="default: on CUDA")
    parser.add_argument("--out", type=Path, help="also write the JSON here (CUDA default: beside the speed record)")
    args = parser.parse_args()
    device = pick_device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    result = profile_all(args.size or ("real" if device.type == "cuda" else "cpu"), device, args.compile)
    out = args.out
    if out is None and device.type == "cuda":
        record = results_path(result["gpu"])
        out = record.with_name(f"{record.stem}-profile.json")
    publish(result, out)


if __name__ == "__main__":
    main()
