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
* A raw ``POST /gradio_api/call/<name>`` whose result stream is never opened would run for nobody:
  when its turn comes, a run whose session nobody reads within LISTENER_SECONDS is not started.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import threading
import time
from dataclasses import dataclass
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import gradio as gr

from auk_app.errors import AppError
from auk_app.ui.gradio_queue import events, listening

DISCONNECT_POLL_SECONDS = 0.2
# A call's client opens its result stream as it joins (the page, gradio_client) or right after (a
# raw POST to /call, then its GET); a run whose stream nobody opened within this is not started.
LISTENER_SECONDS = 10.0
# Stop cancels the event as it records the click, in either order: a run that ended this long
# before its Stop was recorded still counts as stopped by it.
STOP_RACE_SECONDS = 1.0


class Busy(AppError):
    """The model queue is full; the message names the cap. Validators return it as a failed verdict,
    the one refusal Gradio answers with its text (HTTP 422) and gradio_client raises with it."""


class Admission:
    """At most ``cap`` model runs waiting or running, however many requests arrive at once.

    Gradio checks its ``max_size`` before it validates, so simultaneous arrivals all passed an empty
    queue's check, and that cap counts events, not the runs they ask for. Here every arrival at a
    model endpoint reserves the runs it asks for (:meth:`reserve`, under a lock, before its checks)
    and keeps them until Gradio has queued it or refused it (:meth:`release`): the runs of the model
    events waiting or running in Gradio's queue plus the reservations still being checked may not
    pass ``cap``, so the rest of a burst is refused at once. A queued event counts itself from the
    moment it is queued, so nothing is counted twice. A request counts as the runs it asks for (an
    edit's candidates): ``weights`` maps an endpoint to the input position of its count, 1 elsewhere;
    :meth:`count` adds an endpoint whose count a function reads from its inputs (a batch's items).
    """

    def __init__(self, api_names: Iterable[str], weights: dict[str, int] | None = None) -> None:
        self.api_names = frozenset(api_names)
        self.weights = dict(weights or {})
        self.cap: int | None = None
        self._blocks: Any = None
        self._reserved: list[int] = []  # the runs of each arrival being checked
        self._lock = threading.Lock()

    def count(self, api_name: str, runs_of: Callable[[list[Any]], int]) -> None:
        """Count ``api_name``'s requests too, each as ``runs_of(its inputs)`` runs."""
        self.api_names = self.api_names | {api_name}
        self.weights[api_name] = runs_of

    def bind(self, blocks: gr.Blocks, cap: int) -> None:
        """Count ``blocks``' queue (built after its handlers) against ``cap``; unbound, nothing is refused."""
        self._blocks, self.cap = blocks, cap

    def runs_of(self, api_name: str | None, data: list[Any]) -> int:
        """The runs a call of ``api_name`` with inputs ``data`` asks for: its count input, else 1."""
        position = self.weights.get(api_name)
        if callable(position):
            return max(1, position(data))
        if position is None or position >= len(data):
            return 1
        value = data[position]
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1 else 1

    @contextlib.contextmanager
    def reserve(self, runs: int):
        """Hold ``runs`` places while the block runs (a call's checks and queueing), or raise Busy
        naming the limit. One request always fits an empty queue."""
        if self.cap is None:
            yield
            return
        with self._lock:
            held = self._held()
            if held + runs > self.cap and (held or not self.cap):
                asked = "" if runs == 1 else f" (this request asks for {runs})"
                raise Busy(f"The server is busy: {held} runs are waiting for the model or running, the most it "
                           f"takes is {self.cap}{asked}. Try again in a minute.")
            self._reserved.append(runs)
        try:
            yield
        finally:
            with self._lock:
                self._reserved.remove(runs)

    def _held(self) -> int:
        """Runs held now (under the lock): the model events' in Gradio's queue, and the arrivals'."""
        waiting, running = events(self._blocks)
        model = [e for e in waiting + running if e.api_name in self.api_names]
        return sum(self.runs_of(e.api_name, e.data) for e in model) + sum(self._reserved)


@dataclass(eq=False)
class _Ended:
    """When a run's thread returned (an abandoned thread runs on to its next step): what Stop waits for."""

    event: threading.Event
    at: float | None = None

    def set(self) -> None:
        self.at = time.monotonic()
        self.event.set()


class Runs:
    """The stop flag of each session's current run, and when its last run's thread ended."""

    def __init__(self) -> None:
        self._flags: dict[str | None, threading.Event] = {}
        self._ended: dict[str | None, _Ended] = {}
        self._stopped_at: dict[str | None, float] = {}
        self._lock = threading.Lock()

    def flag(self, request: gr.Request | None) -> threading.Event:
        """The caller's flag; a fresh one where no run is registered (a ZeroGPU worker process)."""
        with self._lock:
            return self._flags.get(_session(request)) or threading.Event()

    def stop(self, request: gr.Request | None) -> None:
        with self._lock:
            self._stopped_at[_session(request)] = time.monotonic()
        self.flag(request).set()

    def stopped(self, request: gr.Request | None, timeout: float) -> bool:
        """Whether the caller's run has ended since its Stop (waiting up to ``timeout`` seconds for the
        thread to reach its next step): False where none was running then, or it has not ended yet."""
        session = _session(request)
        with self._lock:
            ended, since = self._ended.get(session), self._stopped_at.get(session)
        if ended is None or since is None or not ended.event.wait(timeout):
            return False
        return ended.at >= since - STOP_RACE_SECONDS

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
        """``handler`` (sync, with a ``request`` parameter) as a coroutine with the same signature,
        not started for a client that is gone or that nobody reads."""
        signature = inspect.signature(handler)

        @functools.wraps(handler)
        async def run(*args, **kwargs):
            request = signature.bind_partial(*args, **kwargs).arguments.get("request")
            if _disconnected(request):
                raise gr.Error("The client went away before its run started, so it was not run.",
                               print_exception=False)
            if not await _read_by_someone(request):
                raise gr.Error(f"Nobody opened this call's result stream within {LISTENER_SECONDS:g} s of its turn, "
                               "so it was not run: read the result (GET /gradio_api/call/<name>/<event_id>) "
                               "after posting the call.", print_exception=False)
            ended = _Ended(threading.Event())
            with self._lock:
                self._ended[_session(request)] = ended

            def work():
                try:
                    return handler(*args, **kwargs)
                finally:
                    ended.set()

            with self._running(_session(request)) as flag:
                watcher = asyncio.create_task(_watch_disconnect(request, flag))
                try:
                    return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                finally:
                    watcher.cancel()

        return run


async def _read_by_someone(request: gr.Request | None) -> bool:
    """Whether a client reads the result stream of ``request``'s session, waiting LISTENER_SECONDS for
    one to open it; a call made in this process (no request) has its caller."""
    session = _session(request)
    app = getattr(getattr(request, "request", None), "app", None)
    if session is None or app is None:
        return True
    deadline = time.monotonic() + LISTENER_SECONDS
    while not listening(app.get_blocks(), session):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(DISCONNECT_POLL_SECONDS)
    return True


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
