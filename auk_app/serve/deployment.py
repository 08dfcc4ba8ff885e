"""The AuK pipeline as a Ray Serve deployment: each replica holds one pipeline on one device.

Runs inside Ray (``import_path: auk_app.serve.deployment:build`` in deploy/serve.yaml). A replica
loads its checkpoint once, at start, and serves ``POST /`` (a plan from :mod:`auk_app.serve.wire`)
as a stream of JSON lines, and ``GET /`` (what it serves, and how many replicas are running). Each
request runs :meth:`AuKPipeline.run <auk_app.auk.pipeline.AuKPipeline.run>` (an edit) or
:meth:`AuKPipeline.latents <auk_app.auk.pipeline.AuKPipeline.latents>` (a window of a whole
recording) in a thread of its own, so the requests a replica admits (``max_ongoing_requests``) run
side by side in one process and those of one shape bucket share each DiT step through the
pipeline's step batcher, up to ``max_batch``.

When the client goes away (Stop in the app closes the connection) Serve cancels the request: the
stream's generator is cancelled, which sets the run's stop flag, and the run ends at its next
step with nothing produced. ``journal`` (a directory, optional) gets one JSON line per finished
run per replica: its id, how it ended and how many steps it took — what the tests read.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from auk_app import demo, resolve
from auk_app.auk.batching import DEFAULT_MAX_BATCH
from auk_app.auk.checkpoint import read_auk_checkpoint
from auk_app.auk.pipeline import AuKPipeline
from auk_app.auk.configs import QWEN_OMNI
from auk_app.auk.step_reuse import StepTally
from auk_app.config import Limits
from auk_app.errors import AppError, Cancelled, InputError
from auk_app.serve.client import ENGINE
from auk_app.serve.wire import pack, read_plan

HEARTBEAT_SECONDS = 2.0  # a line at least this often, so a client can tell a slow phase from a dead replica


def _replica_id() -> str:
    context = serve.get_replica_context()
    replica = getattr(context, "replica_id", None)
    return str(getattr(replica, "unique_id", None) or getattr(context, "replica_tag", None) or os.getpid())


@serve.deployment(name="AuKReplica", max_ongoing_requests=8)
class AuKReplica:
    def __init__(self, checkpoint: str = "demo", qwen: str | None = None, device: str | None = None,
                 dtype: str | None = None, max_batch: int = DEFAULT_MAX_BATCH, compile: bool | None = None,
                 threads: int | None = None, journal: str | None = None):
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        demo.register()  # AuK-Tiny, or a checkpoint of its kinds trained here
        directory = demo.DEMO_DIR if checkpoint == "demo" else Path(checkpoint)
        ckpt = read_auk_checkpoint(directory)
        text_encoder = resolve.resolve(resolve.QWEN_OMNI, qwen) if ckpt.text_encoder.kind == QWEN_OMNI else None
        # The replica runs the plans the app makes, each checked again against the replica's own limits.
        self.limits = Limits()
        self.pipeline = AuKPipeline(ckpt, text_encoder_path=text_encoder, device=device, dtype=dtype,
                                    max_batch=int(max_batch), compile=compile, limits=self.limits)
        self.pipeline.load()  # once, before the replica takes requests
        self.replica = _replica_id()
        self.node = socket.gethostname()
        self.journal = Path(journal) / f"{self.replica}.jsonl" if journal else None
        self._journal_lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        ckpt = self.pipeline.checkpoint
        return {"engine": ENGINE, "checkpoint_name": ckpt.name, "variant": ckpt.variant, "replica": self.replica,
                "node": self.node, "pid": os.getpid(), "device": str(self.pipeline.device),
                "dtype": self.pipeline.precision.name, "max_batch": self.pipeline.max_batch}

    def running_replicas(self) -> int | None:
        """The deployment's running replicas, as Serve's controller counts them (None if it cannot
        say): the app sends a whole recording's windows to all of them at once."""
        try:
            context = serve.get_replica_context()
            application = serve.status().applications[context.app_name]
            states = application.deployments[context.deployment].replica_states
        except Exception:  # noqa: BLE001 (a controller that does not answer: the app assumes one)
            return None
        return int(states.get("RUNNING", 0)) or None

    async def __call__(self, request: Request):
        if request.method == "GET":  # the controller's count is a remote call: off the event loop
            return JSONResponse({**self.info(), "replicas": await asyncio.to_thread(self.running_replicas)})
        body = await request.json()
        return StreamingResponse(self._stream(body), media_type="application/x-ndjson")

    async def _stream(self, body: dict[str, Any]):
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        stop = threading.Event()

        def emit(event: dict[str, Any] | None) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        thread = threading.Thread(target=self._work, args=(body, emit, stop), daemon=True)
        thread.start()
        try:
            yield _line({"event": "start", "request_id": body.get("request_id"), **self.info()})
            while True:
                try:
                    event = await asyncio.wait_for(events.get(), HEARTBEAT_SECONDS)
                except asyncio.TimeoutError:
                    yield _line({"event": "heartbeat"})
                    continue
                if event is None:
                    return
                yield _line(event)
        finally:  # the end, or the client gone (Serve cancels the generator): the run stops at its next step
            stop.set()

    def _work(self, body: dict[str, Any], emit, stop: threading.Event) -> None:
        """One run in this thread; its events go to ``emit``, then None."""
        steps = [0, 0]
        outcome, started = "error", time.perf_counter()

        def progress(phase: str, done: int, total: int) -> None:
            if phase == "sample":
                steps[:] = [done, total]
            emit({"event": "progress", "phase": phase, "done": done, "total": total})

        try:
            plan = read_plan(body, self.pipeline.checkpoint, self.limits)
            emit(self._result(body["op"], plan, progress, stop))
            outcome = "done"
        except Cancelled as exc:
            outcome = "cancelled"
            emit({"event": "error", "kind": "cancelled", "message": str(exc)})
        except InputError as exc:
            emit({"event": "error", "kind": "input", "message": str(exc)})
        except AppError as exc:
            emit({"event": "error", "kind": "engine", "message": str(exc)})
        except Exception as exc:  # a bug or the device: one sentence for the app, the trace in the replica's log
            import traceback

            traceback.print_exc()
            emit({"event": "error", "kind": "engine",
                  "message": f"The replica {self.replica} failed the run ({type(exc).__name__}: {str(exc)[:200]})."})
        finally:
            emit(None)
            self._write_journal({"request_id": body.get("request_id"), "op": body.get("op"), "replica": self.replica,
                                 "outcome": outcome, "steps": steps[0], "of": steps[1],
                                 "stop_requested": stop.is_set(), "seconds": round(time.perf_counter() - started, 3)})

    def _result(self, op: str, plan, progress, stop: threading.Event) -> dict[str, Any]:
        """The result line of ``plan`` run as ``op`` asks: the window's waveform, or its edited latents."""
        if op == "latents":
            started, tally = time.perf_counter(), StepTally()
            latents = self.pipeline.latents(plan, progress=progress, should_stop=stop.is_set, tally=tally)
            return {"event": "result", "latents": pack(latents.numpy()), "shape": list(latents.shape),
                    "timings": {"total": time.perf_counter() - started}, "device": str(self.pipeline.device),
                    "dtype": self.pipeline.precision.name, "steps": asdict(tally)}
        result = self.pipeline.run(plan, progress=progress, should_stop=stop.is_set)
        record = result.record
        return {"event": "result", "wav": pack(result.wav), "sample_rate": result.sample_rate,
                "ref_latent_frames": record.ref_latent_frames, "condition_cache_hit": record.condition_cache_hit,
                "timings": record.timings, "device": record.device, "dtype": record.dtype, "steps": record.steps}

    def _write_journal(self, entry: dict[str, Any]) -> None:
        if self.journal is None:
            return
        with self._journal_lock, open(self.journal, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def _line(event: dict[str, Any]) -> bytes:
    return (json.dumps(event) + "\n").encode("utf-8")


def build(args: dict[str, Any]):
    """The application deploy/serve.yaml names: ``args`` are AuKReplica's (checkpoint, device, …)."""
    return AuKReplica.bind(**(args or {}))
