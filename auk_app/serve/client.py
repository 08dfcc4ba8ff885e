"""The app's side of the Serve deployment: a plan out over HTTP, a window's waveform back, spliced here.

Plain HTTP to Serve's proxy (httpx; the app imports no Ray). :meth:`ServeRunner.run` takes the
plan the Studio made, sends its window (:mod:`auk_app.serve.wire`), reports the replica's
progress lines as they come and watches ``should_stop`` in the caller's thread; Stop hangs up,
and Serve cancels the request on its replica. A region's window goes back into the whole
recording here, and the record is the plan's, with the replica's measures and its name.

Failures are one sentence (:class:`ServeError`): the deployment that cannot be reached, one that
refuses the request, one silent for ``idle_timeout`` seconds. A stream that breaks before its
result (a replica that died, a proxy that restarted) is sent again, up to ``attempts`` times in
all, after ``retry_pause`` seconds: Serve routes it to a live replica, and the same plan and seed
give the same waveform. Nothing is written by this module; the caller writes files only from a
finished result.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from dataclasses import replace
from collections.abc import Callable
from typing import Any

import httpx

from auk_app.audex.remote import hang_up
from auk_app.auk.plan import EditPlan
from auk_app.auk.region import splice
from auk_app.auk.request import EditResult
from auk_app.errors import AppError, Cancelled, InputError
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.serve.wire import plan_body, unpack, window_plan
from auk_app.urls import http_url, named, server_host

ENGINE = "ray-serve"
_POLL_SECONDS = 0.05


class ServeError(AppError):
    """The Serve deployment could not serve an edit; the message says what happened and what to do."""


class _Lost(Exception):
    """The stream broke before its result: worth sending again."""


class ServeRunner:
    """Runs AuK plans on the Serve deployment at ``url`` (the proxy's address and the app's route,
    e.g. ``http://head:8000/auk``)."""

    engine = ENGINE

    def __init__(self, url: str, *, connect_timeout: float = 5.0, idle_timeout: float = 60.0, attempts: int = 3,
                 retry_pause: float = 2.0):
        self.url = check_url(url)
        self.host = server_host(url)
        self.timeout = httpx.Timeout(idle_timeout, connect=connect_timeout)
        # A stream's reads wait as long as it takes: _attempt's idle check gives up on a silent
        # replica first, with its sentence, instead of a read timeout that would send the edit again.
        self.stream_timeout = httpx.Timeout(None, connect=connect_timeout)
        self.idle_timeout = idle_timeout
        self.attempts = attempts
        self.retry_pause = retry_pause

    # ------------------------------------------------------------------ status

    def check(self) -> dict[str, Any]:
        """What the deployment serves (one replica's answer); ServeError when it cannot be reached."""
        try:
            response = httpx.get(self.url, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code != 200:
            raise ServeError(f"The AuK Serve deployment at {self.host} answered {response.status_code} "
                             f"({response.text[:120]!r}); check that the `auk` application is running "
                             "(`serve status`) and that the URL names its route, e.g. http://host:8000/auk.")
        try:
            info = response.json()
            info["checkpoint_name"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ServeError(f"The server at {self.host} is not an AuK Serve deployment (it answered "
                             f"{response.text[:80]!r}); point --auk-server at its route, e.g. "
                             "http://host:8000/auk.") from exc
        return info

    def _unreachable(self, exc: Exception) -> ServeError:
        return ServeError(f"The AuK Serve deployment at {self.host} cannot be reached ({type(exc).__name__}); "
                          "start it (docs/serve.md: `serve deploy deploy/serve.yaml`) or drop --auk-server "
                          "to edit in this process.")

    # ------------------------------------------------------------------ runs

    def run(self, plan: EditPlan, *, progress: Progress | None = None, should_stop: ShouldStop | None = None,
            on_start: Callable[[dict[str, Any]], None] | None = None) -> EditResult:
        """``plan`` run on a replica: the same result as :meth:`AuKPipeline.run` in process, with the
        record naming the engine and the replica. ``on_start`` gets each attempt's start line (the
        replica's id, node, pid, device) as it arrives."""
        started = time.perf_counter()
        body = json.dumps(plan_body(window_plan(plan), request_id=uuid.uuid4().hex)).encode()
        report = progress or silent
        for attempt in range(1, self.attempts + 1):
            try:
                start, result = self._attempt(body, report, should_stop, on_start, first=attempt == 1)
                break
            except _Lost as lost:
                if attempt == self.attempts:
                    raise ServeError(f"The AuK Serve deployment at {self.host} lost the edit {self.attempts} times "
                                     f"({lost}), so nothing was made; check `serve status` and try again.") from None
                self._pause(should_stop)
        wav = unpack(result["wav"])
        if plan.region is not None:
            wav = splice(plan.whole, plan.region, wav)
        timings = {**result["timings"], "prepare": plan.planned_in,
                   "engine_total": result["timings"].get("total", 0.0),
                   "total": plan.planned_in + time.perf_counter() - started}
        record = plan.record(seconds=wav.shape[0] / plan.checkpoint.sample_rate,
                             ref_latent_frames=result["ref_latent_frames"], cache_hit=result["condition_cache_hit"],
                             timings=timings, device=result["device"], dtype=result["dtype"])
        record = replace(record, engine=ENGINE, engine_server=self.host, replica=start.get("replica"),
                         replica_node=start.get("node"), attempts=attempt, steps=result.get("steps"))
        return EditResult(wav=wav, sample_rate=result["sample_rate"], record=record, source=plan.source)

    def _pause(self, should_stop: ShouldStop | None) -> None:
        until = time.monotonic() + self.retry_pause
        while time.monotonic() < until:
            _check_stop(should_stop, "before it was sent again")
            time.sleep(_POLL_SECONDS)

    def _attempt(self, body: bytes, report: Progress, should_stop: ShouldStop | None, on_start, *,
                 first: bool) -> tuple[dict, dict]:
        """One send: (the replica's start line, its result line). _Lost when the stream broke."""
        lines: queue.Queue = queue.Queue()
        held: dict[str, Any] = {}
        with httpx.Client(timeout=self.stream_timeout) as client:
            reader = threading.Thread(target=self._read, args=(client, body, lines, held), daemon=True)
            reader.start()
            start: dict[str, Any] = {}
            last = time.monotonic()
            try:
                while True:
                    _check_stop(should_stop, "before the result was ready" if start else "before it started")
                    try:
                        kind, item = lines.get(timeout=_POLL_SECONDS)
                    except queue.Empty:
                        if time.monotonic() - last > self.idle_timeout:
                            raise ServeError(f"The AuK Serve deployment at {self.host} sent nothing for "
                                             f"{self.idle_timeout:g} s, so the edit was given up; the replica is "
                                             "overloaded or stuck.") from None
                        continue
                    last = time.monotonic()
                    if kind == "unreachable":
                        if first:
                            raise self._unreachable(item)
                        raise _Lost(f"{type(item).__name__} on sending again")
                    if kind == "lost":
                        raise _Lost(item)
                    if kind == "refused":
                        raise ServeError(item)
                    event = item
                    name = event.get("event")
                    if name == "start":
                        start = event
                        if on_start is not None:
                            on_start(event)
                    elif name == "progress":
                        report(event["phase"], event["done"], event["total"])
                    elif name == "result":
                        return start, event
                    elif name == "error":
                        error = {"cancelled": Cancelled, "input": InputError}.get(event.get("kind"), ServeError)
                        raise error(event.get("message") or "The replica failed the edit.")
            finally:
                response = held.get("response")
                if response is not None:
                    hang_up(response)  # a stop or a failure here: Serve cancels the request on its replica

    def _read(self, client: httpx.Client, body: bytes, lines: queue.Queue, held: dict[str, Any]) -> None:
        """The reader thread: each JSON line into ``lines`` as ("event", dict); how it ended otherwise."""
        try:
            request = client.build_request("POST", self.url, content=body,
                                           headers={"content-type": "application/json"})
            try:
                response = held["response"] = client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                lines.put(("unreachable", exc))
                return
            if response.status_code >= 500:  # a replica that died before it answered, no replica yet: again
                lines.put(("lost", f"HTTP {response.status_code}"))
                return
            if response.status_code != 200:
                text = response.read()[:160].decode("utf-8", "replace")
                lines.put(("refused", f"The AuK Serve deployment at {self.host} refused the edit "
                                      f"(HTTP {response.status_code}: {text!r}); point --auk-server at its "
                                      "route, e.g. http://host:8000/auk."))
                return
            for line in response.iter_lines():
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    lines.put(("lost", f"an unreadable line {line[:60]!r}"))
                    return
                lines.put(("event", event))
                if event.get("event") in ("result", "error"):
                    return
            lines.put(("lost", "the stream ended before the result"))
        except (httpx.HTTPError, OSError) as exc:  # a replica or proxy gone mid-stream; also our own hang-up
            lines.put(("lost", f"{type(exc).__name__}"))


def check_url(url: str) -> str:
    """``url`` ready to call (:func:`auk_app.urls.http_url`), or one sentence."""
    try:
        return http_url(url)
    except ValueError as exc:
        raise ServeError(f"The AuK Serve URL{named(url)} cannot be used: {exc}; give the deployment's proxy "
                         "and route, like http://127.0.0.1:8000/auk.") from None


def _check_stop(should_stop: ShouldStop | None, when: str) -> None:
    if should_stop is not None and should_stop():
        raise Cancelled(f"Stopped {when}; nothing was produced.")
