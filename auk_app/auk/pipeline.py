"""The in-process AuK pipeline: instruction + optional source clip in, 24 kHz waveform out.

Steps of one request, in order (each reported to ``progress(phase, done, total)``):
check the request → prepare the clip (mono, 24 kHz; 16 kHz for the thinker) → load the models
(once) → condition (fused text condition + the VAE posterior of the whole clip, cached per
instruction and clip) → draw the reference latents (the posterior mean, or a seeded sample of
it) → sample (Euler steps) → decode. Every check that can fail runs before any model does, and
the result carries a record of every knob used.

The reference follows upstream AuK rather than vLLM-Omni: the clip is encoded whole, not cut to
whole 480-sample hops first, and the reference mask marks the frames past ``T // 480`` as
padding (one extra frame when 136 or more samples are left over, see ``AuKVAE.posterior``); by
default the latent is a draw from the posterior, not its mean.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from auk_app import dsp
from auk_app.audio_io import MonoClip, load_mono
from auk_app.auk.batching import DEFAULT_MAX_BATCH, StepBatcher
from auk_app.auk.checkpoint import AuKCheckpoint, AuKModel, load_auk_checkpoint, read_auk_checkpoint
from auk_app.auk.conditioner import TextConditioner, fuse_hidden_states, load_conditioner
from auk_app.auk.sampler import sample_latents, source_origin
from auk_app.auk.region import plan_region, splice
from auk_app.auk.request import EditRecord, EditRequest, EditResult
from auk_app.auk.vae_decode import fast_decode
from auk_app.config import MAX_TOTAL_FRAMES, QWEN_SAMPLE_RATE, Limits, frames_for_seconds
from auk_app.errors import Cancelled, CheckpointError
from auk_app.runtime import Precision, autocast, pick_device, pick_precision
from auk_app.validate import check_clip

Progress = Callable[[str, int, int], None]
# The posterior draw's generator is seeded with seed + this offset (vLLM-Omni's value): with the
# request seed itself, ε and the initial noise would be the same random numbers.
VAE_SEED_OFFSET = 0x5EED0A0C


@dataclass(frozen=True)
class _Recipe:
    """The sampling recipe of one run: the request's knobs over the checkpoint's defaults."""

    nfe: int
    cfg: float
    sway: float | None
    t_grid: tuple[float, ...] | None
    noise_scale: float  # the checkpoint's; no request knob sets it
    start: str  # the checkpoint's: "noise" or "source"
    ignored: tuple[str, ...]  # knobs the request set that the recipe overrides


@dataclass(frozen=True)
class _Clip:
    wav_24k: np.ndarray  # the whole clip, mono at the VAE's rate (24 kHz): what it encodes and the figure shows
    wav_16k: np.ndarray | None
    source_seconds: float
    source_rate: int
    source_channels: int
    digest: str

    hop: int

    @property
    def ref_frames(self) -> int:
        """Valid reference frames, upstream's ``T // 480``; the encoder may emit one more."""
        return self.wav_24k.shape[0] // self.hop


class AuKPipeline:
    """Owns the text conditioner, the DiT and the VAE of one checkpoint; loads them lazily.

    Loading, conditioning and decoding run one request at a time (an internal lock); the Euler
    steps of concurrent requests of one shape bucket are shared, up to ``max_batch`` requests per
    DiT step (:class:`~auk_app.auk.batching.StepBatcher`, ``batcher`` once loaded). With
    ``offload=True`` only the component in use sits on the accelerator, for cards that cannot
    hold all three, and requests run one at a time from start to end, as with ``max_batch=1``.
    ``compile`` (default: on CUDA) compiles the DiT's blocks (``AuKTransformer.compile_blocks``);
    each new step shape then compiles once on first use, which on the CPU costs more than it saves.
    """

    def __init__(
        self,
        checkpoint: str | Path | AuKCheckpoint,
        *,
        text_encoder_path: str | Path | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | Precision | None = None,
        offload: bool = False,
        limits: Limits = Limits(),
        cache_size: int = 8,
        max_batch: int = DEFAULT_MAX_BATCH,
        compile: bool | None = None,
    ):
        self.checkpoint = checkpoint if isinstance(checkpoint, AuKCheckpoint) else read_auk_checkpoint(checkpoint)
        self.text_encoder_path = text_encoder_path
        self.device = pick_device(device)
        self.precision = pick_precision(self.device, dtype)
        self.offload = offload and self.device.type != "cpu"
        self.compile = self.device.type == "cuda" if compile is None else compile
        self.limits = limits
        self._model: AuKModel | None = None
        self._conditioner: TextConditioner | None = None
        self._cache: OrderedDict[tuple, tuple] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.max_batch = max_batch
        self._batched = max_batch > 1 and not self.offload
        self._batcher: StepBatcher | None = None

    # ------------------------------------------------------------------ loading

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def batcher(self) -> StepBatcher | None:
        """The loaded DiT's step batcher; None before loading, with offload and with max_batch 1."""
        return self._batcher

    def load(self) -> None:
        if self._model is not None:
            return
        home = torch.device("cpu") if self.offload else self.device
        model = load_auk_checkpoint(self.checkpoint, device=home, dtype=self.precision.weights)
        if self.compile:
            model.dit.compile_blocks()
        encoder = self.checkpoint.text_encoder
        conditioner = load_conditioner(encoder, self.text_encoder_path, device=home, dtype=self.precision.weights)
        if conditioner.hidden_size != self.checkpoint.dit_config.text_hidden_dim:
            raise CheckpointError(
                f"The text encoder's hidden size {conditioner.hidden_size} does not match the DiT's text input "
                f"{self.checkpoint.dit_config.text_hidden_dim}; the checkpoint needs a different text encoder."
            )
        self._model, self._conditioner = model, conditioner
        self._batcher = StepBatcher(model.dit, max_batch=self.max_batch) if self._batched else None

    def unload(self) -> None:
        with self._lock:
            self._model = self._conditioner = self._batcher = None
            self._cache.clear()

    # ------------------------------------------------------------------ requests

    def generate(
        self,
        request: EditRequest,
        *,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> EditResult:
        """Run one checked request; a clip that cannot be used raises InputError before any model work."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        report = progress or (lambda phase, done, total: None)

        def checkpoint_stop():
            if should_stop is not None and should_stop():
                raise Cancelled("Stopped before the result was ready; nothing was produced.")

        recipe = self._recipe(request)
        clip, whole, plan = None, None, None
        if request.region is not None:
            clip, whole, plan = _prepare_region(request, self.limits, self.checkpoint, want_16k=self._uses_audio())
        elif request.audio is not None:
            clip = _prepare_clip(request.audio, self.limits, self.checkpoint, want_16k=self._uses_audio())
        fit = (request.fit_to_source or plan is not None) and clip is not None and request.seconds is None
        seconds = request.seconds
        if plan is not None and seconds is not None:  # the region's target, with the window's context around it
            seconds += (plan.before + plan.after) / self.checkpoint.sample_rate
        gen_frames, ref_frames, capped = _frame_budget(seconds, clip, fit)
        timings["prepare"] = time.perf_counter() - started

        # Batched: the lock guards loading, conditioning and decoding, and is released for the Euler
        # steps, which concurrent requests share through the step batcher. Offloaded (modules move
        # between devices) or max_batch 1: one request at a time, start to end, as before.
        unlocked = contextlib.nullcontext()
        per_request, per_phase = (unlocked, self._lock) if self._batched else (self._lock, unlocked)
        with per_request:
            with per_phase:
                checkpoint_stop()
                tick = time.perf_counter()
                report("load", 0, 1)
                self.load()
                model, batcher = self._model, self._batcher  # an unload() meanwhile cannot take them
                report("load", 1, 1)
                timings["load"] = time.perf_counter() - tick

                tick = time.perf_counter()
                report("condition", 0, 1)
                text, c_mask, posterior, cache_hit = self._condition(request.instruction, clip)
                ref, ref_mask = self._reference(posterior, clip, request.vae_sample, request.seed)
                report("condition", 1, 1)
                timings["condition"] = time.perf_counter() - tick
                checkpoint_stop()

            def on_step(done, total):
                report("sample", done, total)
                checkpoint_stop()

            tick = time.perf_counter()
            latents = self._sample(
                model.dit, batcher, text=text, c_mask=c_mask, ref=ref, ref_mask=ref_mask, gen_frames=gen_frames,
                nfe=recipe.nfe, cfg_strength=recipe.cfg, sway_sampling_coef=recipe.sway, t_grid=recipe.t_grid,
                seed=request.seed, noise_scale=recipe.noise_scale,
                origin=source_origin(ref, ref_mask, gen_frames) if recipe.start == "source" else None,
                device=self.device, on_step=on_step,
            )  # fmt: skip
            timings["sample"] = time.perf_counter() - tick
            checkpoint_stop()

            with per_phase:
                tick = time.perf_counter()
                report("decode", 0, 1)
                with self._placed(model.vae), torch.inference_mode():
                    # Unclamped: the app counts what reaches full scale and may keep headroom; writing clamps.
                    wav = fast_decode(model.vae, latents.float(), compile=self.compile, clamp=False)[0]
                    wav = wav.cpu().numpy().astype(np.float32)
                if fit:
                    wav = wav[: clip.wav_24k.shape[0]]
                if plan is not None:
                    wav = splice(whole, plan, wav)
                report("decode", 1, 1)
                timings["decode"] = time.perf_counter() - tick

        total = time.perf_counter() - started
        timings["total"] = total
        sample_rate = self.checkpoint.sample_rate
        seconds_out = wav.shape[0] / sample_rate
        record = EditRecord(
            checkpoint_name=self.checkpoint.name,
            variant=self.checkpoint.variant,
            checkpoint=self.checkpoint.directory.name,
            instruction=request.instruction,
            seed=request.seed,
            nfe=recipe.nfe,
            cfg=recipe.cfg,
            sway=recipe.sway,
            t_grid=recipe.t_grid,
            noise_scale=recipe.noise_scale,
            start=recipe.start,
            ignored=recipe.ignored,
            gen_frames=gen_frames,
            ref_frames=ref_frames,
            ref_latent_frames=ref.shape[1],
            frames_capped=capped,
            fit_to_source=fit,
            seconds=seconds_out,
            sample_rate=sample_rate,
            source_seconds=clip.source_seconds if clip else None,
            source_samples_24k=clip.wav_24k.shape[0] if clip else None,
            source_sample_rate=clip.source_rate if clip else None,
            source_channels=clip.source_channels if clip else None,
            region=request.region,
            region_context=None if plan is None else (plan.before / sample_rate, plan.after / sample_rate),
            region_crossfade=None if plan is None else plan.crossfade / sample_rate,
            region_seconds=None if plan is None else (wav.shape[0] - whole.shape[0]) / sample_rate + (
                request.region[1] - request.region[0]),
            vae_sample=request.vae_sample,
            condition_cache_hit=cache_hit,
            timings={k: round(v, 4) for k, v in timings.items()},
            rtf=round(total / seconds_out, 4),
            device=str(self.device),
            dtype=self.precision.name,
        )
        source = whole if plan is not None else clip.wav_24k if clip else None
        return EditResult(wav=wav, sample_rate=sample_rate, record=record, source=source)

    # ------------------------------------------------------------------ steps

    def _uses_audio(self) -> bool:
        """Whether the text encoder reads the clip (Qwen does; MiniLM conditions on text only)."""
        return self.checkpoint.text_encoder.reads_audio

    def _recipe(self, request: EditRequest) -> _Recipe:
        """The request's knobs with the checkpoint's defaults filled in; Flash's fixed recipe wins."""
        given = {"nfe": request.nfe, "cfg": request.cfg, "sway": request.sway, "t_grid": request.t_grid}
        defaults = self.checkpoint.defaults
        declared = {"noise_scale": defaults.noise_scale, "start": defaults.start}
        if self.checkpoint.is_flash:
            grid = tuple(self.checkpoint.t_grid)
            fixed = {"nfe": len(grid) - 1, "cfg": 0.0, "sway": None, "t_grid": grid}
            ignored = tuple(sorted(k for k, v in given.items() if v is not None and v != fixed[k]))
            return _Recipe(**fixed, **declared, ignored=ignored)
        knobs = {k: getattr(defaults, k) if given[k] is None else given[k] for k in ("nfe", "cfg", "sway")}
        grid = request.t_grid
        ignored = tuple(sorted(k for k in ("nfe", "sway") if grid is not None and given[k] is not None))
        if grid is not None:
            knobs["nfe"] = len(grid) - 1
        return _Recipe(**knobs, t_grid=grid, **declared, ignored=ignored)

    def _condition(self, instruction: str, clip: _Clip | None):
        """(text [1, nt, T], c_mask [1, nt], the clip's VAE posterior (mean, std) [1, L, np] or None)
        — cached per instruction and clip, so a re-roll runs neither the thinker nor the encoder."""
        key = (self.checkpoint.name, instruction, clip.digest if clip else None)
        if key in self._cache:
            self._cache.move_to_end(key)
            return (*self._cache[key], True)
        conditioner = self._conditioner
        with self._placed(conditioner.model), autocast(self.device, self.precision), torch.inference_mode():
            layers, c_mask = conditioner.hidden_states(instruction, clip.wav_16k if clip else None)
            text = fuse_hidden_states(layers, self._model.layer_weights.to(self.device), self._model.layer_scale.to(self.device))
        posterior = None
        if clip is not None:
            with self._placed(self._model.vae), torch.inference_mode():
                posterior = self._model.vae.posterior(torch.from_numpy(clip.wav_24k)[None].to(self.device))
        entry = (text.to(self.device), c_mask.to(self.device), posterior)
        self._cache[key] = entry
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return (*entry, False)

    def _reference(self, posterior, clip: _Clip | None, vae_sample: bool, seed: int):
        """The reference latents [1, np, L] and their mask [1, np] (None without a clip): frames
        past the clip's ``T // 480`` valid ones are marked padding, as upstream masks by length."""
        if clip is None:
            return torch.zeros(1, 0, self._model.dit.latent_dim, device=self.device), None
        mean, std = posterior
        generator = None
        if vae_sample:
            generator = torch.Generator(device=mean.device).manual_seed((seed + VAE_SEED_OFFSET) % 2**63)
        with torch.inference_mode():
            ref = self._model.vae.latents(mean, std, sample=vae_sample, generator=generator)
        ref_mask = torch.arange(ref.shape[1], device=ref.device)[None] < min(clip.ref_frames, ref.shape[1])
        return ref, ref_mask

    def _sample(self, dit, batcher: StepBatcher | None, **request) -> torch.Tensor:
        """The Euler steps: shared with concurrent requests through ``batcher``, or alone with
        ``sample_latents`` (offload, max_batch 1); both under the pipeline's precision."""
        with autocast(self.device, self.precision):
            if batcher is not None:
                return batcher.sample(**request)
            with self._placed(dit):
                return sample_latents(dit, **request)

    @contextlib.contextmanager
    def _placed(self, module: torch.nn.Module):
        """With offload, move ``module`` to the accelerator for the block and back afterwards."""
        if not self.offload:
            yield
            return
        module.to(self.device)
        try:
            yield
        finally:
            module.to("cpu")
            torch.cuda.empty_cache()


def _checked_source(source, limits: Limits) -> MonoClip:
    """The source mixed to mono, through the same checks as an upload (decoded once: an upload's
    validator decoded it already, see ``audio_io.read_mono``)."""
    mono = load_mono(source, limits)
    check_clip(mono.mono, mono.sample_rate, limits, channels=mono.channels)
    return mono


def _clip(wav_24k: np.ndarray, wav_16k: np.ndarray | None, source: MonoClip, checkpoint: AuKCheckpoint) -> _Clip:
    return _Clip(
        wav_24k=np.ascontiguousarray(wav_24k),
        wav_16k=wav_16k,
        source_seconds=source.seconds,
        source_rate=source.sample_rate,
        source_channels=source.channels,
        digest=hashlib.sha1(np.ascontiguousarray(wav_24k).tobytes()).hexdigest(),
        hop=checkpoint.hop,
    )


def _prepare_clip(source, limits: Limits, checkpoint: AuKCheckpoint, *, want_16k: bool) -> _Clip:
    clip = _checked_source(source, limits)
    wav_24k = dsp.resample(clip.mono, clip.sample_rate, checkpoint.sample_rate)
    wav_16k = dsp.resample(clip.mono, clip.sample_rate, QWEN_SAMPLE_RATE) if want_16k else None
    return _clip(wav_24k, wav_16k, clip, checkpoint)


def _prepare_region(request: EditRequest, limits: Limits, checkpoint: AuKCheckpoint, *, want_16k: bool):
    """(the window the model edits as a clip, the whole source at the VAE's rate, the region plan)."""
    source = _checked_source(request.audio, limits.for_region(request.region_end))
    rate = checkpoint.sample_rate
    whole = dsp.resample(source.mono, source.sample_rate, rate)
    plan = plan_region(*request.region, whole.shape[0], rate, limits.max_input_seconds)
    window = whole[plan.window_start: plan.window_end]
    wav_16k = dsp.resample(window, rate, QWEN_SAMPLE_RATE) if want_16k else None
    return _clip(window, wav_16k, source, checkpoint), whole, plan


def _frame_budget(seconds: float | None, clip: _Clip | None, fit: bool) -> tuple[int, int, bool]:
    """(target frames, reference frames, whether the 65,536-frame cap clamped the target)."""
    ref_frames = clip.ref_frames if clip else 0
    if seconds is not None:
        gen_frames = max(1, frames_for_seconds(seconds))
    else:  # automatic: the request has made sure there is a clip
        gen_frames = math.ceil(clip.wav_24k.shape[0] / clip.hop) if fit else ref_frames
    capped = ref_frames + gen_frames > MAX_TOTAL_FRAMES
    if capped:
        gen_frames = max(1, MAX_TOTAL_FRAMES - ref_frames)
    return gen_frames, ref_frames, capped
