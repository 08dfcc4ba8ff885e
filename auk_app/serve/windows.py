"""A whole recording's windows on the Serve deployment: each window a request of its own, several at once.

:class:`ServeWindows` is a :class:`~auk_app.whole_file.WindowEngine` for
:func:`~auk_app.whole_file.edit_whole`: the app plans every window (it holds the checkpoint's
config), a replica solves it and sends back its edited latents (:meth:`ServeRunner.latents`,
held to the plan), and the app joins them and decodes the recording once. Windows go out about
replicas × ``max_batch`` at a time (the deployment's own answer to ``GET /``), so every replica
batches a few and a long recording takes the deployment's devices together.

The joins and the decode stay in the app because they run through the whole recording in
order: the demo codec's decode carries its oscillator phase and noise from chunk to chunk, and
a window is final only once its neighbour's latents are in. So the app holds the checkpoint's
codec alone (:class:`AppCodec`, loaded on first use on the app's device), which also encodes the
silent windows a plan refuses.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from auk_app.audio_io import MonoClip
from auk_app.auk.checkpoint import AuKCheckpoint, load_codec
from auk_app.auk.plan import EditPlan, plan_edit
from auk_app.auk.request import EditRequest, EditResult
from auk_app.auk.step_reuse import StepTally
from auk_app.auk.stream_decode import StreamDecoder, stream_decoder
from auk_app.auk.vae_decode import fast_decode
from auk_app.config import Limits
from auk_app.progress import Progress, ShouldStop
from auk_app.serve.client import ENGINE, ServeRunner, whole_count
from auk_app.whole_file import WholeFileResult, as_edit_result

MAX_IN_FLIGHT = 64  # windows sent at once whatever the deployment says: a thread and a stream each


class AppCodec:
    """A checkpoint's codec alone, in the app, loaded on first use on ``device``: the demo's harmonic
    codec holds under a kilobyte, the released VAE about 640 MB (its encoder and decoder, float32)."""

    def __init__(self, checkpoint: AuKCheckpoint, device: torch.device):
        self.checkpoint, self.device = checkpoint, device
        self._codec: torch.nn.Module | None = None
        self._lock = threading.Lock()  # one encode or decode chunk at a time, as the pipeline's codec

    def _loaded(self) -> torch.nn.Module:
        if self._codec is None:
            self._codec = load_codec(self.checkpoint, device=self.device)
        return self._codec

    def encode(self, wav: np.ndarray) -> torch.Tensor:
        """The codec's latents [n, L] of a mono clip at its rate (the posterior mean, float32 on the CPU)."""
        with self._lock:
            codec = self._loaded()  # its weights made outside inference mode, so a later decode may compile
            with torch.inference_mode():
                wav = torch.tensor(wav, dtype=torch.float32)[None].to(self.device)
                return codec.encode(wav)[0].float().cpu()

    def stream_decoder(self) -> StreamDecoder:
        """A decoder of a long latent sequence a chunk at a time, as the in-process pipeline's."""
        with self._lock:
            codec = self._loaded()

        def decode(latents: torch.Tensor) -> torch.Tensor:
            with self._lock:
                return fast_decode(codec, latents.to(self.device).float(), compile=self.device.type == "cuda",
                                   clamp=False)

        return stream_decoder(codec, decode)


class ServeWindows:
    """The windows of one whole-recording edit on the deployment behind ``runner`` (a
    :class:`~auk_app.whole_file.WindowEngine`); counts which replicas ran them."""

    def __init__(self, runner: ServeRunner, checkpoint: AuKCheckpoint, limits: Limits, codec: AppCodec):
        info = runner.check()  # now, per edit: the replicas running at the time
        self.runner, self.checkpoint, self.limits, self.codec = runner, checkpoint, limits, codec
        self.max_batch = min(MAX_IN_FLIGHT, _whole(info.get("replicas")) * _whole(info.get("max_batch")))  # in flight
        self.ran: Counter[str] = Counter()  # windows per replica
        self.attempts = 1  # the most sends a window took
        self.made_on = {"device": str(info["device"]), "dtype": str(info["dtype"])}
        self._lock = threading.Lock()

    def plan(self, request: EditRequest) -> EditPlan:
        return plan_edit(request, self.checkpoint, self.limits)

    def latents(self, plan: EditPlan, *, progress: Progress | None = None,
                should_stop: ShouldStop | None = None, tally: StepTally | None = None) -> torch.Tensor:
        served = self.runner.latents(plan, progress=progress, should_stop=should_stop)
        if tally is not None:
            tally.add(served.steps)
        with self._lock:
            self.ran[served.replica or "unnamed"] += 1
            self.attempts = max(self.attempts, served.attempts)
            self.made_on = {"device": served.device, "dtype": served.dtype}
        return served.latents

    def encode(self, wav: np.ndarray) -> torch.Tensor:
        return self.codec.encode(wav)

    def stream_decoder(self) -> StreamDecoder:
        return self.codec.stream_decoder()

    def edit_result(self, made: WholeFileResult, source: MonoClip) -> EditResult:
        """``made`` as every edit's result (:func:`~auk_app.whole_file.as_edit_result`), its record
        naming the engine, the deployment and how many windows each replica ran."""
        result = as_edit_result(made, source, **self.made_on)
        record = result.record
        windows: dict[str, Any] = {**record.windows, "replicas": dict(sorted(self.ran.items()))}
        record = replace(record, engine=ENGINE, engine_server=self.runner.host, attempts=self.attempts, windows=windows)
        return replace(result, record=record)


def _whole(value: Any) -> int:
    """A count from the deployment's answer, or 1 where it gave none."""
    count = whole_count(value)
    return count if count and count > 0 else 1
