"""The edits on a Ray Serve deployment: the :class:`~auk_app.engine.Engine` the Studio picks with --auk-server.

A plan's window goes to a replica and comes back as a waveform (:class:`ServeRunner`); a whole
recording's windows go out as separate requests and come back as latents, which the app joins
and decodes with the checkpoint's codec, loaded here on the first such edit and kept
(:mod:`auk_app.serve.windows`). The replicas hold the thinker, so this engine lends none: content
checks and the thinker's rewrites are not made for edits on Serve.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

from auk_app.audio_io import MonoClip
from auk_app.auk.plan import EditPlan
from auk_app.auk.request import EditRequest, EditResult
from auk_app.catalog import ModelEntry
from auk_app.config import Limits
from auk_app.engine import Thinker
from auk_app.progress import Progress, ShouldStop
from auk_app.serve.client import ServeRunner
from auk_app.serve.windows import AppCodec, ServeWindows
from auk_app.whole_file import edit_request_whole


class ServeEngine:
    """Edits on the deployment ``runner`` calls; whole recordings decoded in this process on ``device``."""

    def __init__(self, runner: ServeRunner, limits: Limits, device: torch.device):
        self.runner, self.limits, self.device = runner, limits, device
        self.host = runner.host
        self._codecs: dict[str, AppCodec] = {}  # per model: its codec alone, for whole recordings
        self._lock = threading.Lock()

    def run(self, plan: EditPlan, entry: ModelEntry, *, progress: Progress | None = None,
            should_stop: ShouldStop | None = None) -> EditResult:
        return self.runner.run(plan, progress=progress, should_stop=should_stop)

    def windows(self, entry: ModelEntry, clip: MonoClip, request: EditRequest, *, progress: Progress | None = None,
                should_stop: ShouldStop | None = None) -> EditResult:
        with self._lock:
            codec = self._codecs.setdefault(entry.key, AppCodec(entry.checkpoint, self.device))
        windows = ServeWindows(self.runner, entry.checkpoint, self.limits, codec)
        made = edit_request_whole(windows, clip, request, progress=progress, should_stop=should_stop)
        return windows.edit_result(made, clip)

    def start(self, entry: ModelEntry, *, preload: bool) -> str:
        """A deployment that is down is one sentence now, not at the first edit; the replicas load their own model."""
        deployment = self.runner.check()
        return (f"AuK edits run on the Ray Serve deployment at {self.host}: {deployment['checkpoint_name']} on "
                f"{deployment['device']}, {deployment['dtype']} (one replica's answer).")

    @contextlib.contextmanager
    def thinker(self, entry: ModelEntry) -> Iterator[Thinker | None]:
        yield None
