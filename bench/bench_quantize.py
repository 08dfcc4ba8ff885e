"""What ``--quantize`` saves and what it costs: on the CPU, and on a GPU where one is lent.

    python -m bench.bench_quantize bytes [--out bench/results/DATE-cpu-quantize-bytes.json]
    python -m bench.bench_quantize quality [--clips 4] [--out bench/results/DATE-cpu-quantize-quality.json]
    python -m bench.bench_quantize audex [--captions 8] [--seeds 2] [--out bench/results/DATE-cpu-quantize-audex.json]
    python -m bench.bench_quantize gpu --device cuda [--out bench/results/DATE-GPU-quantize.json]

``bytes``: the resident bytes of the DiT's and the Qwen2.5-Omni-3B thinker's weights at the
released shapes (random weights), one model at a time: float32 and bfloat16 counted on the meta
device (a tensor's bytes are its elements × their size, what materialising allocates), bfloat16
and int8 materialised and measured as the storage bytes of every parameter and buffer (a
quantized weight's int8 data, scales and zero points included), with the process's resident set
before and after as a cross-check; int4 derived from torchao's tinygemm layout, which only a CUDA
GPU can build. Every mode is also derived from the shapes, so the int8 row checks the derivation.

``quality``: int8 against the unquantized model in the same process, on the same weights:
a real-size random DiT (bfloat16), one guided Base step's velocity and a 4-step Flash solve's
latents; a tiny random Qwen2.5-Omni thinker in the released layout (tests/qwen_snapshot.py), the
fused hidden states of an instruction with a clip, in float32 and bfloat16; AuK-Tiny's edits of
the edit check's held-out clips (volume, pitch, noise removal, text to tone), measured by the
app's edit check (``auk_app.check``) for each mode.

``gpu`` (``--device cuda``): for each mode the device runs, a stack of the released shapes in
bfloat16 (random weights, the DiT's blocks compiled, as the app serves them) and a 10 s Base and a
Flash edit on a 5 s reference: the weights' bytes, the allocator's peak and the median seconds.
On the CPU it runs the same lines on a small stack (the tests' smoke run).

``audex``: Audex-Tiny's held-out tone captions with its LM's decoder layers in int8 and not: the
phase validity of every stream and the tones' measured frequencies.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import gc
import math
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from auk_app.config import QUANTIZE_CHOICES
from auk_app.quantize import (DIT_BLOCKS, INT4_GROUP, TEXT_ENCODER_BLOCKS, Quantization, quiet_library_logs,
                              weight_bytes)
from auk_app.runtime import PRECISIONS
from bench.records import publish

REAL_DIT = dict(dim=1536, heads=24, dim_head=64, ff_mult=2.0, latent_dim=64, text_hidden_dim=2048, num_layers=10,
                num_single_layers=20)  # fmt: skip
# Qwen2.5-Omni-3B's thinker_config: the text decoder and the audio tower (the vision tower is dropped).
REAL_TEXT = dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
                 num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=False, max_position_embeddings=32768,
                 rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]})
REAL_AUDIO = dict(num_mel_bins=128, encoder_layers=32, encoder_attention_heads=20, encoder_ffn_dim=5120, d_model=1280,
                  output_dim=2048, n_window=100, max_source_positions=1500)
INT4_IN_MULTIPLE, INT4_OUT_MULTIPLE = 1024, 8  # what torchao's tile_packed_to_4d pads inputs and outputs to
ALL = re.compile("")  # a layer's own name is "" when it is quantized alone
NOT_MEASURED_ON_CPU = ("int4's bytes, derived here from torchao's layout, which only a CUDA GPU builds; a 10 s Base and "
                       "a Flash edit's peak GPU memory and time in each mode: `python -m bench.bench_quantize gpu` "
                       "on a GPU, which this run had none of")


@contextlib.contextmanager
def _initialised_in_bfloat16():
    """Modules built inside initialise in bfloat16: float32 first would take twice the memory (6.1 GB
    more for the DiT) before the cast."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        yield
    finally:
        torch.set_default_dtype(default)


def real_dit(device: str = "meta"):
    from auk_app.auk.dit import AuKTransformer

    with torch.device(device):
        return AuKTransformer(**REAL_DIT).eval()


def real_thinker(device: str = "meta"):
    """The thinker as the conditioner loads it (no vision tower, no lm_head), at the released shapes."""
    from transformers import Qwen2_5OmniThinkerConfig

    from auk_app.auk.qwen import _AudioTextThinker

    config = Qwen2_5OmniThinkerConfig(text_config=REAL_TEXT, audio_config=REAL_AUDIO)
    with torch.device(device):
        return _AudioTextThinker(config).eval()


MODELS = {"dit": (real_dit, DIT_BLOCKS), "thinker": (real_thinker, TEXT_ENCODER_BLOCKS)}


# ----------------------------------------------------------------------------- bytes


def materialise(model: torch.nn.Module, dtype: torch.dtype, quantization: Quantization, blocks: re.Pattern) -> list[str]:
    """Give a meta-device ``model`` random weights on the CPU in ``dtype``, module by module, each
    linear that ``blocks`` names quantized as soon as it has its weight, so the peak stays near the
    result's size (a 3.7 B thinker never sits whole in bfloat16 for int8). The quantized names."""
    chosen = {name for name, layer in model.named_modules() if isinstance(layer, torch.nn.Linear) and blocks.match(name)}
    model.to(dtype)  # on the meta device: each tensor takes the dtype it is served in (rotary stays float32)
    generator = torch.Generator().manual_seed(0)
    quantized = []
    for name, module in model.named_modules():
        for key, tensor in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
            value = torch.empty(tensor.shape, dtype=tensor.dtype)
            value.normal_(0, 0.02, generator=generator) if tensor.is_floating_point() else value.zero_()
            if key in module._parameters:
                module._parameters[key] = torch.nn.Parameter(value, requires_grad=False)
            else:
                module._buffers[key] = value
        if name in chosen and quantization.apply(module, ALL):
            quantized.append(name)
    return quantized


def derived_bytes(model: torch.nn.Module, blocks: re.Pattern, mode: str) -> int:
    """A bfloat16 meta ``model``'s bytes with the linears ``blocks`` names in ``mode``, from the shapes:
    int8 is one byte a weight plus a float32 scale and an int8 zero point per output row; int4 is
    torchao's tile_packed_to_4d, half a byte a weight over inputs padded to a multiple of 1024 and
    outputs to one of 8, plus a bfloat16 scale and zero point per 128 inputs of a row."""
    total = 0
    for name, module in model.named_modules():
        for key, tensor in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
            n = tensor.numel()
            if key == "weight" and isinstance(module, torch.nn.Linear) and blocks.match(name) and mode != "none":
                rows, inputs = tensor.shape
                if mode == "int8":
                    total += rows * inputs + rows * 5
                else:
                    rows, inputs = _ceil(rows, INT4_OUT_MULTIPLE), _ceil(inputs, INT4_IN_MULTIPLE)
                    total += rows * inputs // 2 + inputs // INT4_GROUP * rows * 2 * 2
            else:
                total += n * tensor.element_size()
    return total


def _ceil(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _rss() -> int:
    """The process's resident bytes once glibc has handed its free pages back (``malloc_trim``):
    without it, the bfloat16 weights freed as their int8 copies are made stay counted."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _measured(build, blocks: re.Pattern, mode: str) -> dict:
    """One model built with random weights in bfloat16 (``mode`` none) or quantized: its storage
    bytes, the resident set it added, how long it took, and what was quantized."""
    gc.collect()
    before, started = _rss(), time.perf_counter()
    model = build()
    names = materialise(model, torch.bfloat16, Quantization(mode), blocks)
    figures = {"storage_bytes": weight_bytes(model), "rss_delta_bytes": _rss() - before,
               "seconds": round(time.perf_counter() - started, 1), "quantized_layers": len(names),
               "quantized_parameters": sum(model.get_submodule(n).in_features * model.get_submodule(n).out_features
                                           for n in names)}
    del model
    gc.collect()
    return figures


def bytes_study() -> dict:
    """Every model's bytes in every mode (see the module docstring)."""
    models = {}
    for key, (build, blocks) in MODELS.items():
        meta = build()
        float32 = weight_bytes(meta)
        meta = meta.to(torch.bfloat16)  # the DiT's rotary frequencies stay float32, as when it is served
        row = {"parameters": sum(p.numel() for p in meta.parameters()), "float32_bytes": float32,
               "bfloat16_bytes": weight_bytes(meta),
               "derived": {mode: derived_bytes(meta, blocks, mode) for mode in ("none", "int8", "int4")}}
        del meta
        row["measured"] = {mode: _measured(build, blocks, mode) for mode in ("none", "int8")}
        models[key] = row
        print(key, row, flush=True)
    together = {name: sum(models[m]["measured"][mode]["storage_bytes"] for m in models)
                for name, mode in (("bfloat16", "none"), ("int8", "int8"))}
    together |= {"float32": sum(m["float32_bytes"] for m in models.values()),
                 "int4_derived": sum(m["derived"]["int4"] for m in models.values())}
    return {"not_measured": NOT_MEASURED_ON_CPU, "models": models, "together_bytes": together,
            "int8_over_bfloat16": round(together["int8"] / together["bfloat16"], 4),
            "int4_over_bfloat16": round(together["int4_derived"] / together["bfloat16"], 4)}


# ----------------------------------------------------------------------------- quality


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """‖got − want‖ / ‖want‖ over every element, in float64."""
    got, want = got.double(), want.double()
    return float((got - want).norm() / want.norm())


def dit_study(frames: int) -> dict:
    """A real-size random DiT in bfloat16 (its own initialisation), then the same weights with int8
    block linears: one guided Base step (the grid's first, cfg 2) and a 4-step Flash solve, both on
    ``frames`` reference and target frames and a 32-token random text condition."""
    from auk_app.auk.configs import BASE_RECIPE, FLASH_T_GRID
    from auk_app.auk.sampler import build_time_grid, draw_noise, sample_latents

    torch.manual_seed(0)
    with _initialised_in_bfloat16():
        dit = real_dit("cpu")
    text, ref = torch.randn(1, 32, REAL_DIT["text_hidden_dim"]), torch.randn(1, frames, REAL_DIT["latent_dim"])
    grid = build_time_grid(nfe=BASE_RECIPE.nfe, sway_sampling_coef=BASE_RECIPE.sway, t_grid=None).tolist()
    noise = draw_noise(frames, REAL_DIT["latent_dim"], seed=0, generator=None, device="cpu", dtype=torch.float32)
    common = dict(text=text, c_mask=None, ref=ref, ref_mask=None, gen_frames=frames, seed=0)
    precision = PRECISIONS["bfloat16"]

    def run() -> dict:
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=precision.compute):
            base = sample_latents(dit, t_grid=grid[:2], cfg_strength=BASE_RECIPE.cfg, **common)
            flash = sample_latents(dit, t_grid=FLASH_T_GRID, cfg_strength=0.0, **common)
        return {"velocity": (base - noise) / (grid[1] - grid[0]), "flash": flash,
                "seconds": time.perf_counter() - started}

    want = run()
    layers = Quantization("int8").apply(dit, DIT_BLOCKS)
    got = run()
    return {"frames": frames, "text_tokens": 32, "quantized_layers": len(layers),
            "base_step_velocity_rel_error": _relative_error(got["velocity"], want["velocity"]),
            "flash_4_step_latents_rel_error": _relative_error(got["flash"], want["flash"]),
            "seconds_bfloat16": round(want["seconds"], 1), "seconds_int8": round(got["seconds"], 1)}


def thinker_study() -> dict:
    """The tiny random Qwen2.5-Omni thinker's fused condition (hidden states of every layer fused with
    random fusion weights) for an instruction with a 2 s clip: int8 against the same dtype
    unquantized, in float32 and bfloat16, and what bfloat16 itself costs against float32."""
    from auk_app.auk.conditioner import fuse_hidden_states
    from auk_app.auk.qwen import QwenConditioner
    from tests.qwen_snapshot import TEXT_LAYERS, write_tiny_qwen_snapshot

    clip = (0.1 * np.random.default_rng(0).standard_normal(32000)).astype(np.float32)
    layer_weights, layer_scale = torch.randn(TEXT_LAYERS, generator=torch.Generator().manual_seed(0)), torch.ones(1)
    fused = {}
    with tempfile.TemporaryDirectory() as folder:
        snapshot = write_tiny_qwen_snapshot(Path(folder) / "qwen")
        for dtype in (torch.float32, torch.bfloat16):
            for mode in ("none", "int8"):
                conditioner = QwenConditioner.from_pretrained(snapshot, dtype=dtype)
                Quantization(mode).apply(conditioner.model, TEXT_ENCODER_BLOCKS)
                with torch.inference_mode(), torch.autocast("cpu", dtype=dtype, enabled=dtype != torch.float32):
                    layers, _ = conditioner.hidden_states("Raise the pitch by 2 semitones.", clip)
                fused[str(dtype).removeprefix("torch."), mode] = fuse_hidden_states(layers, layer_weights, layer_scale)
    return {"text_layers": TEXT_LAYERS,
            "int8_rel_error_float32": _relative_error(fused["float32", "int8"], fused["float32", "none"]),
            "int8_rel_error_bfloat16": _relative_error(fused["bfloat16", "int8"], fused["bfloat16", "none"]),
            "bfloat16_rel_error_float32": _relative_error(fused["bfloat16", "none"], fused["float32", "none"])}


TINY_FAMILIES = (("volume", "tone"), ("volume", "speech"), ("pitch", "tone"), ("pitch", "speech"),
                 ("denoise", "tone"), ("denoise", "speech"), ("tone", "tone"))
# Where the int8 edits must stay of the unquantized ones, in the check's units (pitch in cents).
TINY_BOUNDS = {"volume": 0.5, "pitch": 20.0}


def tiny_study(clips: int) -> dict:
    """AuK-Tiny's edit of every held-out clip (``clips`` per family and material, seed 0) with and
    without int8, each measured by the edit check: per clip both results and their gap; per family
    and material the median and largest gap and how many of each mode pass the check."""
    from auk_app.auk.request import EditRequest
    from auk_app.check import Clip, check
    from auk_app.config import SAMPLE_RATE
    from auk_app.job import run_request
    from auk_app.service import Studio, StudioConfig
    from training.data import heldout_cases

    studios = {mode: Studio(StudioConfig(quantize=mode)) for mode in ("none", "int8")}
    rows = []
    for family, material in TINY_FAMILIES:
        for case in heldout_cases(family, clips, 0, material):
            source = None if case.source is None else Clip(case.source, SAMPLE_RATE)
            audio = None if case.source is None else (case.source, SAMPLE_RATE)
            request = EditRequest(case.instruction, audio=audio, seconds=None if audio else case.seconds, seed=0)
            checked = {mode: check(case.instruction, source, run_request(studio, request, "demo")[0].wav, SAMPLE_RATE)
                       for mode, studio in studios.items()}
            none, int8 = checked["none"], checked["int8"]
            rows.append({"task": family, "material": material, "condition": case.params["condition"],
                         "instruction": case.instruction, "unit": none.unit, "asked": none.asked,
                         "got_none": none.got, "got_int8": int8.got, "gap": abs(int8.got - none.got),
                         "passed_none": none.passed, "passed_int8": int8.passed,
                         "check_none": none.display(), "check_int8": int8.display()})
    summary = {}
    for family, material in TINY_FAMILIES:
        mine = [r for r in rows if (r["task"], r["material"]) == (family, material)]
        gaps = [r["gap"] for r in mine]
        summary[f"{family}/{material}"] = {
            "clips": len(mine), "unit": mine[0]["unit"], "median_gap": float(np.median(gaps)),
            "largest_gap": max(gaps), "passed_none": sum(bool(r["passed_none"]) for r in mine),
            "passed_int8": sum(bool(r["passed_int8"]) for r in mine),
            "median_error_none": float(np.median([abs(r["got_none"] - r["asked"]) for r in mine])),
            "median_error_int8": float(np.median([abs(r["got_int8"] - r["asked"]) for r in mine])),
        }
    pipeline = studios["int8"].pipeline(studios["int8"].entry("demo"))
    bounds = {task: {"bound": bound, "largest_gap": max(r["gap"] for r in rows if r["task"] == task),
                     "within": max(r["gap"] for r in rows if r["task"] == task) <= bound}
              for task, bound in TINY_BOUNDS.items()}
    return {"clips_per_family": clips, "seed": 0, "summary": summary, "bounds": bounds, "rows": rows,
            "dit_bytes": {mode: weight_bytes(studio.pipeline(studio.entry("demo"))._model.dit)
                          for mode, studio in studios.items()},
            "quantized_dit_layers": _quantized(pipeline._model.dit),
            "quantized_text_encoder_layers": len(_quantized(pipeline._conditioner.model))}


def audex_study(captions: int, seeds: int) -> dict:
    """Audex-Tiny's held-out tone captions (the Audex-Tiny bench's, ``seeds`` seeds each) sampled by
    its LM with and without int8 decoder-layer linears, as the Text-to-audio tab samples them: per
    mode, the share of phase-valid streams and the median tone-frequency error; between the modes,
    the share of identical token streams and the median gap of the measured frequency in cents."""
    from bench.bench_audex_demo import heldout_scenes, run
    from auk_app.service import Studio, StudioConfig
    from training import audex_measures

    studios = {mode: Studio(StudioConfig(quantize=mode)) for mode in ("none", "int8")}
    rows = []
    for scene in heldout_scenes("tone", captions):
        for seed in range(seeds):
            made = {mode: run(studio, scene.caption, seed).result for mode, studio in studios.items()}
            scores = {mode: audex_measures.score(scene, result.waveform).values for mode, result in made.items()}
            rows.append({"caption": scene.caption, "seed": seed, "asked_hz": scores["none"]["asked_hz"],
                         "same_tokens": made["none"].token_ids == made["int8"].token_ids,
                         **{f"phase_valid_{m}": bool(r.report["phase_valid"]) for m, r in made.items()},
                         **{f"hz_{m}": v["hz"] for m, v in scores.items()},
                         **{f"freq_err_{m}": v["freq_err"] for m, v in scores.items()}})
    gaps = [abs(1200 * math.log2(r["hz_int8"] / r["hz_none"])) for r in rows if r["hz_int8"] > 0 and r["hz_none"] > 0]
    summary = {"runs": len(rows), "same_tokens_share": float(np.mean([r["same_tokens"] for r in rows])),
               "median_gap_cents": float(np.median(gaps)), "largest_gap_cents": max(gaps)}
    for mode in studios:
        summary[f"phase_valid_share_{mode}"] = float(np.mean([r[f"phase_valid_{mode}"] for r in rows]))
        summary[f"median_freq_err_{mode}"] = float(np.median([r[f"freq_err_{mode}"] for r in rows]))
    lms = {mode: studio.audex().sampler.thinker.model for mode, studio in studios.items()}
    return {"captions": captions, "seeds": seeds, "summary": summary, "rows": rows,
            "quantized_lm_layers": len(_quantized(lms["int8"])),
            "lm_bytes": {mode: weight_bytes(lm) for mode, lm in lms.items()}}


def _quantized(module: torch.nn.Module) -> list[str]:
    """The names of ``module``'s linear layers whose weight is a torchao tensor."""
    return [name for name, layer in module.named_modules()
            if isinstance(layer, torch.nn.Linear) and is_traceable_wrapper_subclass(layer.weight)]


# ----------------------------------------------------------------------------- GPU


# A stack small enough for the CPU, which runs every line of the GPU study there (the tests' smoke run).
SMOKE = dict(dit=dict(REAL_DIT, dim=64, heads=2, dim_head=32, text_hidden_dim=32, num_layers=1, num_single_layers=1),
             text=dict(REAL_TEXT, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                       vocab_size=400, rope_parameters={"rope_type": "default", "rope_theta": 1e6,
                                                        "mrope_section": [2, 1, 1]}),
             audio=dict(REAL_AUDIO, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32, d_model=16,
                        output_dim=32), frames=(10, 20), text_tokens=8, small_vae=True,
             # The thinker builds its vision tower before the conditioner drops it: the default's is 0.67 B.
             vision=dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32,
                         fullatt_block_indexes=[0]))  # fmt: skip
REAL = dict(dit=REAL_DIT, text=REAL_TEXT, audio=REAL_AUDIO, frames=(250, 500), text_tokens=64, small_vae=False,
            vision=None)


def _bfloat16_stack(sizes: dict, device: torch.device):
    """The DiT and the thinker initialised in bfloat16 on ``device`` (their own initialisation) and the
    float32 VAE, at ``sizes``: what the pipeline holds after loading, with random weights."""
    from transformers import Qwen2_5OmniThinkerConfig

    from auk_app.auk.qwen import _AudioTextThinker
    from auk_app.auk.dit import AuKTransformer
    from auk_app.auk.vae import AuKVAE
    from bench.bench_speed import REAL_VAE, TINY_VAE

    with _initialised_in_bfloat16(), torch.device(device):
        dit = AuKTransformer(**sizes["dit"]).eval()
        config = Qwen2_5OmniThinkerConfig(text_config=sizes["text"], audio_config=sizes["audio"],
                                          vision_config=sizes["vision"])
        thinker = _AudioTextThinker(config).eval()
    with torch.device(device):
        vae = AuKVAE(**(TINY_VAE if sizes["small_vae"] else REAL_VAE)).eval()
    vae.remove_weight_norm()
    return dit, thinker, vae


def _edit(stack, recipe, sizes: dict, graphs, device: torch.device, compile: bool) -> None:
    """One edit as the pipeline runs it: the thinker's states of a random prompt fused, the reference's
    posterior mean, the solve through the DiT's step graphs, the decode of the target."""
    from auk_app.auk.conditioner import fuse_hidden_states
    from auk_app.auk.sampler import SolveSpec, solve
    from auk_app.auk.vae_decode import fast_decode
    from auk_app.config import HOP
    from auk_app.runtime import autocast

    dit, thinker, vae = stack
    ref_frames, target_frames = sizes["frames"]
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, sizes["text"]["vocab_size"], (1, sizes["text_tokens"]), generator=generator).to(device)
    ref_wav = (0.1 * torch.randn(1, ref_frames * HOP, generator=generator)).to(device)
    layers = sizes["text"]["num_hidden_layers"]
    with torch.inference_mode():
        with autocast(device, PRECISIONS["bfloat16"]):
            hidden = thinker.model.language_model(input_ids=ids, output_hidden_states=True).hidden_states[1:]
            text = fuse_hidden_states(hidden, torch.zeros(layers, device=device), torch.ones(1, device=device))
        mean, std = vae.posterior(ref_wav)
        ref = vae.latents(mean, std, sample=False)
        spec = SolveSpec.of(recipe, text=text, c_mask=None, ref=ref, ref_mask=None, gen_frames=target_frames, seed=0,
                            device=device)
        with autocast(device, PRECISIONS["bfloat16"]):
            latents = solve(dit, spec, graphs)
        fast_decode(vae, latents.float(), compile=compile, clamp=False)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _gpu_mode(mode: str, sizes: dict, device: torch.device, compile: bool, repeats: int) -> dict:
    """``mode``'s stack: its resident weights on the device, then a Base and a Flash edit's peak
    memory (warm-up included: graph capture and compilation) and median seconds of ``repeats``."""
    from auk_app.auk.configs import BASE_RECIPE, flash_recipe
    from auk_app.auk.step_graphs import StepGraphs

    cuda = device.type == "cuda"
    stack = _bfloat16_stack(sizes, device)
    quantization = Quantization(mode)
    layers = len(quantization.apply(stack[0], DIT_BLOCKS)) + len(quantization.apply(stack[1], TEXT_ENCODER_BLOCKS))
    if compile:
        stack[0].compile_blocks()
    graphs = StepGraphs(stack[0], compute=torch.bfloat16)
    figures = {"quantized_layers": layers, "weight_bytes": sum(weight_bytes(m) for m in stack),
               "allocated_after_load_bytes": torch.cuda.memory_allocated(device) if cuda else None}
    for name, recipe in (("base", BASE_RECIPE), ("flash", flash_recipe())):
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        times = []
        for _ in range(repeats + 1):  # the first warms up
            started = time.perf_counter()
            _edit(stack, recipe, sizes, graphs, device, compile)
            times.append(time.perf_counter() - started)
        figures[f"{name}_edit_seconds"] = round(float(np.median(times[1:])), 4)
        figures[f"{name}_first_edit_seconds"] = round(times[0], 4)
        figures[f"{name}_peak_allocated_bytes"] = torch.cuda.max_memory_allocated(device) if cuda else None
        figures[f"{name}_peak_reserved_bytes"] = torch.cuda.max_memory_reserved(device) if cuda else None
    del stack, graphs
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return figures


def gpu_study(device: torch.device, sizes: dict = REAL, compile: bool | None = None, repeats: int = 3) -> dict:
    """Every mode this device runs (int4 only on a CUDA GPU that takes it; a refusal is recorded as its
    sentence): a 10 s Base and a Flash edit's time and peak memory on a stack at ``sizes``, one mode
    at a time, in bfloat16 with the DiT's blocks compiled on CUDA as the app serves them."""
    from auk_app.errors import InputError
    from auk_app.quantize import pick_quantization

    compile = device.type == "cuda" if compile is None else compile
    modes = {}
    for mode in QUANTIZE_CHOICES:
        try:
            pick_quantization(device, PRECISIONS["bfloat16"], mode)
        except InputError as refused:
            modes[mode] = {"refused": str(refused)}
            continue
        modes[mode] = _gpu_mode(mode, sizes, device, compile, repeats)
        print(mode, modes[mode], flush=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {"gpu": name, "compiled": compile, "reference_frames": sizes["frames"][0],
            "target_frames": sizes["frames"][1], "text_tokens": sizes["text_tokens"], "repeats": repeats, "modes": modes}


# ----------------------------------------------------------------------------- record


def record(kind: str, study: dict, started: float, device: str = "cpu") -> dict:
    """A study as a committed record: torch, torchao and the threads that ran it, no machine paths."""
    from importlib import metadata

    return {"date": datetime.date.today().isoformat(), "device": device, "kind": kind,
            "torch": torch.__version__, "torchao": metadata.version("torchao"), "threads": torch.get_num_threads(),
            "seconds": round(time.perf_counter() - started, 1), **study}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", choices=("bytes", "quality", "audex", "gpu"))
    parser.add_argument("--device", default="cuda", help="gpu: the device (cpu runs the small stack)")
    parser.add_argument("--captions", type=int, default=8, help="audex: held-out tone captions")
    parser.add_argument("--seeds", type=int, default=2, help="audex: seeds per caption")
    parser.add_argument("--clips", type=int, default=4, help="quality: AuK-Tiny's held-out clips per family and material")
    parser.add_argument("--frames", type=int, default=100, help="quality: the real-size DiT's reference and target frames")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    quiet_library_logs()
    started = time.perf_counter()
    if args.study == "bytes":
        study = bytes_study()
    elif args.study == "quality":
        study = {"dit": dit_study(args.frames), "thinker": thinker_study(), "auk_tiny": tiny_study(args.clips)}
    elif args.study == "audex":
        study = {"audex_tiny": audex_study(args.captions, args.seeds)}
    else:
        device = torch.device(args.device)
        study = gpu_study(device, REAL if device.type == "cuda" else SMOKE)
    publish(record(args.study, study, started, "cpu" if args.study != "gpu" else args.device), args.out)


if __name__ == "__main__":
    main()
