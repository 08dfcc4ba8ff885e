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
  at all (the flag would only be seen after loading and conditioning, at the first step). The marks
  are read through :mod:`auk_app.ui.gradio_queue`, the one place that reads Gradio's queue.
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
from dataclasses import dataclass
from typing import Any

import anyio
import gradio as gr

from auk_app.errors import AppError
from auk_app.ui.gradio_queue import QueuedEvent, events

DISCONNECT_POLL_SECONDS = 0.2
# A validated request is in Gradio's queue within milliseconds; a reservation never matched to
# an event (its push failed after validation) stops counting after this.
ADMISSION_GRACE_SECONDS = 5.0
CHECK_GRACE_SECONDS = 120.0  # a request's checks (the upload's decoding) end well within this


class Busy(AppError):
    """The model queue is full; the message names the cap. Validators return it as a failed verdict,
    the one refusal Gradio answers with its text (HTTP 422) and gradio_client raises with it."""


class Admission:
    """At most ``cap`` model runs waiting or running, however many requests arrive at once.

    Gradio checks its ``max_size`` before it runs the validator, so simultaneous arrivals all passed
    an empty queue's check, and that cap counts events, not the runs they ask for. Here a model
    endpoint's validator reserves the runs its request asks for (:meth:`reserve`) under a lock before
    its checks: the runs of the model events waiting or running in Gradio's queue plus the
    reservations not yet queued may not pass ``cap``, so the rest of a burst is refused at once.
    A request whose checks fail gives its runs back (:meth:`release`); one that passes
    (:meth:`passed`) holds them until its session's event shows in the queue or starts to run
    (:meth:`started`), where the event itself counts. A request counts as the runs it asks for:
    ``weights`` maps an endpoint to the input position of its count (an edit's ``candidates``), 1
    elsewhere; :meth:`count` adds an endpoint whose count a function reads from its inputs (a batch's
    items, from its files).
    """

    def __init__(self, api_names: Iterable[str], weights: dict[str, int] | None = None) -> None:
        self.api_names = frozenset(api_names)
        self.weights = dict(weights or {})
        self.cap: int | None = None
        self._blocks: Any = None
        self._reserved: list[_Reservation] = []
        self._lock = threading.Lock()

    def count(self, api_name: str, runs_of: Callable[[list[Any]], int]) -> None:
        """Count ``api_name``'s requests too, each as ``runs_of(its inputs)`` runs."""
        self.api_names = self.api_names | {api_name}
        self.weights[api_name] = runs_of

    def bind(self, blocks: gr.Blocks, cap: int) -> None:
        """Count ``blocks``' queue (built after its handlers) against ``cap``; unbound, nothing is refused."""
        self._blocks, self.cap = blocks, cap

    def reserve(self, runs: int, session: str | None) -> _Reservation:
        """Hold ``runs`` places for a request of ``session``, or raise Busy naming the limit. One
        request always fits an empty queue."""
        reservation = _Reservation(session, runs, time.monotonic())
        if self.cap is None:
            return reservation
        with self._lock:
            held = self._held(reservation.since)
            if held + runs > self.cap and (held or not self.cap):
                asked = "" if runs == 1 else f" (this request asks for {runs})"
                raise Busy(f"The server is busy: {held} runs are waiting for the model or running, the most it "
                           f"takes is {self.cap}{asked}. Try again in a minute.")
            self._reserved.append(reservation)
        return reservation

    def passed(self, reservation: _Reservation) -> None:
        """The request passed its checks: it goes into Gradio's queue, where its event will count."""
        reservation.passed_at = time.monotonic()

    def release(self, reservation: _Reservation) -> None:
        """The request was refused after all: its runs are free again."""
        with self._lock:
            if reservation in self._reserved:
                self._reserved.remove(reservation)

    def started(self, session: str | None) -> None:
        """A model run of ``session`` has started: its running event counts now, not its reservation."""
        with self._lock:
            self._reserved = [r for r in self._reserved if not (r.passed_at is not None and r.session == session)]

    def _held(self, now: float) -> int:
        """Runs held now (under the lock): the model events' in Gradio's queue, and the reservations
        whose session has no such event yet."""
        waiting, running = events(self._blocks)
        model = [e for e in waiting + running if e.api_name in self.api_names]
        queued = {e.session for e in model}
        self._reserved = [r for r in self._reserved
                          if not r.expired(now) and not (r.passed_at is not None and r.session in queued)]
        return sum(self._runs_of(e) for e in model) + sum(r.runs for r in self._reserved)

    def _runs_of(self, event: QueuedEvent) -> int:
        """The runs a queued event asks for: its count input where its endpoint has one, else 1."""
        position = self.weights.get(event.api_name)
        if callable(position):
            return max(1, position(event.data))
        if position is None or position >= len(event.data):
            return 1
        value = event.data[position]
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1 else 1


@dataclass(eq=False)
class _Reservation:
    """Runs held for a request of ``session`` between its arrival and its event's in Gradio's queue."""

    session: str | None
    runs: int
    since: float
    passed_at: float | None = None

    def expired(self, now: float) -> bool:
        """A passed request is queued within milliseconds, and a check takes seconds at most: a
        reservation past these bounds lost its request (a push that failed after validation)."""
        if self.passed_at is not None:
            return now - self.passed_at > ADMISSION_GRACE_SECONDS
        return now - self.since > CHECK_GRACE_SECONDS


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

    def stoppable(self, handler: Callable[..., Any], *, on_start: Callable[[str | None], None] | None = None,
                  ) -> Callable[..., Any]:
        """``handler`` (sync, with a ``request`` parameter) as a coroutine with the same signature;
        ``on_start(session)`` hears that its run began."""
        signature = inspect.signature(handler)

        @functools.wraps(handler)
        async def run(*args, **kwargs):
            request = signature.bind_partial(*args, **kwargs).arguments.get("request")
            if _disconnected(request):
                raise gr.Error("The client went away before its run started, so it was not run.",
                               print_exception=False)
            if on_start is not None:
                on_start(_session(request))
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
    """Whether a running event of the caller's session has a client that went away (its stream
    closed, or its browser's heartbeat stopped): either way nobody will read the result."""
    session = _session(request)
    app = getattr(getattr(request, "request", None), "app", None)
    if session is None or app is None:
        return False
    return any(event.gone for event in events(app.get_blocks())[1] if event.session == session)


async def client_gone(request: gr.Request | None) -> bool:
    """Whether the client of ``request``'s HTTP request has hung up. Meaningful in a validator, whose
    request is the queue join still waiting for its reply; once a reply is sent, uvicorn reports
    every request as disconnected."""
    is_disconnected = getattr(getattr(request, "request", None), "is_disconnected", None)
    return is_disconnected is not None and bool(await is_disconnected())


def _session(request: gr.Request | None) -> str | None:
    return getattr(request, "session_hash", None)
