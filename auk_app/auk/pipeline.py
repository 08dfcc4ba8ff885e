"""The in-process AuK pipeline: a plan (:mod:`auk_app.auk.plan`) in, a 24 kHz waveform out.

:meth:`AuKPipeline.run` executes a plan in four phases, each reported to
``progress(phase, done, total)``: load the models (once) → condition (fused text condition and
the VAE posterior of the whole clip, cached per instruction and clip) → sample (Euler steps from
the reference latents, a posterior draw) → decode (and splice a region back in). Every check runs
when the plan is made; :meth:`AuKPipeline.generate` is the two in a row.

The reference follows upstream AuK rather than vLLM-Omni: the clip is encoded whole, not cut to
whole 480-sample hops first, and the reference mask marks the frames past ``T // 480`` as
padding (one extra frame when 136 or more samples are left over, see ``AuKVAE.posterior``); by
default the latent is a draw from the posterior, not its mean.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from auk_app.auk.batching import DEFAULT_MAX_BATCH, StepBatcher
from auk_app.auk.checkpoint import AuKCheckpoint, AuKModel, load_auk_checkpoint, read_auk_checkpoint
from auk_app.auk.conditioner import TextConditioner, fuse_hidden_states, load_conditioner
from auk_app.auk.plan import Clip, EditPlan, plan_edit
from auk_app.auk.region import splice
from auk_app.auk.request import EditRequest, EditResult
from auk_app.auk.sampler import SolveSpec, solve, source_origin
from auk_app.auk.step_graphs import StepGraphs
from auk_app.auk.step_reuse import StepTally
from auk_app.auk.stream_decode import StreamDecoder, stream_decoder
from auk_app.auk.vae_decode import fast_decode
from auk_app.config import Limits
from auk_app.errors import Cancelled, CheckpointError
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.quantize import DIT_BLOCKS, TEXT_ENCODER_BLOCKS, Quantization, pick_quantization
from auk_app.runtime import Precision, autocast, pick_device, pick_precision

# The posterior draw's generator is seeded with seed + this offset (vLLM-Omni's value): with the
# request seed itself, ε and the initial noise would be the same random numbers.
VAE_SEED_OFFSET = 0x5EED0A0C


class AuKPipeline:
    """Owns the text conditioner, the DiT and the VAE of one checkpoint; loads them lazily.

    Loading, conditioning and decoding run one request at a time (an internal lock); the Euler
    steps of concurrent requests of one shape bucket are shared, up to ``max_batch`` requests per
    DiT step (:class:`~auk_app.auk.batching.StepBatcher`, ``batcher`` once loaded). With
    ``offload=True`` only the component in use sits on the accelerator, for cards that cannot
    hold all three, and requests run one at a time from start to end, as with ``max_batch=1``.
    ``compile`` (default: on CUDA) compiles the DiT's blocks (``AuKTransformer.compile_blocks``);
    each new step shape then compiles once on first use, which on the CPU costs more than it saves.
    ``pack`` makes the batcher's shared steps attend over each request's valid tokens alone
    (:mod:`auk_app.auk.packing`: variable-length attention on CUDA); off, they attend padded.
    ``quantize`` (``none``, ``int8``, ``int4``: :mod:`auk_app.quantize`) quantizes the DiT's and the
    text encoder's block linears once they are loaded; a mode the device cannot run is refused here.
    """

    def __init__(
        self,
        checkpoint: str | Path | AuKCheckpoint,
        *,
        limits: Limits,
        text_encoder_path: str | Path | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | Precision | None = None,
        offload: bool = False,
        cache_size: int = 8,
        max_batch: int = DEFAULT_MAX_BATCH,
        compile: bool | None = None,
        pack: bool = False,
        quantize: str | Quantization | None = None,
    ):
        self.checkpoint = checkpoint if isinstance(checkpoint, AuKCheckpoint) else read_auk_checkpoint(checkpoint)
        self.text_encoder_path = text_encoder_path
        self.device = pick_device(device)
        self.precision = pick_precision(self.device, dtype)
        self.quantization = pick_quantization(self.device, self.precision, quantize)
        self.offload = offload and self.device.type != "cpu"
        self.compile = self.device.type == "cuda" if compile is None else compile
        self.limits = limits
        self._model: AuKModel | None = None
        self._conditioner: TextConditioner | None = None
        self._cache: OrderedDict[tuple, tuple] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.RLock()
        self.max_batch = max_batch
        self.pack = pack
        self._batched = max_batch > 1 and not self.offload
        self._graphs: StepGraphs | None = None  # the loaded DiT's CUDA graphs, per shape bucket
        self._batcher: StepBatcher | None = None

    # ------------------------------------------------------------------ loading

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @contextlib.contextmanager
    def conditioner_in_use(self):
        """The loaded text encoder, on the accelerator and no other request's while the block runs
        (the Qwen thinker, which content checks also transcribe with)."""
        with self._lock:
            self.load()
            with self._placed(self._conditioner.model):
                yield self._conditioner

    @property
    def batcher(self) -> StepBatcher | None:
        """The loaded DiT's step batcher; None before loading, with offload and with max_batch 1."""
        return self._batcher

    def load(self) -> None:
        if self._model is not None:
            return
        home = torch.device("cpu") if self.offload else self.device
        model = load_auk_checkpoint(self.checkpoint, device=home, dtype=self.precision.weights)
        self.quantization.apply(model.dit, DIT_BLOCKS)
        if self.compile:
            model.dit.compile_blocks()
        encoder = self.checkpoint.text_encoder
        conditioner = load_conditioner(encoder, self.text_encoder_path, device=home, dtype=self.precision.weights)
        self.quantization.apply(conditioner.model, TEXT_ENCODER_BLOCKS)
        if conditioner.hidden_size != self.checkpoint.dit_config.text_hidden_dim:
            raise CheckpointError(
                f"The text encoder's hidden size {conditioner.hidden_size} does not match the DiT's text input "
                f"{self.checkpoint.dit_config.text_hidden_dim}; the checkpoint needs a different text encoder."
            )
        self._model, self._conditioner = model, conditioner
        self._graphs = StepGraphs(model.dit, compute=self.precision.compute)
        self._batcher = (StepBatcher(self._graphs, max_batch=self.max_batch, pack=self.pack) if self._batched
                         else None)

    def unload(self) -> None:
        with self._lock:
            self._model = self._conditioner = self._graphs = self._batcher = None
            self._cache.clear()

    # ------------------------------------------------------------------ requests

    def plan(self, request: EditRequest) -> EditPlan:
        """``request``'s plan on this pipeline's checkpoint and limits (no model work)."""
        return plan_edit(request, self.checkpoint, self.limits)

    def generate(self, request: EditRequest, *, progress: Progress | None = None,
                 should_stop: ShouldStop | None = None) -> EditResult:
        """Plan and run one request; a clip that cannot be used raises InputError before any model work."""
        return self.run(self.plan(request), progress=progress, should_stop=should_stop)

    def run(self, plan: EditPlan, *, progress: Progress | None = None,
            should_stop: ShouldStop | None = None) -> EditResult:
        """Execute ``plan``; Stop (``should_stop``) is honoured between phases and after every step.

        Batched, the lock guards loading, conditioning and decoding and is released for the Euler
        steps, which concurrent requests share through the step batcher. Offloaded (modules move
        between devices) or with max_batch 1, requests run one at a time, start to end.
        """
        report = progress or silent
        timings = {"prepare": plan.planned_in}
        started = time.perf_counter()
        with contextlib.nullcontext() if self._batched else self._lock:  # reentrant: _solve takes it again
            tally = StepTally()
            model, latents, ref_latent_frames, cache_hit = self._solve(plan, report, should_stop, timings, tally)
            with self._lock, _timed(timings, "decode", report):
                wav = self._decode(model, latents, plan)
        timings["total"] = plan.planned_in + time.perf_counter() - started
        record = plan.record(seconds=wav.shape[0] / plan.checkpoint.sample_rate, ref_latent_frames=ref_latent_frames,
                             cache_hit=cache_hit, timings=timings, device=str(self.device), dtype=self.precision.name)
        record = replace(record, steps=asdict(tally), quantize=self.quantization.mode)
        return EditResult(wav=wav, sample_rate=plan.checkpoint.sample_rate, record=record, source=plan.source)

    def latents(self, plan: EditPlan, *, progress: Progress | None = None,
                should_stop: ShouldStop | None = None, tally: StepTally | None = None) -> torch.Tensor:
        """``plan``'s edited latents [gen_frames, L] (float32, on the CPU), not decoded: a window of a
        long recording, which is joined with its neighbours before one decode (:meth:`stream_decoder`);
        ``tally`` gets what its steps did."""
        _, latents, _, _ = self._solve(plan, progress or silent, should_stop, {}, tally or StepTally())
        return latents[0].float().cpu()

    def encode(self, wav: np.ndarray) -> torch.Tensor:
        """The codec's latents [n, L] of a mono clip at its rate (the posterior mean, float32 on the
        CPU): a window of a long recording that is left as it is."""
        with self._lock:
            self.load()
            vae = self._model.vae
            with self._placed(vae), torch.inference_mode():
                return vae.encode(torch.tensor(wav, dtype=torch.float32)[None].to(self.device))[0].float().cpu()

    def stream_decoder(self) -> StreamDecoder:
        """A decoder of a long latent sequence a chunk at a time, on this pipeline's codec (loaded if
        needed); its chunks take turns with the other requests' phases."""
        with self._lock:
            self.load()
            vae = self._model.vae

        def decode(latents: torch.Tensor) -> torch.Tensor:
            with self._lock, self._placed(vae), torch.inference_mode():
                return fast_decode(vae, latents.to(self.device).float(), compile=self.compile, clamp=False)

        return stream_decoder(vae, decode)

    def _solve(self, plan: EditPlan, report: Progress, should_stop: ShouldStop | None, timings: dict[str, float],
               tally: StepTally):
        """Load, condition and sample ``plan``: (the model it ran on, latents [1, n, L], reference
        frames with the encoder's extra one, whether the conditioning came from the cache); ``tally``
        gets what the Euler steps did."""
        if plan.checkpoint is not self.checkpoint:
            raise ValueError(f"this plan was made for {plan.checkpoint.name}, not for {self.checkpoint.name}")

        def stop_point(done: int = 0, total: int = 0) -> None:
            if total:
                report("sample", done, total)
            if should_stop is not None and should_stop():
                raise Cancelled("Stopped before the result was ready; nothing was produced.")

        unlocked = contextlib.nullcontext()
        per_request, per_phase = (unlocked, self._lock) if self._batched else (self._lock, unlocked)
        with per_request:
            with per_phase:
                stop_point()
                with _timed(timings, "load", report):
                    self.load()
                    model, batcher, graphs = self._model, self._batcher, self._graphs  # unload() cannot take them
                with _timed(timings, "condition", report):
                    text, c_mask, posterior, cache_hit = self._condition(plan.request.instruction, plan.clip)
                    ref, ref_mask = self._reference(model, posterior, plan)
                stop_point()
            with _timed(timings, "sample"):
                latents = self._sample(model, batcher, graphs, plan, (text, c_mask, ref, ref_mask), stop_point, tally)
            stop_point()
        return model, latents, ref.shape[1], cache_hit

    # ------------------------------------------------------------------ phases

    def _condition(self, instruction: str, clip: Clip | None):
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
                # A copy: the clip may be the decode cache's read-only array.
                posterior = self._model.vae.posterior(torch.tensor(clip.wav_24k)[None].to(self.device))
        entry = (text.to(self.device), c_mask.to(self.device), posterior)
        self._cache[key] = entry
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return (*entry, False)

    def _reference(self, model: AuKModel, posterior, plan: EditPlan):
        """The reference latents [1, np, L] and their mask [1, np] (None without a clip): frames
        past the clip's ``T // 480`` valid ones are marked padding, as upstream masks by length."""
        if plan.clip is None:
            return torch.zeros(1, 0, model.dit.latent_dim, device=self.device), None
        mean, std = posterior
        sample, generator = plan.request.vae_sample, None
        if sample:
            generator = torch.Generator(device=mean.device).manual_seed((plan.request.seed + VAE_SEED_OFFSET) % 2**63)
        with torch.inference_mode():
            ref = model.vae.latents(mean, std, sample=sample, generator=generator)
        ref_mask = torch.arange(ref.shape[1], device=ref.device)[None] < min(plan.clip.ref_frames, ref.shape[1])
        return ref, ref_mask

    def _sample(self, model: AuKModel, batcher: StepBatcher | None, graphs: StepGraphs, plan: EditPlan,
                conditioning: tuple, on_step, tally: StepTally) -> torch.Tensor:
        """The Euler steps: shared with concurrent requests through ``batcher``, or alone
        (offload, max_batch 1) through this DiT's step graphs; both at the pipeline's precision.
        ``tally`` gets what the steps did (DiT steps run, reused, guided, shared)."""
        text, c_mask, ref, ref_mask = conditioning
        recipe = plan.recipe
        origin = source_origin(ref, ref_mask, plan.gen_frames) if recipe.start == "source" else None
        spec = SolveSpec.of(recipe, text=text, c_mask=c_mask, ref=ref, ref_mask=ref_mask, gen_frames=plan.gen_frames,
                            seed=plan.request.seed, origin=origin, device=self.device, on_step=on_step, tally=tally)
        with autocast(self.device, self.precision):
            if batcher is not None:
                return batcher.sample(spec)
            with self._placed(model.dit):
                return solve(model.dit, spec, graphs)

    def _decode(self, model: AuKModel, latents: torch.Tensor, plan: EditPlan) -> np.ndarray:
        """The waveform, trimmed to the clip with fit_to_source and spliced back for a region.
        Unclamped: the app counts what reaches full scale and may keep headroom; writing clamps."""
        with self._placed(model.vae), torch.inference_mode():
            wav = fast_decode(model.vae, latents.float(), compile=self.compile, clamp=False)[0]
            wav = wav.cpu().numpy().astype(np.float32)
        if plan.fit_to_source:
            wav = wav[: plan.clip.wav_24k.shape[0]]
        return wav if plan.region is None else splice(plan.whole, plan.region, wav)

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



@contextlib.contextmanager
def _timed(timings: dict[str, float], phase: str, report: Progress | None = None):
    """Time ``phase`` into ``timings``, reporting its start and end to ``report`` if given."""
    if report:
        report(phase, 0, 1)
    tick = time.perf_counter()
    yield
    timings[phase] = time.perf_counter() - tick
    if report:
        report(phase, 1, 1)
