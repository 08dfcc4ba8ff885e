"""What the app loads after its page is up, one step at a time in a background thread.

Every one-time cost a first run would otherwise pay (the demo models, the edit check's pYIN, which
numba compiles on a machine without its cache, the first figure) is paid here instead, while the
page already answers and says what is still loading (:func:`auk_app.ui.text.loading_line`). A run
that starts meanwhile is not refused: it loads what it needs itself, or waits for the step that is
loading it. A step that fails is logged and skipped; the run that needs it reports the failure.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from auk_app.audex.request import AudexRequest
from auk_app.auk.request import EditRequest
from auk_app.job import run_request
from auk_app.knobs import audex_request
from auk_app.service import Studio

log = logging.getLogger(__name__)

Step = tuple[str, Callable[[], object]]


class Warming:
    """Named steps run in order in one daemon thread; ``pending()`` names those not yet finished."""

    def __init__(self, steps: list[Step], *, on_done: Callable[[float], None] | None = None):
        self._steps = list(steps)
        self._on_done = on_done
        self._finished = 0
        self._lock = threading.Lock()
        self._done = threading.Event()
        if not self._steps:
            self._done.set()

    def start(self) -> None:
        threading.Thread(target=self._run, name="warming", daemon=True).start()

    def pending(self) -> list[str]:
        """The steps still to finish, the running one first."""
        with self._lock:
            return [name for name, _ in self._steps[self._finished:]]

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def _run(self) -> None:
        started = time.perf_counter()
        for name, step in self._steps:
            try:
                step()
            except Exception:  # the run that needs it meets the same failure and says so
                log.exception("warming up %s failed", name)
            with self._lock:
                self._finished += 1
        self._done.set()
        if self._on_done is not None:
            self._on_done(time.perf_counter() - started)


def startup_steps(studio: Studio) -> list[Step]:
    """What a first run would pay for: the first figure, a short run through each demo model (loading
    it, under the pipelines' own locks, and paying its first inference), and then the edit check,
    whose pYIN numba compiles when it has no cache. Released weights load on first use or with
    --preload: they may not fit on one device together, and loading both unasked would hold that
    memory."""
    from auk_app import check
    from auk_app.ui import figures

    steps: list[Step] = [("the figures", figures.warm_up)]
    default = studio.entry("auto")
    if default.demo and studio.engine.host is None:
        steps.append((default.label, lambda: run_request(studio, _trial_edit(), default.key)))
    if studio.audex_demo and not studio.config.audex_server:
        steps.append(("Audex-Tiny (demo)", lambda: studio.text_to_audio(_trial_sound(studio))))
    steps.append(("the edit check", check.warm_up))  # last: the longest, and only edits wait for it
    return steps


def _trial_edit() -> EditRequest:
    """Half a second of a 220 Hz tone, 6 dB quieter: the clip's encoder, the text encoder, the DiT
    and the decoder each run once."""
    rate = 24_000
    tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(rate // 2) / rate)).astype(np.float32)
    return EditRequest("Decrease the volume by 6 dB.", audio=(tone, rate), seed=0)


def _trial_sound(studio: Studio) -> AudexRequest:
    knobs = {"caption": "A 440 Hz beep lasting 0.2 seconds", "max_seconds": 0.2}
    return audex_request(knobs, studio.config.limits, seconds=studio.audex_seconds)
