"""Time AuKTransformer: one DiT step, a Base sampling run (32 steps, CFG) and a Flash run.

    python -m bench.bench_dit [--sizes tiny mid real] [--device cuda] [--frames 250]

Prints one JSON line per model size: ms per step for a single step and for each run, target
tokens per second, peak memory (CUDA: max_memory_allocated; CPU: the process's peak RSS), and
each run's cost as a ratio of the single step measured in the same process (so numbers from
machines of different speed stay comparable). The real size (1.53 B) runs only on CUDA.
Weights are random: speed does not depend on their values.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch

from auk_app.auk.checkpoint import FLASH_T_GRID
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.sampler import sample_latents
from auk_app.runtime import autocast, pick_device, pick_precision

SIZES = {
    "tiny": dict(dim=64, heads=2, dim_head=32, num_layers=1, num_single_layers=2, text_hidden_dim=64),
    "mid": dict(dim=512, heads=8, dim_head=64, num_layers=4, num_single_layers=8, text_hidden_dim=512),
    "real": dict(dim=1536, heads=24, dim_head=64, num_layers=10, num_single_layers=20, text_hidden_dim=2048),
}
TEXT_TOKENS = 40


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn, device: torch.device, repeats: int) -> float:
    """Median wall seconds of ``fn`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def bench(size: str, device: torch.device, frames: int, repeats: int) -> dict:
    precision = pick_precision(device)
    dtype = precision.weights
    torch.manual_seed(0)
    with torch.device(device):
        dit = AuKTransformer(ff_mult=2.0, latent_dim=64, **SIZES[size]).to(dtype).eval()
    text = torch.randn(1, TEXT_TOKENS, SIZES[size]["text_hidden_dim"], device=device)
    ref = torch.randn(1, frames, 64, device=device)
    ref_mask = torch.ones(1, frames, dtype=torch.bool, device=device)
    x = torch.randn(1, frames, 64, device=device, dtype=dtype)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def step():
        with torch.inference_mode(), autocast(device, precision):
            dit(x, text.to(dtype), torch.tensor(0.5, device=device), ref=ref.to(dtype), ref_mask=ref_mask, cfg_infer=True)

    def run(**knobs):
        with autocast(device, precision):
            sample_latents(dit, text=text, c_mask=None, ref=ref, ref_mask=ref_mask, gen_frames=frames, seed=0, **knobs)

    one_step = _timed(step, device, repeats)
    base = _timed(lambda: run(nfe=32, cfg_strength=2.0, sway_sampling_coef=-1.0), device, max(1, repeats // 3))
    flash = _timed(lambda: run(t_grid=list(FLASH_T_GRID), cfg_strength=0.0), device, repeats)
    return {
        "size": size,
        "params": sum(p.numel() for p in dit.parameters()),
        "device": str(device),
        "dtype": precision.name,
        "frames": frames,
        "step_cfg_ms": round(one_step * 1000, 2),
        "base_ms_per_step": round(base / 32 * 1000, 2),
        "flash_ms_per_step": round(flash / 4 * 1000, 2),
        "base_run_s": round(base, 3),
        "flash_run_s": round(flash, 3),
        "base_run_in_steps": round(base / one_step, 2),
        "flash_run_in_steps": round(flash / one_step, 2),
        "target_tokens_per_s_base": round(frames * 32 / base, 1),
        "peak_memory_mb": round(_peak_memory_mb(device), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["tiny", "mid", "real"], choices=list(SIZES))
    parser.add_argument("--device")
    parser.add_argument("--frames", type=int, default=250, help="reference and target frames (250 = 5 s each)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device = pick_device(args.device)
    for size in args.sizes:
        if size == "real" and device.type != "cuda":
            continue
        print(json.dumps(bench(size, device, args.frames, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
