"""What one AuK run will do, decided before any model runs: :func:`plan_edit`.

A plan is pure data, built from a checked request, its decoded source and the checkpoint's
declared defaults: the sampling recipe, the clip at the rates the models read (24 kHz for the
VAE, 16 kHz for a text encoder that hears it), the region's window, and the frame budget. Every
check that can refuse a request runs here, so a bad clip fails fast and nothing later re-parses it;
:meth:`AuKPipeline.run <auk_app.auk.pipeline.AuKPipeline.run>` only executes a plan, and the run's
record is the plan plus what the run measured (:meth:`EditPlan.record`).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, replace

import numpy as np

from auk_app import dsp
from auk_app.audio_io import MonoClip, load_mono
from auk_app.auk.checkpoint import AuKCheckpoint
from auk_app.auk.configs import RECIPE_KNOBS, Recipe
from auk_app.auk.region import RegionPlan, plan_region
from auk_app.auk.request import EditRecord, EditRequest
from auk_app.config import MAX_TOTAL_FRAMES, QWEN_SAMPLE_RATE, Limits, frames_for_seconds
from auk_app.validate import check_clip


@dataclass(frozen=True)
class Clip:
    """The audio the model reads: the whole clip, or a region's window of it."""

    wav_24k: np.ndarray  # mono at the VAE's rate: what it encodes and the figure shows
    wav_16k: np.ndarray | None  # for a text encoder that hears the clip (Qwen2.5-Omni); None otherwise
    source: MonoClip  # the decoded upload, before resampling
    digest: str  # of wav_24k: the conditioning cache's key
    hop: int

    @property
    def ref_frames(self) -> int:
        """Valid reference frames, upstream's ``T // 480``; the encoder may emit one more."""
        return self.wav_24k.shape[0] // self.hop


@dataclass(frozen=True)
class EditPlan:
    """One run, decided: see the module docstring."""

    checkpoint: AuKCheckpoint
    request: EditRequest
    recipe: Recipe
    clip: Clip | None
    whole: np.ndarray | None  # a region edit's whole source at the VAE's rate, which the result goes back into
    region: RegionPlan | None
    gen_frames: int
    ref_frames: int
    frames_capped: bool  # the DiT's 65,536-frame cap clamped the target
    fit_to_source: bool  # automatic length: the output is trimmed to the clip's exact length
    planned_in: float  # seconds plan_edit took (decode, checks, resampling)

    def with_seed(self, seed: int) -> EditPlan:
        """This plan with another seed: a candidate's run, planned once for all of them."""
        return self if seed == self.request.seed else replace(self, request=replace(self.request, seed=seed))

    @property
    def samples(self) -> int:
        """How long the run's waveform is, before a region goes back into its recording: the clip's
        exact length with an automatic length, else the target's whole frames."""
        return self.clip.wav_24k.shape[0] if self.fit_to_source else self.gen_frames * self.checkpoint.hop

    @property
    def source(self) -> np.ndarray | None:
        """The source as the result's figure shows it: the whole recording for a region edit."""
        return self.whole if self.region is not None else None if self.clip is None else self.clip.wav_24k

    def record(self, *, seconds: float, ref_latent_frames: int, cache_hit: bool, timings: dict[str, float],
               device: str, dtype: str) -> EditRecord:
        """The run's record: this plan plus what the run measured (``timings`` with its "total")."""
        request, clip, rate = self.request, self.clip, self.checkpoint.sample_rate
        region = self.region
        return EditRecord(
            checkpoint_name=self.checkpoint.name, variant=self.checkpoint.variant,
            checkpoint=self.checkpoint.directory.name, instruction=request.instruction, seed=request.seed,
            recipe=self.recipe, gen_frames=self.gen_frames,
            ref_frames=self.ref_frames, ref_latent_frames=ref_latent_frames, frames_capped=self.frames_capped,
            fit_to_source=self.fit_to_source, seconds=seconds, sample_rate=rate,
            source_seconds=clip.source.seconds if clip else None,
            source_samples_24k=clip.wav_24k.shape[0] if clip else None,
            source_sample_rate=clip.source.sample_rate if clip else None,
            source_channels=clip.source.channels if clip else None,
            region=request.region,
            region_context=None if region is None else (region.before / rate, region.after / rate),
            region_crossfade=None if region is None else region.crossfade / rate,
            region_seconds=None if region is None else seconds - self.whole.shape[0] / rate + (
                request.region[1] - request.region[0]),
            vae_sample=request.vae_sample, condition_cache_hit=cache_hit,
            timings={k: round(v, 4) for k, v in timings.items()},
            rtf=round(timings["total"] / seconds, 4),
            device=device, dtype=dtype,
        )  # fmt: skip


def plan_edit(request: EditRequest, checkpoint: AuKCheckpoint, limits: Limits, *,
              source: MonoClip | None = None) -> EditPlan:
    """The plan of ``request`` on ``checkpoint``; a source that cannot be used raises InputError here.
    ``source`` is the request's clip decoded already (under its ``read_limits``, as an edit's intake
    reads it); without it the request's audio is decoded here."""
    started = time.perf_counter()
    want_16k = checkpoint.text_encoder.reads_audio
    clip, whole, region = None, None, None
    if request.audio is not None and source is None:
        source = load_mono(request.audio, request.read_limits)
    if request.region is not None:
        region_limits = limits.for_region(request.region[1])
        _check_source(source, region_limits)
        whole = dsp.resample(source.mono, source.sample_rate, checkpoint.sample_rate)
        region = plan_region(*request.region, whole.shape[0], checkpoint.sample_rate, window_seconds(checkpoint, limits))
        clip = _clip(whole[region.window_start: region.window_end], checkpoint.sample_rate, source, checkpoint, want_16k)
    elif request.audio is not None:
        _check_source(source, limits)
        clip = _clip(source.mono, source.sample_rate, source, checkpoint, want_16k)
    fit = clip is not None and request.seconds is None
    seconds = request.seconds
    if region is not None and seconds is not None:  # the region's target, with the window's context around it
        seconds += (region.before + region.after) / checkpoint.sample_rate
    gen_frames, ref_frames, capped = _frame_budget(seconds, clip)
    return EditPlan(
        checkpoint=checkpoint, request=request, recipe=recipe_for(request, checkpoint), clip=clip, whole=whole,
        region=region, gen_frames=gen_frames, ref_frames=ref_frames, frames_capped=capped, fit_to_source=fit,
        planned_in=time.perf_counter() - started,
    )  # fmt: skip


def window_seconds(checkpoint: AuKCheckpoint, limits: Limits) -> float:
    """The longest clip the model reads at once: what the checkpoint was trained on, within the limits."""
    return min(checkpoint.capabilities.max_clip_seconds, limits.max_input_seconds)


def recipe_for(request: EditRequest, checkpoint: AuKCheckpoint) -> Recipe:
    """The recipe ``request`` runs on ``checkpoint``: its knobs over the checkpoint's defaults."""
    return checkpoint.defaults.over({k: getattr(request, k) for k in RECIPE_KNOBS})


def _check_source(source: MonoClip, limits: Limits) -> None:
    """The source through the same checks as an upload under ``limits``."""
    check_clip(source.mono, source.sample_rate, limits, channels=source.channels)


def _clip(wav: np.ndarray, rate: int, source: MonoClip, checkpoint: AuKCheckpoint, want_16k: bool) -> Clip:
    """``wav`` (mono at ``rate``) at the VAE's rate, and at the thinker's when it hears the clip."""
    wav_24k = dsp.resample(wav, rate, checkpoint.sample_rate)  # contiguous float32
    return Clip(
        wav_24k=wav_24k,
        wav_16k=dsp.resample(wav, rate, QWEN_SAMPLE_RATE) if want_16k else None,
        source=source,
        digest=hashlib.sha1(wav_24k.tobytes()).hexdigest(),
        hop=checkpoint.hop,
    )


def _frame_budget(seconds: float | None, clip: Clip | None) -> tuple[int, int, bool]:
    """(target frames, reference frames, whether the 65,536-frame cap clamped the target); without
    ``seconds`` the clip's length in whole frames (the request has made sure there is a clip)."""
    ref_frames = clip.ref_frames if clip else 0
    gen_frames = max(1, frames_for_seconds(seconds)) if seconds is not None else math.ceil(clip.wav_24k.shape[0] / clip.hop)
    capped = ref_frames + gen_frames > MAX_TOTAL_FRAMES
    if capped:
        gen_frames = max(1, MAX_TOTAL_FRAMES - ref_frames)
    return gen_frames, ref_frames, capped
