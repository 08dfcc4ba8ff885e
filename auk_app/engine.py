"""Where an edit's model work runs, behind one door: this process, or a Ray Serve deployment.

An :class:`Engine` runs a plan (:meth:`~Engine.run`), edits a whole recording in windows
(:meth:`~Engine.windows`) and lends the model's thinker (:meth:`~Engine.thinker`) where it holds
one. The edit job asks only this, and does not know which engine it has: :class:`LocalEngine`
runs on the Studio's resident pipeline, :class:`auk_app.serve.engine.ServeEngine` on the
replicas (which hold the thinker, so it lends none).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ContextManager, Protocol

from auk_app.audio_io import MonoClip
from auk_app.auk.pipeline import AuKPipeline
from auk_app.auk.plan import EditPlan
from auk_app.auk.request import EditRequest, EditResult
from auk_app.catalog import ModelEntry
from auk_app.check.transcribe import Transcriber
from auk_app.progress import Progress, ShouldStop
from auk_app.whole_file import as_edit_result, edit_request_whole


@dataclass(frozen=True)
class Thinker:
    """The model's Qwen2.5-Omni thinker, lent for a while: as a transcriber (content checks) and as
    a language model with its tokenizer (the instruction rewriter)."""

    transcriber: Transcriber
    model: Any
    tokenizer: Any


class Engine(Protocol):
    host: str | None  # where the edits run: None in this process, else the deployment's host:port

    def run(self, plan: EditPlan, entry: ModelEntry, *, progress: Progress | None = None,
            should_stop: ShouldStop | None = None) -> EditResult:
        """``plan`` run on ``entry``'s model."""

    def windows(self, entry: ModelEntry, clip: MonoClip, request: EditRequest, *, progress: Progress | None = None,
                should_stop: ShouldStop | None = None) -> EditResult:
        """The whole recording ``clip`` edited by ``request`` in windows (:mod:`auk_app.whole_file`)."""

    def thinker(self, entry: ModelEntry) -> ContextManager[Thinker | None]:
        """``entry``'s thinker while the block runs, or None where this engine holds none here."""

    def start(self, entry: ModelEntry, *, preload: bool) -> str | None:
        """At the app's start: the line that says where edits run, or None in this process; with
        ``preload``, ``entry``'s model loaded now. An engine that cannot serve says so here (AppError)."""


class LocalEngine:
    """The edits run in this process, on the pipeline ``resident(entry)`` lends (the Studio keeps
    one model resident at a time)."""

    host = None

    def __init__(self, resident: Callable[[ModelEntry], ContextManager[AuKPipeline]]):
        self._resident = resident

    def run(self, plan: EditPlan, entry: ModelEntry, *, progress: Progress | None = None,
            should_stop: ShouldStop | None = None) -> EditResult:
        with self._resident(entry) as pipeline:
            return pipeline.run(plan, progress=progress, should_stop=should_stop)

    def windows(self, entry: ModelEntry, clip: MonoClip, request: EditRequest, *, progress: Progress | None = None,
                should_stop: ShouldStop | None = None) -> EditResult:
        with self._resident(entry) as pipeline:
            made = edit_request_whole(pipeline, clip, request, progress=progress, should_stop=should_stop)
        return as_edit_result(made, clip, device=str(pipeline.device), dtype=pipeline.precision.name,
                              quantize=pipeline.quantization.mode)

    def start(self, entry: ModelEntry, *, preload: bool) -> str | None:
        if preload:
            with self._resident(entry) as pipeline:
                pipeline.load()
        return None

    @contextlib.contextmanager
    def thinker(self, entry: ModelEntry) -> Iterator[Thinker | None]:
        if not entry.checkpoint.text_encoder.reads_audio:  # MiniLM reads text, and hears nothing
            yield None
            return
        with self._resident(entry) as pipeline, pipeline.conditioner_in_use() as conditioner:
            yield Thinker(Transcriber.from_conditioner(conditioner, pipeline.text_encoder_path), conditioner.model,
                          conditioner.processor.tokenizer)
