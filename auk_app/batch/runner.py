"""The items of a manifest run as edit jobs, side by side, each written whole or not at all.

:class:`BatchRun` submits up to ``StudioConfig.auk_batch`` items at once, each an
:class:`~auk_app.job.EditJob` in a thread of its own, so their DiT steps share the step batcher and
one item's conditioning or decoding overlaps another's steps (on Serve replicas too: the job does
not know its engine). Per item: the row's problem or the edit's validator (:func:`~auk_app.job.edit_problems`)
fails it in one sentence; an output already written with the same knobs, source and seed is kept
(resume); else the job runs, its scores are taken, and its files are written, the WAV and the
16 kHz submission copy first and ``<id>.json`` last, each by an atomic rename: an item whose JSON
exists is whole. A stop (the caller's, or Ctrl-C) ends the jobs between steps; what was done stays.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from auk_app import dsp
from auk_app.audio_io import read_mono, write_wav
from auk_app.batch.scores import Scoring, Transcribe, expected_text, score, task_of
from auk_app.batch.speaker import similarity
from auk_app.batch.manifest import Item, Manifest
from auk_app.check import target_of
from auk_app.check.transcribe import content_target
from auk_app.errors import AppError, Cancelled
from auk_app.job import EditJob, edit_problems
from auk_app.knobs import EDIT, replaying
from auk_app.manifest import file_sha256
from auk_app.recognise import recognise
from auk_app.results import Delivery, EditOrder, write_edit

if TYPE_CHECKING:
    from auk_app.service import Studio

SUBMISSION_DIR, SUBMISSION_RATE = "submission", 16_000  # the challenge's format: 16 kHz mono PCM16 WAV
DONE, SKIPPED, FAILED, STOPPED = "done", "skipped", "failed", "stopped"


@dataclass(frozen=True)
class Outcome:
    """What became of one item: its status, the sentence of a failure, and its written manifest
    (with ``batch``: the id, the row, the fingerprint and the scores)."""

    item: Item
    status: str
    problem: str | None = None
    manifest: dict[str, Any] | None = None
    seconds: float = 0.0


@dataclass
class Tally:
    """The batch so far, for a progress bar: items done, skipped (already written), failed, and the
    seconds left at the pace of the items run so far."""

    total: int
    done: int = 0
    skipped: int = 0
    failed: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def finished(self) -> int:
        return self.done + self.skipped + self.failed

    @property
    def seconds_left(self) -> float | None:
        ran = self.done + self.failed
        if not ran:
            return None
        return (time.monotonic() - self.started) / ran * (self.total - self.finished)


class BatchRun:
    """``manifest``'s items on ``studio`` into ``out``. ``defaults`` are knob values (the API's names)
    every row starts from; the seed is fixed (the row's, the default's, else 0) unless they ask for
    a fresh one. ``on_item(outcome, tally)`` hears each item as it ends; ``should_stop`` stops them all."""

    def __init__(self, studio: Studio, manifest: Manifest, out: str | Path, *, defaults: Mapping[str, Any] = (),
                 submission: bool = False, workers: int | None = None,
                 on_item: Callable[[Outcome, Tally], None] | None = None,
                 should_stop: Callable[[], bool] | None = None):
        self.studio, self.manifest, self.out = studio, manifest, Path(out)
        self.defaults = {**replaying({}, 0), **dict(defaults)}
        self.submission, self.workers = submission, workers or studio.config.auk_batch
        self.on_item = on_item or (lambda outcome, tally: None)
        self._stop = threading.Event()
        self._asked_stop = should_stop or (lambda: False)
        self.tally = Tally(len(manifest.items))
        self._lock = threading.Lock()

    def stopped(self) -> bool:
        return self._stop.is_set() or self._asked_stop()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> list[Outcome]:
        """Every item's outcome, in the manifest's order. Ctrl-C stops the batch between steps (the
        items in flight end as ``stopped``) and returns what was done."""
        self.out.mkdir(parents=True, exist_ok=True)
        _remove_parts(self.out)
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="batch-item") as pool:
            futures = [pool.submit(contextvars.copy_context().run, self._counted, item) for item in self.manifest.items]
            _wait_all(futures, self.stop)
        _remove_parts(self.out)
        return [future.result() for future in futures]

    def _counted(self, item: Item) -> Outcome:
        started = time.monotonic()
        try:
            outcome = self._one(item)
        except Cancelled:
            outcome = Outcome(item, STOPPED, "Stopped before this item was done; nothing of it was written.")
        except AppError as exc:
            outcome = Outcome(item, FAILED, f"Row {item.row} ({item.id}): {exc}")
        except Exception as exc:  # noqa: BLE001: one item's bug is its row's sentence; the rest run
            outcome = Outcome(item, FAILED, f"Row {item.row} ({item.id}): the edit failed unexpectedly "
                                            f"({type(exc).__name__}: {str(exc)[:200]}).")
        outcome = Outcome(outcome.item, outcome.status, outcome.problem, outcome.manifest, time.monotonic() - started)
        with self._lock:
            counts = {DONE: "done", SKIPPED: "skipped", FAILED: "failed"}
            if outcome.status in counts:
                setattr(self.tally, counts[outcome.status], getattr(self.tally, counts[outcome.status]) + 1)
            self.on_item(outcome, self.tally)
        return outcome

    def _one(self, item: Item) -> Outcome:
        if self.stopped():
            raise Cancelled("stopped")
        if item.problem:
            return Outcome(item, FAILED, item.problem)
        values = {**self.defaults, **item.knobs}
        key = fingerprint(values, item.meta)
        kept = self._kept(item, key)
        if kept is not None:
            return Outcome(item, SKIPPED, manifest=kept)
        problems = edit_problems(self.studio, values)
        if problems:
            first = next(iter(problems.values()))
            more = f" ({len(problems) - 1} more)" if len(problems) > 1 else ""
            return Outcome(item, FAILED, f"Row {item.row} ({item.id}): {first}{more}")
        order = EditOrder.from_knobs(values, self.studio.config.limits)
        made, entry = EditJob(self.studio, order, should_stop=self.stopped).run()
        if self.stopped():
            raise Cancelled("stopped")
        found = recognise(order.request.instruction)
        measured = self._scores(item, made[0], found, entry)
        return Outcome(item, DONE, manifest=self._write(item, made[0], {"fingerprint": key, "scores": measured}))

    def _kept(self, item: Item, key: str) -> dict[str, Any] | None:
        """The item's manifest when its files are whole and were made from the same knobs and source."""
        wav, record = self.out / f"{item.id}.wav", self.out / f"{item.id}.json"
        try:
            manifest = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not wav.is_file() or (manifest.get("batch") or {}).get("fingerprint") != key:
            return None
        if self.submission and not (self.out / SUBMISSION_DIR / wav.name).is_file():
            clip = read_mono(wav)
            _submission_copy(clip.mono, clip.sample_rate, self.out / SUBMISSION_DIR / wav.name)
        return manifest

    def _scores(self, item: Item, delivery: Delivery, found, entry) -> dict[str, Any]:
        result = delivery.result
        wav, rate = np.clip(delivery.wav, -1.0, 1.0), result.sample_rate  # what the WAV holds
        target = target_of(found)
        task = task_of(item.meta.get("task"), target)
        spoken = content_target(found)
        clean = None
        if item.meta.get("clean"):
            reference = read_mono(item.meta["clean"])
            clean = dsp.resample(reference.mono, reference.sample_rate, rate)
        transcribe = self._transcriber(entry)
        scoring = Scoring(task, target, delivery.record["check"]["pass"], item.meta,
                                 expected_text(task, item.meta, spoken and spoken.expected(item.meta.get("transcript"))),
                                 transcribe, similarity, clean)
        return {"task": task, "transcriber": transcribe is not None, **score(scoring, result.source, wav, rate)}

    def _transcriber(self, entry) -> Transcribe | None:
        """The loaded model's thinker as a transcriber, borrowed for each transcript only (the other
        items' conditioning needs it too); None where the engine lends none (the demo, Serve)."""
        with self.studio.engine.thinker(entry) as thinker:
            if thinker is None:
                return None

        def transcribe(audio: np.ndarray, language: str) -> str:
            with self.studio.engine.thinker(entry) as lent:
                return lent.transcriber.transcribe(audio, language)

        return transcribe

    def _write(self, item: Item, delivery: Delivery, batch: dict[str, Any]) -> dict[str, Any]:
        """The item's WAV, its submission copy and last its manifest, each renamed into place; on any
        failure the item's files are removed again."""
        wav, record = self.out / f"{item.id}.wav", self.out / f"{item.id}.json"
        written = [wav]
        try:
            manifest = write_edit(delivery, wav)
            if self.submission:
                written.append(self.out / SUBMISSION_DIR / wav.name)
                _submission_copy(delivery.wav, delivery.result.sample_rate, written[-1])
            manifest["batch"] = {"id": item.id, "row": item.row, **batch}
            written.append(record)
            _write_json(record, manifest)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise
        return manifest


def fingerprint(values: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    """What makes an item's output: every knob (the source by its content, not its name) and the
    fields its scores read. Equal fingerprints, equal files: the resume keeps them."""
    knobs = {name: values.get(name, EDIT[name].default) for name in EDIT.names}
    audio = knobs.pop("audio")
    knobs["audio_sha256"] = None if audio is None else file_sha256(audio)
    return hashlib.sha256(json.dumps([knobs, dict(meta)], sort_keys=True, default=str).encode()).hexdigest()[:32]


def _submission_copy(wav: np.ndarray, rate: int, path: Path) -> None:
    path.parent.mkdir(exist_ok=True)
    write_wav(path, np.clip(dsp.resample(np.asarray(wav, np.float32), rate, SUBMISSION_RATE), -1.0, 1.0),
              SUBMISSION_RATE)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(part, path)


def _remove_parts(out: Path) -> None:
    """Half-written files left by a run that was killed mid-write."""
    for part in [*out.glob("*.part"), *out.glob(f"{SUBMISSION_DIR}/*.part")]:
        part.unlink(missing_ok=True)


def _wait_all(futures: list[Future], stop: Callable[[], None]) -> None:
    """Wait for every item; a Ctrl-C (KeyboardInterrupt, which only this thread hears) stops the
    batch, and the items in flight still end (stopped) before this returns."""
    pending = set(futures)
    while pending:
        try:
            _, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            stop()
