"""The app's side of the Serve deployment: a plan out over HTTP, a window's waveform back, spliced here.

Plain HTTP to Serve's proxy (httpx; the app imports no Ray). :meth:`ServeRunner.run` takes the
plan the Studio made, sends its window (:mod:`auk_app.serve.wire`), reports the replica's
progress lines as they come and watches ``should_stop`` in the caller's thread; Stop hangs up,
and Serve cancels the request on its replica. A region's window goes back into the whole
recording here, and the record is the plan's, with the replica's measures and its name.
:meth:`ServeRunner.latents` sends a window of a whole recording the same way and gets its edited
latents back, held to the plan's shape, for the app to join and decode
(:mod:`auk_app.serve.windows`).

Failures are one sentence (:class:`ServeError`): the deployment that cannot be reached, one that
refuses the request, one silent for ``idle_timeout`` seconds. Heartbeats prove the connection,
not the work: an edit whose replica reports no new step for ``progress_timeout`` seconds is given
up, and every edit has an overall :class:`Deadline` sized from its plan's steps, shared by all
its sends. A stream that breaks before its result (a replica that died, a proxy that restarted)
is sent again, up to ``attempts`` times in all, after ``retry_pause`` seconds: Serve routes it to
a live replica, and the same plan and seed give the same waveform. Every line and body is read
within a size limit (:mod:`auk_app.bounded_reads`; a result line's from the plan's frames) and
only a sentence's length of what a replica says is passed on. Nothing is written by this
module; the caller writes files only from a finished result.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import torch

from auk_app.audex.remote import hang_up
from auk_app.audex.token_sampler import Deadline
from auk_app.auk.plan import EditPlan
from auk_app.auk.region import splice
from auk_app.auk.request import EditResult
from auk_app.bounded_reads import IDENTITY, TooLong, iter_lines, read_body, said
from auk_app.errors import AppError, Cancelled, EngineError, InputError
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.serve.wire import plan_body, unpack, window_plan
from auk_app.urls import http_url, named, server_host

ENGINE = "ray-serve"
_POLL_SECONDS = 0.05
PROGRESS_TIMEOUT_SECONDS = 120.0  # no new step for this long, heartbeats or not: the replica is stuck
# An edit's deadline: this allowance (queueing, loading, conditioning, decoding, a send again) plus
# STEP_SECONDS per Euler step of its plan, at most MAX_EDIT_SECONDS.
EDIT_ALLOWANCE_SECONDS = 120.0
STEP_SECONDS = 5.0
MAX_EDIT_SECONDS = 900.0
INFO_BYTES = 64 << 10  # GET /: what a replica serves, a few hundred bytes
REFUSAL_BYTES = 64 << 10
INFO_FIELDS = ("checkpoint_name", "device", "dtype")  # what the app's start-up line names
_MADE_ON = {"timings": dict, "device": str, "dtype": str}
RESULT_FIELDS = {  # what a result line holds, per op, and each field's type
    "edit": {"wav": str, "sample_rate": int, "ref_latent_frames": int, "condition_cache_hit": bool, **_MADE_ON},
    "latents": {"latents": str, "shape": list, "steps": dict, **_MADE_ON},
}


class ServeError(AppError):
    """The Serve deployment could not serve an edit; the message says what happened and what to do."""


class _Lost(Exception):
    """The stream broke before its result: worth sending again."""


class ServeRunner:
    """Runs AuK plans on the Serve deployment at ``url`` (the proxy's address and the app's route,
    e.g. ``http://head:8000/auk``)."""

    engine = ENGINE

    def __init__(self, url: str, *, connect_timeout: float = 5.0, idle_timeout: float = 60.0, attempts: int = 3,
                 retry_pause: float = 2.0, progress_timeout: float = PROGRESS_TIMEOUT_SECONDS):
        self.url = check_url(url)
        self.host = server_host(url)
        self.timeout = httpx.Timeout(idle_timeout, connect=connect_timeout)
        # A stream's reads wait as long as it takes: _attempt's idle check gives up on a silent
        # replica first, with its sentence, instead of a read timeout that would send the edit again.
        self.stream_timeout = httpx.Timeout(None, connect=connect_timeout)
        self.idle_timeout = idle_timeout
        self.progress_timeout = progress_timeout
        self.attempts = attempts
        self.retry_pause = retry_pause

    # ------------------------------------------------------------------ status

    def check(self) -> dict[str, Any]:
        """What the deployment serves (one replica's answer, its strings cut to a sentence's length);
        ServeError when it cannot be reached or its answer is not a deployment's."""
        try:
            with httpx.Client(timeout=self.timeout, headers=IDENTITY) as client, \
                    client.stream("GET", self.url) as response:
                status, body = response.status_code, read_body(response, INFO_BYTES)
        except TooLong as exc:
            raise self._not_a_deployment(f"{exc} of it") from None
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        text = body.decode("utf-8", "replace")
        if status != 200:
            raise ServeError(f"The AuK Serve deployment at {self.host} answered {status} ({said(text, 120)!r}); check "
                             "that the `auk` application is running (`serve status`) and that the URL names its "
                             "route, e.g. http://host:8000/auk.")
        try:
            info = json.loads(text)
        except ValueError:
            info = None
        missing = [key for key in INFO_FIELDS if not isinstance(info, dict) or not isinstance(info.get(key), str)]
        if missing:
            raise self._not_a_deployment(f"{said(text, 80)!r}, without its {', '.join(missing)}")
        return _scalars(info)

    def _not_a_deployment(self, answer: str) -> ServeError:
        return ServeError(f"The server at {self.host} is not an AuK Serve deployment of this app's version (it "
                          f"answered {answer}); point --auk-server at its route, e.g. http://host:8000/auk.")

    def _unreachable(self, exc: Exception) -> ServeError:
        return ServeError(f"The AuK Serve deployment at {self.host} cannot be reached ({type(exc).__name__}); "
                          "start it (docs/serve.md: `serve deploy deploy/serve.yaml`) or drop --auk-server "
                          "to edit in this process.")

    # ------------------------------------------------------------------ runs

    def deadline(self, plan: EditPlan) -> Deadline:
        """The deadline of ``plan``'s edit, starting now: an allowance plus a floor rate per Euler step."""
        steps = plan.recipe.steps
        seconds = min(MAX_EDIT_SECONDS, EDIT_ALLOWANCE_SECONDS + STEP_SECONDS * steps)
        return Deadline.after(seconds, f"{EDIT_ALLOWANCE_SECONDS:g} s plus {STEP_SECONDS:g} s for each of its {steps} "
                                       f"steps, at most {MAX_EDIT_SECONDS:g} s")

    def run(self, plan: EditPlan, *, progress: Progress | None = None, should_stop: ShouldStop | None = None,
            on_start: Callable[[dict[str, Any]], None] | None = None) -> EditResult:
        """``plan`` run on a replica: the same result as :meth:`AuKPipeline.run` in process, with the
        record naming the engine and the replica. ``on_start`` gets each attempt's start line (the
        replica's id, node, pid, device) as it arrives."""
        started = time.perf_counter()
        start, result, attempt = self._send(plan, "edit", progress, should_stop, on_start)
        wav = self._held_to_plan(result, plan)
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

    def latents(self, plan: EditPlan, *, progress: Progress | None = None, should_stop: ShouldStop | None = None,
                on_start: Callable[[dict[str, Any]], None] | None = None) -> ServedLatents:
        """``plan``'s edited latents from a replica, as :meth:`AuKPipeline.latents` makes them in
        process (a window of a whole recording), with where they were made."""
        start, result, attempt = self._send(plan, "latents", progress, should_stop, on_start)
        return ServedLatents(latents=self._latents_held_to_plan(result, plan), replica=start.get("replica"),
                             node=start.get("node"), attempts=attempt, device=result["device"], dtype=result["dtype"],
                             steps=result["steps"])

    def _send(self, plan: EditPlan, op: str, progress: Progress | None, should_stop: ShouldStop | None,
              on_start: Callable[[dict[str, Any]], None] | None) -> tuple[dict, dict, int]:
        """``plan``'s window sent as ``op`` until a replica finishes it: (the start line, the result
        line, the sends it took). A stream that breaks is sent again, ``attempts`` times in all."""
        body = json.dumps(plan_body(window_plan(plan), request_id=uuid.uuid4().hex, op=op)).encode()
        send = _Send(body, progress or silent, should_stop, on_start, self.deadline(plan),
                     result_line_bytes(plan, op), RESULT_FIELDS[op])
        attempt = 1
        while True:
            try:
                return (*self._attempt(send, first=attempt == 1), attempt)
            except _Lost as lost:
                if attempt >= self.attempts:
                    raise ServeError(f"The AuK Serve deployment at {self.host} lost the edit {self.attempts} times "
                                     f"({lost}), so nothing was made; check `serve status` and try again.") from None
            self._pause(should_stop)
            attempt += 1

    def _held_to_plan(self, result: dict[str, Any], plan: EditPlan) -> np.ndarray:
        """The replica's waveform, refused unless it is what the plan asked for: readable, at the
        checkpoint's rate, of the planned length, finite. A region is never spliced from anything else."""
        try:
            wav = unpack(result["wav"])
        except ValueError:  # not base64, or not whole float32 samples
            wav = None
        rate, wanted = plan.checkpoint.sample_rate, plan.samples
        problem = None
        if wav is None:
            problem = "a result without a readable wav"
        elif result["sample_rate"] != rate:
            problem = f"a result at {said(result['sample_rate'], 20)} Hz where the plan is at {rate} Hz"
        elif wav.shape != (wanted,):
            problem = f"{wav.size} samples where the plan asked for {wanted} ({wanted / rate:.2f} s)"
        elif not np.isfinite(wav).all():
            problem = "NaN or infinite samples"
        if problem:
            raise self._refused(problem)
        return wav

    def _latents_held_to_plan(self, result: dict[str, Any], plan: EditPlan) -> torch.Tensor:
        """The replica's latents [frames, L], refused unless they are what the plan asked for: the
        plan's frames by the checkpoint's latent channels, readable, finite. Nothing else is joined."""
        wanted = [plan.gen_frames, plan.checkpoint.dit_config.latent_dim]
        shape = result["shape"]
        try:
            latents = unpack(result["latents"])
        except ValueError:
            latents = None
        problem = None
        if shape != wanted:
            problem = f"latents of shape {said(shape, 40)} where the plan asked for {wanted}"
        elif latents is None or latents.size != wanted[0] * wanted[1]:
            problem = f"latents that do not hold the {wanted[0]} × {wanted[1]} values their shape says"
        elif not np.isfinite(latents).all():
            problem = "NaN or infinite latents"
        if problem:
            raise self._refused(problem)
        return torch.from_numpy(latents.reshape(wanted))

    def _refused(self, problem: str) -> EngineError:
        return EngineError(f"The AuK Serve deployment at {self.host} sent {problem}, so nothing was written; "
                           "run the same AuK Studio version in the app and the deployment, and check the replica.")

    def _pause(self, should_stop: ShouldStop | None) -> None:
        until = time.monotonic() + self.retry_pause
        while time.monotonic() < until:
            _check_stop(should_stop, "before it was sent again")
            time.sleep(_POLL_SECONDS)

    def _attempt(self, send: _Send, *, first: bool) -> tuple[dict, dict]:
        """One send: (the replica's start line, its result line). _Lost when the stream broke."""
        lines: queue.Queue = queue.Queue()
        held: dict[str, Any] = {}
        with httpx.Client(timeout=self.stream_timeout, headers=IDENTITY) as client:
            reader = threading.Thread(target=self._read, args=(client, send, lines, held), daemon=True)
            reader.start()
            now = time.monotonic()
            clock = _Clock(line=now, progress=now)
            try:
                while True:
                    _check_stop(send.should_stop, "before the result was ready" if clock.start else "before it started")
                    self._check_clock(clock, send.deadline)
                    try:
                        kind, item = lines.get(timeout=_POLL_SECONDS)
                    except queue.Empty:
                        continue
                    clock.line = time.monotonic()
                    if kind == "unreachable":
                        if first:
                            raise self._unreachable(item)
                        raise _Lost(f"{type(item).__name__} on sending again")
                    if kind == "lost":
                        raise _Lost(item)
                    if kind == "refused":
                        raise ServeError(item)
                    result = self._take(item, clock, send)
                    if result is not None:
                        return clock.start, result
            finally:
                response = held.get("response")
                if response is not None:
                    hang_up(response)  # a stop or a failure here: Serve cancels the request on its replica

    def _take(self, event: dict[str, Any], clock: _Clock, send: _Send) -> dict[str, Any] | None:
        """One event of the stream: the result line (its fields checked) or None; an error raises."""
        name = event.get("event")
        if name == "start":
            clock.start = _scalars(event)
            if send.on_start is not None:
                send.on_start(clock.start)
        elif name == "progress":
            step = (said(event.get("phase"), 40), whole_count(event.get("done")), whole_count(event.get("total")))
            if step[1] is None or step[2] is None:
                raise _Lost(f"an unreadable progress line {said(event, 60)!r}")
            if step != clock.step:  # a repeated step is no progress
                clock.step, clock.progress = step, time.monotonic()
                send.report(*step)
        elif name == "result":
            return self._result(event, send.fields)
        elif name == "error":
            error = {"cancelled": Cancelled, "input": InputError}.get(event.get("kind"), ServeError)
            raise error(said(event.get("message") or "The replica failed the edit."))
        return None

    def _check_clock(self, clock: _Clock, deadline: Deadline) -> None:
        """Give up on a replica silent for ``idle_timeout``, one that made no step for
        ``progress_timeout`` (heartbeats do not count), and an edit past its deadline."""
        now = time.monotonic()
        if now - clock.line > self.idle_timeout:
            raise ServeError(f"The AuK Serve deployment at {self.host} sent nothing for {self.idle_timeout:g} s, so "
                             "the edit was given up; the replica is overloaded or stuck.")
        if now - clock.progress > self.progress_timeout:
            raise ServeError(f"The AuK Serve deployment at {self.host} reported no progress for "
                             f"{self.progress_timeout:g} s (heartbeats only), so the edit was given up; the replica "
                             "is overloaded or stuck.")
        if time.perf_counter() > deadline.ends_at:
            raise ServeError(f"The AuK Serve deployment at {self.host} did not finish the edit within its "
                             f"{deadline.seconds:g} s deadline ({deadline.basis}), so it was given up; the deployment "
                             "is overloaded or stuck.")

    def _result(self, event: dict[str, Any], types: dict[str, type]) -> dict[str, Any]:
        """The result line's fields (``types``: each field's type), each of the type the record takes;
        ServeError if one is not."""
        wrong = [key for key, kind in types.items()
                 if not isinstance(event.get(key), kind) or kind is int and isinstance(event.get(key), bool)]
        if wrong:
            raise ServeError(f"The AuK Serve deployment at {self.host} sent a result without a readable "
                             f"{', '.join(wrong)}; run the same AuK Studio version in the app and in the deployment.")
        timings = {said(k, 40): float(v) for k, v in list(event["timings"].items())[:16]
                   if isinstance(v, int | float) and not isinstance(v, bool)}
        steps = event.get("steps")  # the replica's step tally; None from a replica that sends none
        steps = {said(k, 40): v for k, v in list(steps.items())[:8] if whole_count(v) is not None and v >= 0
                 } if isinstance(steps, dict) else None
        return {**{key: event[key] for key in types}, "timings": timings, "steps": steps,
                "device": said(event["device"], 40), "dtype": said(event["dtype"], 40)}

    def _read(self, client: httpx.Client, send: _Send, lines: queue.Queue, held: dict[str, Any]) -> None:
        """The reader thread: each JSON line into ``lines`` as ("event", dict); how it ended otherwise."""
        try:
            request = client.build_request("POST", self.url, content=send.body,
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
                lines.put(("refused", self._refusal(response)))
                return
            for line in iter_lines(response, send.line_bytes):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    event = None
                if not isinstance(event, dict):
                    lines.put(("lost", f"an unreadable line {said(line, 60)!r}"))
                    return
                lines.put(("event", event))
                if event.get("event") in ("result", "error"):
                    return
            lines.put(("lost", "the stream ended before the result"))
        except TooLong as exc:
            lines.put(("refused", f"The AuK Serve deployment at {self.host} sent a line of {exc}, more than the "
                                  "edit's result can take, so the edit was given up; the replica is misbehaving."))
        except (httpx.HTTPError, OSError) as exc:  # a replica or proxy gone mid-stream; also our own hang-up
            lines.put(("lost", f"{type(exc).__name__}"))

    def _refusal(self, response: httpx.Response) -> str:
        try:
            text = read_body(response, REFUSAL_BYTES).decode("utf-8", "replace")
        except TooLong as exc:
            text = f"a body of {exc}"
        return (f"The AuK Serve deployment at {self.host} refused the edit (HTTP {response.status_code}: "
                f"{said(text, 160)!r}); point --auk-server at its route, e.g. http://host:8000/auk.")


@dataclass(frozen=True)
class ServedLatents:
    """A window's edited latents [frames, L] (float32, on the CPU) and the replica that made them."""

    latents: torch.Tensor
    replica: str | None
    node: str | None
    attempts: int
    device: str
    dtype: str
    steps: dict[str, int]  # what its Euler steps did (StepTally's counts)


@dataclass
class _Send:
    """What every send of one edit shares: its body, its callbacks, its deadline, its line limit and
    the fields its result line holds."""

    body: bytes
    report: Progress
    should_stop: ShouldStop | None
    on_start: Callable[[dict[str, Any]], None] | None
    deadline: Deadline
    line_bytes: int
    fields: dict[str, type]


@dataclass
class _Clock:
    """One send's watch: when a line last came, when a new step last came (time.monotonic()), the
    last step reported and the start line."""

    line: float
    progress: float
    step: tuple = ()
    start: dict[str, Any] = field(default_factory=dict)


def result_line_bytes(plan: EditPlan, op: str = "edit") -> int:
    """The most a line of ``plan``'s stream may hold: its result, the window's float32 samples or
    latents (a frame more than planned) in base64, with room for the other fields."""
    per_frame = plan.checkpoint.dit_config.latent_dim if op == "latents" else plan.checkpoint.hop
    return 4 * math.ceil((plan.gen_frames + 1) * per_frame * 4 / 3) + REFUSAL_BYTES


def whole_count(value: Any) -> int | None:
    """A whole number a replica sent, or None for anything else (a bool, a float, a string)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _scalars(fields: dict[str, Any]) -> dict[str, Any]:
    """The scalar fields of a replica's line, its strings cut to a sentence's length."""
    return {said(k, 40): said(v, 120) if isinstance(v, str) else v for k, v in list(fields.items())[:32]
            if v is None or isinstance(v, str | int | float | bool)}


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
