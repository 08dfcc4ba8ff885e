"""Serving speed at real size: each figure on its optimised path and on the plain eager path.

    python -m bench.bench_speed [--device cuda] [--repeats 5] [--out PATH]

Prints one JSON object: AuK Base sampling (32 steps, CFG 2, sway −1) and Flash sampling (the
4-step grid) of the DiT alone, a 10 s VAE decode, a whole Base 10 s edit, Audex tokens/s with
CFG (batch 2) and the peak GPU memory, each also as ``eager_<name>`` and ``speedup_<name>``
(eager time over optimised time; optimised over eager for tokens/s), plus how far the two paths'
outputs are apart, and whole Base edits per second with 1 and 8 concurrent users sharing DiT
steps (``auk_edits_per_s_1``, ``auk_edits_per_s_8``, their ratio; see ``bench_batch``). Ratios
from one process are what compare across machines.

Weights are random at the released shapes (no downloads); speed does not depend on their values.
On CUDA the sizes are real: 64 text tokens, a 5 s reference and a 10 s target (814 tokens per
CFG branch), the DiT in bf16 (vLLM-Omni's recipe), the VAE in float32, a Qwen2.5-Omni-3B-shaped
text decoder as the thinker (its audio tower is not built), and an Audex-2B-shaped LM in bf16;
the object is also written to ``bench/results/<date>-<gpu>.json``. On the CPU every size is
scaled down (``"scaled_down": true``) so the run is a smoke test of about a minute.

The eager paths are the baseline, with no CUDA graphs and no compilation: the DiT's full
``forward`` per Euler step with the CFG batch doubled inside and the text cached on the module,
and Audex's eager loop (one host sync per token, the mask applied by
TTARVQPhaseMaskLogitsProcessor); the VAE's eager path is ``AuKVAE.decode``, its optimised one
``fast_decode`` (compiled activations, a CUDA graph per length bucket; the eager decode itself
off CUDA).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a plain script from anywhere

import torch  # noqa: E402
from transformers import ArceeConfig, ArceeForCausalLM, Qwen2Config, Qwen2Model  # noqa: E402

from auk_app.audex.params import AudexSampling  # noqa: E402
from auk_app.audex.sampler import sample_stream  # noqa: E402
from auk_app.audex.thinker import cast_keeping_rope_fp32  # noqa: E402
from auk_app.audex.vocab import AudexVocab  # noqa: E402
from auk_app.auk.configs import FLASH_T_GRID  # noqa: E402
from auk_app.config import HOP  # noqa: E402
from auk_app.auk.conditioner import fuse_hidden_states  # noqa: E402
from auk_app.auk.dit import AuKTransformer  # noqa: E402
from auk_app.auk.sampler import CFG_OFF_BELOW, SolveSpec, build_time_grid, draw_noise, solve  # noqa: E402
from auk_app.auk.step_graphs import StepGraphs  # noqa: E402
from auk_app.auk.step_reuse import StepTally  # noqa: E402
from auk_app.auk.vae import AuKVAE  # noqa: E402
from auk_app.auk.vae_decode import fast_decode  # noqa: E402
from auk_app.config import Limits  # noqa: E402
from auk_app.progress import silent  # noqa: E402
from auk_app.runtime import autocast, pick_device, pick_precision  # noqa: E402
from bench.bench_batch import WARMUP_ROUNDS, BatchedEditor, edits_per_s  # noqa: E402
from bench.bench_dit import SIZES as DIT_SIZES  # noqa: E402
from bench.peer import PEER, PEER_VERSION, compile_as_served, find_wheel, load_module  # noqa: E402
from bench.peer import peer_of, peer_sampler, regional_compile_applies  # noqa: E402
from bench.records import publish  # noqa: E402
from tests.audex.reference_loop import sample_stream_eager  # noqa: E402  (the eager lever: the tests' reference)

RESULTS = Path(__file__).resolve().parent / "results"
REAL_VAE = dict(
    upsample_rates=[5, 4, 3, 2, 2, 2], upsample_kernel_sizes=[10, 8, 6, 4, 4, 4], upsample_initial_channel=1536,
    resblock_kernel_sizes=[3, 7, 11], resblock_dilation_sizes=[[1, 3, 5]] * 3, downsample_rates=[2, 2, 2, 3, 4, 5],
    downsample_channels=[12, 24, 48, 96, 192, 384, 768],
)  # fmt: skip
TINY_VAE = dict(REAL_VAE, upsample_initial_channel=64, downsample_channels=[2, 4, 4, 8, 8, 16, 16])  # the fixtures'
BASE = dict(nfe=32, cfg_strength=2.0, sway_sampling_coef=-1.0)
FLASH = dict(nfe=4, cfg_strength=0.0, t_grid=list(FLASH_T_GRID))


@dataclass(frozen=True)
class Sizes:
    """Everything a run builds; ``*_frames`` are 50 Hz latent frames."""

    dit: dict
    vae: dict
    thinker: dict  # Qwen2Config fields of the thinker's text decoder
    audex: dict  # ArceeConfig fields
    text_tokens: int = 64
    ref_frames: int = 250  # 5 s
    target_frames: int = 500  # 10 s
    audex_prompt: int = 60
    audex_tokens: int = 512
    scaled_down: bool = False

    def __post_init__(self) -> None:
        if self.thinker["hidden_size"] != self.dit["text_hidden_dim"]:
            raise ValueError("the thinker's width must be the DiT's text input width")


REAL_THINKER = dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
                    num_key_value_heads=2, vocab_size=151936, rope_theta=1e6)  # fmt: skip
REAL_AUDEX = dict(vocab_size=205312, hidden_size=2048, intermediate_size=9216, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128)  # fmt: skip
SMALL_THINKER = dict(hidden_size=64, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=1000)  # fmt: skip
SMALL_AUDEX = dict(vocab_size=8576, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=32)  # fmt: skip
SIZES = {
    "real": Sizes(dit=DIT_SIZES["real"], vae=REAL_VAE, thinker=REAL_THINKER, audex=REAL_AUDEX),
    # A quarter of every length, narrow models: about a minute on one CPU thread.
    "cpu": Sizes(
        dit=DIT_SIZES["tiny"], vae=TINY_VAE, thinker=SMALL_THINKER, audex=SMALL_AUDEX,
        text_tokens=16, ref_frames=62, target_frames=125, audex_prompt=30, audex_tokens=96, scaled_down=True,
    ),
    # The smallest run that still exercises every path (the test suite's smoke test).
    "smoke": Sizes(
        dit=DIT_SIZES["tiny"], vae=TINY_VAE,
        thinker=dict(SMALL_THINKER, num_hidden_layers=2),
        audex=dict(SMALL_AUDEX, hidden_size=64, num_hidden_layers=2, head_dim=16),
        text_tokens=8, ref_frames=10, target_frames=20, audex_prompt=12, audex_tokens=24, scaled_down=True,
    ),
}
USERS = (1, 8)  # concurrent users of auk_edits_per_s_<n>, whole Base edits sharing DiT steps (bench_batch)
# The opt-in knobs that run fewer DiT rows, as bench_speed times them (their quality: bench_fewer_steps).
FEWER_STEPS = {"step_cache_most": dict(step_cache=1.0), "cfg_interval": dict(cfg_interval=(0.1, 0.8))}
FIGURES = ("auk_base_dit_ms", "auk_flash_dit_ms", "vae_decode_10s_ms", "auk_base_edit_ms", "audex_tokens_per_s")


def eager_sample_latents(dit, *, text, c_mask, ref, ref_mask, gen_frames, nfe, cfg_strength, sway_sampling_coef=None,
                         t_grid=None, seed):  # fmt: skip
    """The baseline sampler: the DiT's full forward per Euler step (its context built anew each
    step), the CFG batch doubled inside it and the text projection cached on the module."""
    param = next(dit.parameters())
    grid = build_time_grid(nfe=nfe, sway_sampling_coef=sway_sampling_coef, t_grid=t_grid, device=param.device)
    x = draw_noise(gen_frames, dit.latent_dim, seed=seed, generator=None, device=param.device, dtype=torch.float32)
    text, ref = text.to(param.dtype), ref.to(param.dtype)
    try:
        with torch.inference_mode():
            for i in range(grid.numel() - 1):
                x_in, t = x.to(param.dtype), grid[i]
                if cfg_strength >= CFG_OFF_BELOW:
                    v_c, v_u = dit(x_in, text, t, c_mask=c_mask, ref=ref, ref_mask=ref_mask, cfg_infer=True, cache=True).chunk(2)
                    v = v_c + cfg_strength * (v_c - v_u)
                else:
                    v = dit(x_in, text, t, c_mask=c_mask, ref=ref, ref_mask=ref_mask)
                x = x + (grid[i + 1] - grid[i]) * v
    finally:
        dit.clear_cache()
    return x


def spec_sampler(dit, *, graphs: StepGraphs | None = None, **spec) -> torch.Tensor:
    """``sample_latents`` taking every :class:`SolveSpec` field, the step cache's and the guidance
    interval's too (the contract's signature lacks them)."""
    return solve(dit, SolveSpec(**spec), graphs)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _paired_ms(eager, optimised, device: torch.device, repeats: int, warmup: int = 2) -> tuple[float, float]:
    """Median wall milliseconds of ``eager`` and of ``optimised``, timed in turn so that both see
    the same machine load; each runs ``warmup`` times first (on CUDA the optimised path's first
    request runs eagerly and its second captures the graphs)."""
    paths = (eager, optimised)
    for fn in paths:
        for _ in range(warmup):
            fn()
    times = ([], [])
    for _ in range(repeats):
        for fn, spent in zip(paths, times):
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            spent.append(time.perf_counter() - start)
    return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000


def _note(values: dict) -> None:
    """Figures as they come, on stderr: a run stopped by a time limit still leaves them."""
    print(json.dumps(values), file=sys.stderr, flush=True)


def _peak_gb(device: torch.device) -> float | None:
    return round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if device.type == "cuda" else None


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _eager(sampler):
    """``sampler`` with every compiled block run uncompiled: the eager twin of a compiled DiT."""

    def run(*args, **kwargs):
        with torch.compiler.set_stance("force_eager"):
            return sampler(*args, **kwargs)

    return run


LEVERS = {  # name: (compiler stance, stepper's static argument; None graphs on CUDA)
    "eager": ("force_eager", False),
    "graphs": ("force_eager", None),
    "compiled": ("default", False),
    "compiled_graphs": ("default", None),
}


@contextlib.contextmanager
def lever_step(dit, request: dict, device: torch.device, stance: str, static: bool | None):
    """One request's CFG step function ``(x, t)`` on one lever, with graphs of its own (they are
    dropped before and after, so each lever captures its own code)."""
    graphs = StepGraphs(dit, compute=pick_precision(device).compute)
    with torch.compiler.set_stance(stance), torch.inference_mode():
        for _ in range(3):  # the first request runs eagerly, the second captures (CUDA)
            step = graphs.stepper(**request, cfg_infer=True, static=static)
        yield step


def _step_levers(dit, request: dict, device: torch.device, repeats: int) -> dict:
    """Milliseconds per CFG step of each lever alone and together: the share of each."""
    x = torch.zeros(1, request["target_frames"], dit.latent_dim, device=device, dtype=request["text"].dtype)
    t = torch.tensor(0.5, device=device)
    result = {}
    for name, (stance, static) in LEVERS.items():
        with lever_step(dit, request, device, stance, static) as step:
            for _ in range(2):
                step(x, t)
            sync(device)
            start = time.perf_counter()
            for _ in range(repeats):
                step(x, t)
            sync(device)
        result[f"step_ms_{name}"] = round((time.perf_counter() - start) / repeats * 1000, 3)
    return result


def build_auk(sizes: Sizes, device: torch.device) -> tuple[AuKTransformer, AuKVAE, Qwen2Model]:
    """The DiT (in the device's serving precision), the float32 VAE and the thinker's text
    decoder, with random weights at ``sizes``."""
    precision = pick_precision(device)
    with torch.device(device):
        dit = AuKTransformer(**dit_config(sizes)).to(precision.weights).eval()
        vae = AuKVAE(**sizes.vae).eval()
        vae.remove_weight_norm()
        thinker = Qwen2Model(Qwen2Config(**sizes.thinker)).to(precision.weights).eval()
    return dit, vae, thinker


def dit_config(sizes: Sizes) -> dict:
    """The DiT's constructor arguments at ``sizes`` (ours and the peer's take the same)."""
    return dict(ff_mult=2.0, latent_dim=64, **sizes.dit)


class AuKBench:
    """The AuK stack at ``sizes`` with random weights and inputs, each figure runnable on the eager
    baseline sampler, on the pipeline's optimised one or on the peer's."""

    def __init__(self, sizes: Sizes, device: torch.device, compile: bool):
        self.sizes, self.device, self.precision = sizes, device, pick_precision(device)
        generator = torch.Generator(device="cpu").manual_seed(0)
        self.dit, self.vae, self.thinker = build_auk(sizes, device)
        if compile:
            self.dit.compile_blocks()
        layers = sizes.thinker["num_hidden_layers"]
        self.fusion = (torch.zeros(layers, device=device), torch.ones(1, device=device))
        self.ids = torch.randint(0, sizes.thinker["vocab_size"], (1, sizes.text_tokens), generator=generator).to(device)
        self.ref_wav = (0.1 * torch.randn(1, sizes.ref_frames * HOP, generator=generator)).to(device)
        self.ref_mask = torch.ones(1, sizes.ref_frames, dtype=torch.bool, device=device)
        with torch.inference_mode():
            self.text = torch.randn(1, sizes.text_tokens, sizes.dit["text_hidden_dim"], generator=generator).to(device)
            self.ref = self.vae.encode(self.ref_wav)
            self.latents = torch.randn(1, sizes.target_frames, 64, generator=generator).to(device)
        self.baseline = _eager(eager_sample_latents)
        self.graphs = StepGraphs(self.dit, compute=self.precision.compute)  # the pipeline's: one per served DiT
        self.optimised = partial(spec_sampler, graphs=self.graphs)

    def sample(self, sampler, recipe: dict, cond=None, reference=None, dit=None):
        """The DiT alone (ours, or ``dit``): ``recipe``'s sampling of the target frames on the fixed
        text and reference."""
        with autocast(self.device, self.precision):
            return sampler(self.dit if dit is None else dit, text=self.text if cond is None else cond, c_mask=None,
                           ref=self.ref if reference is None else reference, ref_mask=self.ref_mask,
                           gen_frames=self.sizes.target_frames, seed=0, **recipe)  # fmt: skip

    def decode(self, sampler, z=None):
        """The VAE alone; the sampler names the path: the eager one decodes eagerly."""
        z = self.latents if z is None else z
        with torch.inference_mode():
            return self.vae.decode(z) if sampler is self.baseline else fast_decode(self.vae, z)

    def edit(self, sampler):
        """A whole Base edit: the thinker's text states, the reference's latents, sampling and decoding."""
        with torch.inference_mode():
            with autocast(self.device, self.precision):
                hidden = self.thinker(self.ids, output_hidden_states=True).hidden_states[1:]
                cond = fuse_hidden_states(hidden, *self.fusion)
            mean, std = self.vae.posterior(self.ref_wav)
            generator = torch.Generator(device=self.device).manual_seed(1)
            reference = self.vae.latents(mean, std, sample=True, generator=generator)
            return self.decode(sampler, self.sample(sampler, BASE, cond, reference).float())

    def step_request(self) -> dict:
        """One request's inputs as the step graphs take them, in the weights' precision."""
        weights = self.precision.weights
        return dict(text=self.text.to(weights), c_mask=None, ref=self.ref.to(weights), ref_mask=self.ref_mask,
                    target_frames=self.sizes.target_frames)  # fmt: skip

    def batched_editor(self, pack: bool = False) -> BatchedEditor:
        return BatchedEditor(dit=self.dit, vae=self.vae, thinker=self.thinker, fusion=self.fusion, ids=self.ids,
                             ref_wav=self.ref_wav, ref_mask=self.ref_mask, target_frames=self.sizes.target_frames,
                             recipe=BASE, device=self.device, precision=self.precision, pack=pack)  # fmt: skip


def _auk_times(bench: AuKBench, repeats: int) -> dict:
    """Milliseconds of each AuK figure on the eager and the optimised path, timed in turn."""
    figures = {
        "auk_base_dit_ms": lambda sampler: bench.sample(sampler, BASE),
        "auk_flash_dit_ms": lambda sampler: bench.sample(sampler, FLASH),
        "vae_decode_10s_ms": bench.decode,
        "auk_base_edit_ms": bench.edit,
    }
    result = {}
    for name, run in figures.items():
        eager, optimised = partial(run, bench.baseline), partial(run, bench.optimised)
        result[f"eager_{name}"], result[name] = _paired_ms(eager, optimised, bench.device, repeats)
        _note({key: result[key] for key in (name, f"eager_{name}")})
    return result


def _auk_peaks_and_differences(bench: AuKBench) -> dict:
    """The whole edit's peak GPU memory on each path, and how far the two samplers' latents are apart."""
    result = {}
    for prefix, sampler in (("eager_", bench.baseline), ("", bench.optimised)):
        _reset_peak(bench.device)
        bench.edit(sampler)
        result[f"{prefix}peak_gpu_memory_gb"] = _peak_gb(bench.device)
    for name, recipe in (("base", BASE), ("flash", FLASH)):
        optimised, eager = bench.sample(bench.optimised, recipe), bench.sample(bench.baseline, recipe)
        result[f"auk_{name}_max_abs_diff"] = float((optimised - eager).abs().max())
    return result


def _batching_figures(bench: AuKBench, repeats: int) -> dict:
    """Whole Base edits per second with 1 and 8 concurrent users sharing DiT steps, and with 8 whose
    shared steps pack attention (each edit over its valid tokens alone): medians of up to three
    rounds, the three in turn so that all see the same machine load."""
    runs = {f"auk_edits_per_s_{USERS[0]}": (bench.batched_editor(), USERS[0]),
            f"auk_edits_per_s_{USERS[-1]}": (bench.batched_editor(), USERS[-1]),
            f"auk_edits_per_s_{USERS[-1]}_packed": (bench.batched_editor(pack=True), USERS[-1])}
    rates = {name: [] for name in runs}
    for round_ in range(min(repeats, 3)):
        for name, (batched, users) in runs.items():
            rates[name].append(edits_per_s(batched, users, warmup_rounds=WARMUP_ROUNDS if round_ == 0 else 0))
    return {name: round(statistics.median(values), 3) for name, values in rates.items()}


def _fewer_steps_figures(bench: AuKBench, repeats: int) -> dict:
    """Base sampling with the step cache reusing every step it may (threshold 1: the most it saves
    and the probe's cost) and with guidance limited to an interval, each against the full solve:
    milliseconds, the steps or rows that ran, and how far the latents moved (relative L2)."""
    result = {}
    full = bench.sample(bench.optimised, BASE)
    for name, knobs in FEWER_STEPS.items():
        tally = StepTally()
        recipe = {**BASE, **knobs}
        full_ms, knob_ms = _paired_ms(lambda: bench.sample(bench.optimised, BASE),
                                      lambda: bench.sample(bench.optimised, recipe), bench.device, repeats)
        result[f"auk_base_dit_ms_{name}_full"], result[f"auk_base_dit_ms_{name}"] = round(full_ms, 2), round(knob_ms, 2)
        result[f"speedup_auk_base_dit_ms_{name}"] = round(full_ms / knob_ms, 3)
        got = bench.sample(bench.optimised, {**recipe, "tally": tally})
        result[f"auk_base_{name}_steps"] = asdict(tally)
        result[f"auk_base_{name}_relative_l2"] = float((got - full).norm() / full.norm())
        _note({k: v for k, v in result.items() if name in k})
    return result


def _peer_figures(bench: AuKBench, repeats: int, compile: bool) -> dict:
    """vLLM-Omni's own AuK transformer (bench/peer.py) beside ours, same shapes, weights and device:
    Base and Flash sampling on its eager path and, with ``compile``, on its compiled one, each timed in
    turn with our optimised sampler; ``vs_peer_*`` is the peer's time over ours."""
    wheel = find_wheel()
    if wheel is None:
        return {"peer": None}
    module = load_module(wheel)
    peer = peer_of(bench.dit, dit_config(bench.sizes), module)
    sampler = peer_sampler(module)
    result = {"peer": f"{PEER} {PEER_VERSION}", "peer_regional_compile_applies": regional_compile_applies(module)}
    paths = [("peer_eager", peer)] + ([("peer_compiled", compile_as_served(peer_of(bench.dit, dit_config(bench.sizes),
                                                                                   module)))] if compile else [])
    for path, model in paths:
        for name, recipe in (("auk_base_dit_ms", BASE), ("auk_flash_dit_ms", FLASH)):
            theirs, ours = _paired_ms(lambda: bench.sample(sampler, recipe, dit=model),
                                      lambda: bench.sample(bench.optimised, recipe), bench.device, repeats)
            result[f"{path}_{name}"], result[f"{path}_ours_{name}"] = round(theirs, 2), round(ours, 2)
            result[f"vs_{path}_{name}"] = round(theirs / ours, 3)
            _note({k: v for k, v in result.items() if k.endswith(name) and path in k})
    for name, recipe in (("base", BASE), ("flash", FLASH)):
        theirs, ours = bench.sample(sampler, recipe, dit=peer), bench.sample(bench.optimised, recipe)
        result[f"peer_auk_{name}_max_abs_diff"] = float((theirs - ours).abs().max())
    return result


def _auk_figures(sizes: Sizes, device: torch.device, repeats: int, compile: bool) -> dict:
    """Base and Flash sampling, the VAE decode and the whole edit, optimised and eager; each step
    lever's share; vLLM-Omni's transformer beside ours; the knobs that run fewer DiT rows; and whole
    edits per second with ``USERS`` sharing DiT steps."""
    bench = AuKBench(sizes, device, compile)
    result = {"dit_compiled": compile, **_auk_times(bench, repeats), **_auk_peaks_and_differences(bench)}
    result["dit_dtype"] = bench.precision.name
    result["dit_graph_buckets"] = len(bench.graphs)
    result["levers"] = _step_levers(bench.dit, bench.step_request(), device, repeats * 4)
    _note(result["levers"])
    result.update(_peer_figures(bench, repeats, compile))
    result.update(_fewer_steps_figures(bench, repeats))
    result.update(_batching_figures(bench, repeats))
    return result


def _synthetic_vocab(vocab_size: int) -> AudexVocab:
    """The real TTA layout when it fits (markers 131073/131074, codecs from 196613), else the same
    layout shifted down: start 100, end 101, codecs from 128."""
    real = vocab_size >= 204805
    start, offset = (131073, 196613) if real else (100, 128)
    codec_of = {offset + n: n for n in range(8192)}
    return AudexVocab(
        start_tid=start,
        end_tid=start + 1,
        phase_token_ids=tuple(tuple(offset + p * 1024 + j for j in range(1024)) for p in range(4)),
        codec_of=codec_of,
        tokenizer_size=offset + 8192,
    )


def build_audex(sizes: Sizes, device: torch.device) -> tuple[ArceeForCausalLM, AudexVocab, list[int], list[int]]:
    """An Audex-shaped LM with random weights, its synthetic TTA vocabulary and a conditional and
    a null prompt."""
    dtype = pick_precision(device).weights
    config = ArceeConfig(**sizes.audex, hidden_act="relu2", max_position_embeddings=8192, tie_word_embeddings=False,
                         rope_parameters={"rope_type": "default", "rope_theta": 1e8},
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)  # fmt: skip
    with torch.device(device):
        lm = ArceeForCausalLM(config).eval()
    cast_keeping_rope_fp32(lm, dtype)
    generator = torch.Generator().manual_seed(0)
    cond, null = (torch.randint(0, 100, (sizes.audex_prompt,), generator=generator).tolist() for _ in range(2))
    return lm, _synthetic_vocab(config.vocab_size), cond, null


def audex_sampling(tokens: int, seed: int = 0) -> AudexSampling:
    """A guided, masked run of ``tokens`` tokens (the caption is not used: the prompts are synthetic)."""
    return AudexSampling(caption="bench", limits=Limits(), max_tokens=tokens, seed=seed)


def audex_stream(lm, cond, null, vocab, sampling: AudexSampling, *, fast: bool):
    """One stream on the app's fast loop or on the tests' eager reference loop."""
    if fast:
        return sample_stream(lm, cond, null, vocab, sampling, label="Sampling", progress=silent)
    return sample_stream_eager(lm, cond, null, vocab, sampling)


def _audex_figures(sizes: Sizes, device: torch.device, repeats: int) -> dict:
    """Tokens/s of a CFG pair (batch 2), fast loop and eager loop, and whether they agree."""
    lm, vocab, cond, null = build_audex(sizes, device)
    rates, streams = {False: [], True: []}, {}
    for seed in range(repeats + 1):  # the first round captures (CUDA) and is not counted
        for fast in (False, True):  # in turn, so that both loops see the same machine load
            stream = audex_stream(lm, cond, null, vocab, audex_sampling(sizes.audex_tokens, seed), fast=fast)
            rates[fast].append(len(stream.token_ids) / (stream.prefill_seconds + stream.sampling_seconds))
            streams[fast, seed] = stream.token_ids
    result = {
        "eager_audex_tokens_per_s": statistics.median(rates[False][1:]),
        "audex_tokens_per_s": statistics.median(rates[True][1:]),
        "audex_same_tokens": all(streams[False, s] == streams[True, s] for s in range(repeats + 1)),
    }
    _reset_peak(device)
    audex_stream(lm, cond, null, vocab, audex_sampling(sizes.audex_tokens), fast=True)
    result["audex_peak_gpu_memory_gb"] = _peak_gb(device)
    return result


def measure(size: str, device: torch.device, repeats: int, compile: bool | None = None) -> dict:
    """Every figure for ``size`` on ``device``, as the JSON object the script prints; ``compile``
    (default: on CUDA, as the pipeline does) compiles the DiT's blocks on the optimised path."""
    compile = device.type == "cuda" if compile is None else compile
    sizes = SIZES[size]
    torch.manual_seed(0)  # the random weights only; sampling uses its own seeded generators
    result = {"device": str(device), "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
              "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "size": size, "scaled_down": sizes.scaled_down, "torch": torch.__version__,
              "tokens_per_cfg_branch": sizes.text_tokens + sizes.ref_frames + sizes.target_frames,
              "repeats": repeats}  # fmt: skip
    started = time.perf_counter()
    result.update(_auk_figures(sizes, device, repeats, compile))
    print(f"AuK figures done after {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    if device.type == "cuda":
        torch.cuda.empty_cache()
    result.update(_audex_figures(sizes, device, repeats))
    print(f"Audex figures done after {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    for name in FIGURES:
        fast, eager = result[name], result[f"eager_{name}"]
        ratio = fast / eager if name == "audex_tokens_per_s" else eager / fast
        result[f"speedup_{name}"] = round(ratio, 3)
        result[name], result[f"eager_{name}"] = round(fast, 2), round(eager, 2)
    result["auk_edits_per_s_8_over_1"] = round(result["auk_edits_per_s_8"] / result["auk_edits_per_s_1"], 3)
    result["sizes"] = asdict(sizes)
    return result


def results_path(device_name: str, day: datetime.date | None = None) -> Path:
    """``bench/results/<date>-<gpu>.json``, the GPU's name reduced to lowercase words and dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    return RESULTS / f"{(day or datetime.date.today()).isoformat()}-{slug}.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", help="cuda, cuda:N or cpu (default: CUDA when present)")
    parser.add_argument("--size", choices=list(SIZES), help="default: real on CUDA, cpu otherwise")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="CPU intra-op threads (tiny ops: 1 is fastest)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction,
                        help="compile the DiT's blocks on the optimised path (default: on CUDA)")
    parser.add_argument("--out", type=Path, help="also write the JSON here (CUDA default: bench/results/<date>-<gpu>.json)")
    args = parser.parse_args()
    device = pick_device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    result = measure(args.size or ("real" if device.type == "cuda" else "cpu"), device, args.repeats, args.compile)
    publish(result, args.out or (results_path(result["gpu"]) if device.type == "cuda" else None))


if __name__ == "__main__":
    main()
