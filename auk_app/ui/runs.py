"""Model runs that stop when their request goes away: Stop, a client's cancel, a closed tab.

Gradio runs a sync handler in a worker thread it cannot interrupt and holds the concurrency
slot until that thread returns, so a cancelled edit would keep the GPU for all its remaining
steps. Here the handler runs in a thread the request may abandon, beside a stop flag the
pipelines check between steps (and Audex between tokens):

* Stop and ``gradio_client``'s ``job.cancel()`` make Gradio cancel the request's task; the
  coroutine ends at once and raises the flag on its way out, so the thread ends within one step
  and the next request waits at most that long for the pipeline's lock.
* A client that disconnects (a closed tab, a killed script) is not cancelled by Gradio 6: its
  SSE stream only marks the session's queued events dead (``Event.alive``), and a browser whose
  heartbeat drops marks them closed (``Event.closed``), which Gradio itself runs anyway. A watcher
  polls both marks and raises the flag; a request already marked when its turn comes is not started
  at all (the flag would only be seen after loading and conditioning, at the first step). This reads
  the queue's internals, pinned with the gradio version and held by tests/app/test_cancel.py.
* A client that gives up during its join (the validator's upload check can take seconds) never
  opens its stream, so nothing marks its event: the validators ask the join's own HTTP request
  (:func:`client_gone`) after the check and queue nothing for a client that has hung up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import gradio as gr

from auk_app.errors import AppError

DISCONNECT_POLL_SECONDS = 0.2
# A validated request is in Gradio's queue within milliseconds; a reservation never matched to
# an event (its push failed after validation) stops counting after this.
ADMISSION_GRACE_SECONDS = 5.0


class Busy(AppError):
    """The model queue is full; the message names the cap. Validators return it as a failed verdict,
    the one refusal Gradio answers with its text (HTTP 422) and gradio_client raises with it."""


class Admission:
    """At most ``cap`` model requests waiting, however many arrive at once.

    Gradio checks its ``max_size`` before it runs the validator, so 40 simultaneous arrivals all
    pass an empty queue's check and are all queued; and that cap counts every queued event, so a
    full model queue would also refuse ``/model_info``. Here a model endpoint's validator, once the
    values pass, reserves a place under a lock: the model events waiting in Gradio's queue plus the
    reservations not yet queued may not reach ``cap``. Each model event that appears in the queue
    (or already running) settles the oldest reservation, since every one passed a validator.

    A request counts as the runs it asks for: ``weights`` maps an endpoint to the input position of
    its count (an edit's ``candidates``: eight candidates wait as eight edits would), 1 elsewhere.
    """

    def __init__(self, api_names: Iterable[str], weights: dict[str, int] | None = None) -> None:
        self.api_names = frozenset(api_names)
        self.weights = dict(weights or {})
        self.cap: int | None = None
        self._blocks: Any = None
        self._reserved: list[tuple[float, int]] = []  # (when, runs) of each validated, not yet queued request
        self._seen: set[str] = set()  # ids of the model events queued or running at the last look
        self._lock = threading.Lock()

    def bind(self, blocks: gr.Blocks, cap: int) -> None:
        """Count ``blocks``' queue (built after its handlers) against ``cap``; unbound, nothing is refused."""
        self._blocks, self.cap = blocks, cap

    def check_room(self, runs: int = 1) -> None:
        """Raise Busy naming the limit if the model queue has no room for ``runs``, reserving nothing:
        a cheap check before the upload check decodes, so a burst of refused requests decodes nothing."""
        if self.cap is not None:
            with self._lock:
                self._refuse_if_full(time.monotonic(), runs)

    def reserve(self, runs: int = 1) -> None:
        """Take ``runs`` places in the model queue, or raise Busy naming the limit."""
        if self.cap is None:
            return
        now = time.monotonic()
        with self._lock:
            self._refuse_if_full(now, runs)
            self._reserved.append((now, runs))

    def _refuse_if_full(self, now: float, runs: int) -> None:
        """Settle the reservations that reached the queue, then refuse if ``runs`` more do not fit (under
        the lock). One request always fits an empty queue, whatever it asks for."""
        waiting, present = self._model_events()
        self._reserved = self._reserved[len(present - self._seen):]  # the newly queued, oldest first
        self._seen = present
        self._reserved = [(t, n) for t, n in self._reserved if now - t < ADMISSION_GRACE_SECONDS]
        held = waiting + sum(n for _, n in self._reserved)
        if held + runs > self.cap and (held or not self.cap):
            asked = "" if runs == 1 else f" (this request asks for {runs})"
            raise Busy(f"The server is busy: {held} runs are already waiting for the model, the most it queues "
                       f"is {self.cap}{asked}. Try again in a minute.")

    def _runs_of(self, event) -> int:
        """The runs a queued event asks for: its count input where its endpoint has one, else 1."""
        position = self.weights.get(event.fn.api_name)
        data = getattr(getattr(event, "data", None), "data", None)
        if position is None or not data or position >= len(data):
            return 1
        value = data[position]
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1 else 1

    def _model_events(self) -> tuple[int, set[str]]:
        """(runs the model events waiting ask for, ids of those waiting or running) in Gradio's queue,
        read from its internals like ``_disconnected``."""
        queue = self._blocks._queue
        waiting = [e for q in list(queue.event_queue_per_concurrency_id.values()) for e in list(q.queue)
                   if e.fn.api_name in self.api_names]
        running = [e for job in list(queue.active_jobs) if job for e in job if e.fn.api_name in self.api_names]
        return sum(self._runs_of(e) for e in waiting), {e._id for e in waiting + running}


class Runs:
    """The stop flag of each session's current run."""

    def __init__(self) -> None:
        self._flags: dict[str | None, threading.Event] = {}
        self._lock = threading.Lock()

    def flag(self, request: gr.Request | None) -> threading.Event:
        """The caller's flag; a fresh one where no run is registered (a ZeroGPU worker process)."""
        with self._lock:
            return self._flags.get(_session(request)) or threading.Event()

    def stop(self, request: gr.Request | None) -> None:
        self.flag(request).set()

    @contextlib.contextmanager
    def _running(self, session: str | None):
        flag = threading.Event()
        with self._lock:
            self._flags[session] = flag
        try:
            yield flag
        finally:
            flag.set()  # whatever ended the request, its thread has nothing left to deliver
            with self._lock:
                if self._flags.get(session) is flag:
                    del self._flags[session]

    def stoppable(self, handler: Callable[..., Any]) -> Callable[..., Any]:
        """``handler`` (sync, with a ``request`` parameter) as a coroutine with the same signature."""
        signature = inspect.signature(handler)

        @functools.wraps(handler)
        async def run(*args, **kwargs):
            request = signature.bind_partial(*args, **kwargs).arguments.get("request")
            if _disconnected(request):
                raise gr.Error("The client went away before its run started, so it was not run.",
                               print_exception=False)
            with self._running(_session(request)) as flag:
                watcher = asyncio.create_task(_watch_disconnect(request, flag))
                try:
                    work = functools.partial(handler, *args, **kwargs)
                    return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                finally:
                    watcher.cancel()

        return run


async def _watch_disconnect(request: gr.Request | None, flag: threading.Event) -> None:
    while not flag.is_set():
        if _disconnected(request):
            flag.set()
            return
        await asyncio.sleep(DISCONNECT_POLL_SECONDS)


def _disconnected(request: gr.Request | None) -> bool:
    """Whether Gradio has marked a running event of the caller's session dead (its stream went away)
    or closed (its browser's heartbeat stopped): either way nobody will read the result."""
    session = _session(request)
    app = getattr(getattr(request, "request", None), "app", None)
    if session is None or app is None:
        return False
    queue = app.get_blocks()._queue
    return any(not event.alive or getattr(event, "closed", False)
               for job in queue.active_jobs if job for event in job if event.session_hash == session)


async def client_gone(request: gr.Request | None) -> bool:
    """Whether the client of ``request``'s HTTP request has hung up. Meaningful in a validator, whose
    request is the queue join still waiting for its reply; once a reply is sent, uvicorn reports
    every request as disconnected."""
    is_disconnected = getattr(getattr(request, "request", None), "is_disconnected", None)
    return is_disconnected is not None and bool(await is_disconnected())


def _session(request: gr.Request | None) -> str | None:
    return getattr(request, "session_hash", None)
