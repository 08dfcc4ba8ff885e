"""Step batching: concurrent AuK requests of one shape bucket share each DiT step.

A DiT step for one request is a batch of one or two rows (two under CFG), far too few to fill a
GPU; several users then queue behind each other's steps. :class:`StepBatcher` (one per loaded
DiT, owned by the pipeline) lets request threads submit their Euler solves and wait, while one
driver thread runs the steps: each round it takes the requests of one shape bucket (the padding
of :func:`~auk_app.auk.step_graphs.pad_to_bucket`, at most ``max_batch`` of them), runs one DiT
step over all their rows and hands each request its own velocity rows. Each request keeps its
own time grid, guidance and step index; the time goes in per row, and the CFG blend and Euler
update are the request's own (:class:`~auk_app.auk.sampler.Solve`, the arithmetic
:func:`~auk_app.auk.sampler.sample_latents` uses), so requests join and leave at any step.

* A request alone in its round runs :meth:`StepGraphs.stepper` as ``sample_latents`` does:
  the per-bucket CUDA graph on CUDA, the exact-shape step elsewhere. Its output is then the same
  as in ``sample_latents``. A shared round runs the plain ``dit.step`` (eager, no graph) on the padded contexts
  concatenated (:meth:`AuKStepContext.concat`); padding keeps the valid frames, so its output
  differs from the solo one only by rounding (attention and matmuls summed over other shapes).
* The progress callback (``on_step``) runs on the driver thread inside a copy of the submitting
  thread's ``contextvars`` context, because Gradio finds a request's progress bar there. An
  exception from it (Stop raises ``Cancelled`` there) ends that request alone: it leaves the
  batch and the exception is re-raised in its own thread; the others go on. A failing DiT step
  fails the requests of that round.
* Rounds go to the longest-waiting request's bucket, and within a bucket to the longest-waiting
  requests, so newcomers join at the next step boundary and buckets take turns.

A bucket's CUDA graph reads its context from static buffers that building a stepper overwrites,
so a request that runs alone rebuilds its stepper whenever another request of its bucket built
one since (a ``prepare``, no capture). With ``max_batch`` 2 or more that happens only while a
bucket has more live requests than ``max_batch``; with 1, lone requests of a bucket take turns. This holds
while every solve on the DiT goes through the batcher and the live buckets fit in the graph
cache (``step_graphs.MAX_GRAPHS``, 16); the app's concurrency limit keeps them well below.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from auk_app.auk.dit import AuKStepContext, AuKTransformer
from auk_app.auk.sampler import Solve, SolveSpec, start_solve
from auk_app.auk.step_graphs import PaddedRequest, StepGraphs, compute_autocast, pad_to_bucket

DEFAULT_MAX_BATCH = 4


@dataclass(eq=False)
class _Job:
    """One submitted solve and what the driver keeps for it."""

    solve: Solve
    padded: PaddedRequest
    key: tuple  # requests with equal keys can share a step
    context: contextvars.Context
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    turn: int = 0  # the round that last stepped it; 0 = not yet
    # By guidance (a guidance interval switches a request between one row and two):
    steppers: dict[bool, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = field(default_factory=dict)
    batch_contexts: dict[bool, AuKStepContext] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return 2 if self.solve.guided else 1


def _group_key(padded: PaddedRequest) -> tuple:
    """What must match for two requests to share a step: the padded shapes, which masks exist,
    device and dtype."""
    tensors = (padded.text, padded.c_mask, padded.ref, padded.ref_mask, padded.mask)
    shapes = tuple(None if t is None else tuple(t.shape[1:]) for t in tensors)
    return padded.target_frames, padded.text.device, padded.text.dtype, shapes


class StepBatcher:
    """Runs the DiT steps of concurrent solves on one DiT, several requests per step, at the
    compute dtype of ``graphs`` (the DiT's step graphs, which lone requests replay); see the module
    docstring. ``largest_batch`` and ``batched_steps`` count what it did (tests, bench)."""

    def __init__(self, graphs: StepGraphs, *, max_batch: int = DEFAULT_MAX_BATCH, pack: bool = False):
        if max_batch < 1:
            raise ValueError(f"a step batch holds at least one request; got max_batch={max_batch}")
        self.graphs = graphs
        self.dit: AuKTransformer = graphs.dit
        self.max_batch = max_batch
        self.pack = pack  # shared steps attend over each request's valid tokens alone (auk.packing)
        self.largest_batch = 0  # the most requests one step has served
        self.batched_steps = 0  # steps that served two or more requests
        self._jobs: list[_Job] = []
        self._cond = threading.Condition()
        self._driver: threading.Thread | None = None
        self._rounds = 0
        self._graph_owner: dict[tuple, _Job] = {}  # driver thread only
        self._joined: tuple[tuple[_Job, ...], AuKStepContext] | None = None  # driver thread only

    @property
    def live(self) -> int:
        """Requests submitted and not yet finished."""
        with self._cond:
            return len(self._jobs)

    def sample(self, spec: SolveSpec) -> torch.Tensor:
        """``solve(self.dit, spec)``, with the steps shared with concurrent calls.

        Blocks the calling thread until its solve ends; argument errors are raised before it is
        submitted, and an exception from its ``on_step`` is re-raised here.
        """
        solve = start_solve(self.dit, spec)
        padded = pad_to_bucket(self.dit, **solve.conditioning)
        job = _Job(solve, padded, _group_key(padded), contextvars.copy_context())
        with self._cond:
            self._jobs.append(job)
            if self._driver is None:
                driver = threading.Thread(target=self._drive, name="auk-step-batcher", daemon=True)
                try:
                    driver.start()
                except BaseException:  # no thread: this request must not wait for one
                    self._jobs.remove(job)
                    raise
                self._driver = driver
        job.done.wait()
        if job.error is not None:
            raise job.error
        return solve.result()

    # ------------------------------------------------------------------ the driver thread

    def _drive(self) -> None:
        """Run rounds until no request is left; then the thread ends (the next submit starts one)."""
        try:
            while True:
                with self._cond:
                    batch = self._next_batch()
                    if not batch:
                        self._driver = None
                        return
                self._run(batch)
        except BaseException as exc:  # a bug here must not leave any request waiting forever
            with self._cond:
                jobs, self._jobs, self._driver = self._jobs, [], None
            self._graph_owner.clear()
            self._joined = None
            for job in jobs:
                job.error = exc
                job.done.set()
            raise

    def _next_batch(self) -> list[_Job]:
        """The longest-waiting request's bucket, its longest-waiting requests first (under the lock)."""
        if not self._jobs:
            return []
        first = min(self._jobs, key=lambda job: job.turn)
        batch = sorted((job for job in self._jobs if job.key == first.key), key=lambda job: job.turn)
        batch = batch[: self.max_batch]
        self._rounds += 1
        for job in batch:
            job.turn = self._rounds
        self.largest_batch = max(self.largest_batch, len(batch))
        self.batched_steps += len(batch) > 1
        return batch

    def _run(self, batch: list[_Job]) -> None:
        """One step for every request of ``batch``, then each one's own update and callback."""
        device = batch[0].solve.x.device
        # This thread's current CUDA device is cuda:0 whatever the model's: captures need the model's.
        on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
        with on_device, torch.inference_mode(), compute_autocast(device.type, self.graphs.compute):
            try:
                reused = [job.solve.reused() for job in batch]  # the step cache's verdicts
                computed = iter(self._velocities([job for job, v in zip(batch, reused) if v is None]))
                velocities = [next(computed) if v is None else v for v in reused]
            except BaseException as exc:
                for job in batch:
                    self._finish(job, exc)
                return
            for job, v in zip(batch, velocities, strict=True):
                try:
                    job.context.run(job.solve.advance, v)
                except BaseException as exc:  # this request's own callback: it alone leaves
                    self._finish(job, exc)
                    continue
                if job.solve.finished:
                    self._finish(job, None)

    def _velocities(self, batch: list[_Job]) -> list[torch.Tensor]:
        """Each request's velocity rows [branches, n, L] for its next step."""
        if not batch:
            return []
        if len(batch) == 1:
            job = batch[0]
            return [self._solo_stepper(job)(job.solve.model_x(), job.solve.time())]
        frames = batch[0].padded.target_frames
        x = torch.cat([_padded_rows(job, frames) for job in batch])
        time = torch.cat([job.solve.time().expand(job.rows) for job in batch])
        v = self.dit.step(x, time, self._joined_context(batch))
        for job in batch:
            job.solve.tally.shared_steps += 1
        parts = v.split([job.rows for job in batch])
        return [part[:, : job.solve.conditioning["target_frames"]] for job, part in zip(batch, parts, strict=True)]

    def _solo_stepper(self, job: _Job):
        """The request's own stepper (a CUDA graph on CUDA), rebuilt when another request of its
        bucket has built one since: the graph's static context would be that request's."""
        guided = job.solve.guided
        owner = job.key, guided  # the guided and the unguided step are two graphs
        if guided not in job.steppers or self._graph_owner.get(owner) is not job:
            job.steppers[guided] = self.graphs.stepper(**job.solve.conditioning, cfg_infer=guided)
            self._graph_owner[owner] = job
        return job.steppers[guided]

    def _joined_context(self, batch: list[_Job]) -> AuKStepContext:
        """The batch's padded contexts concatenated; reused while the same requests share steps."""
        members = tuple((job, job.solve.guided) for job in batch)
        if self._joined is None or self._joined[0] != members:
            for job, guided in members:
                if guided not in job.batch_contexts:
                    p = job.padded
                    job.batch_contexts[guided] = self.dit.prepare(
                        p.text, target_frames=p.target_frames, mask=p.mask, c_mask=p.c_mask, ref=p.ref,
                        ref_mask=p.ref_mask, cfg_infer=guided,
                    )  # fmt: skip
            joined = AuKStepContext.concat([job.batch_contexts[guided] for job, guided in members])
            self._joined = members, joined.with_packing() if self.pack else joined
        return self._joined[1]

    def _finish(self, job: _Job, error: BaseException | None) -> None:
        """Take the request out (freeing its contexts) and wake its thread."""
        with self._cond:
            self._jobs.remove(job)
        for owner in [(job.key, True), (job.key, False)]:
            if self._graph_owner.get(owner) is job:
                del self._graph_owner[owner]
        if self._joined is not None and any(member is job for member, _ in self._joined[0]):
            self._joined = None
        job.steppers.clear()
        job.batch_contexts.clear()
        job.error = error
        job.done.set()


def _padded_rows(job: _Job, frames: int) -> torch.Tensor:
    """The request's DiT input rows: its state padded to the bucket's frames (zeros; the mask
    hides them), twice under CFG (conditional rows first, as ``prepare`` lays out the context)."""
    x = job.solve.model_x()
    x = F.pad(x, (0, 0, 0, frames - x.shape[1]))
    return torch.cat((x, x)) if job.solve.guided else x
