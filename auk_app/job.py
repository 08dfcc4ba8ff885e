"""An edit, read and understood once: :class:`EditJob`.

Like a diffusers pipeline's ``__call__``, :meth:`EditJob.run` is an edit's numbered walk, and each
step takes what the steps before it made; nothing reads the upload or the instruction again:

1. intake: the model; the clip, decoded once (the Studio's :class:`~auk_app.uploads.Uploads`, which
   its validator filled); the instruction, rewritten first when asked (:mod:`auk_app.enhance`) and
   recognised once (:mod:`auk_app.recognise`); and the route, whole in windows or in one piece;
2. cautions, said before the run: what the model was not trained for, a clip longer than its
   window, a rewrite that kept the person's words;
3. plan: every decision and check before a model runs (:func:`~auk_app.auk.plan.plan_edit`);
4. run, on whichever engine the Studio has (:mod:`auk_app.engine`): a whole recording's windows,
   or the candidates (seed, seed+1, …) side by side, so that the step batcher solves them together;
5. check: each result against the target the recogniser found (:mod:`auk_app.check`), best first;
6. delivery: each candidate ready to write (:mod:`auk_app.results`).

:func:`edit_problems` is the validator: intake's checks on the values, before the request is queued.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from auk_app import dsp, enhance, upload_check
from auk_app.audio_io import MonoClip
from auk_app.auk.plan import EditPlan, plan_edit, window_seconds
from auk_app.auk.request import EditRequest, EditResult
from auk_app.catalog import ModelEntry, capability_warnings
from auk_app.check import EditCheck, SharedClip, check, rank, target_of, unmeasured
from auk_app.check.transcribe import check_content, content_target
from auk_app.config import QWEN_SAMPLE_RATE
from auk_app.errors import AppError, Cancelled, CheckpointError, KnobError
from auk_app.knobs import EDIT
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.recognise import Recognised, language_of, recognise
from auk_app.results import Delivery, EditOrder, deliver
from auk_app.whole_file import Route, checked_part, route

if TYPE_CHECKING:
    from auk_app.service import Studio

log = logging.getLogger(__name__)
STOP_POLL_SECONDS = 0.1  # how often a whole recording's check looks for Stop or a client that is gone


@dataclass(frozen=True)
class Intake:
    """What an edit is, read once: the order (its instruction rewritten, with enhance), the model,
    what the recogniser found in the instruction and the instruction's language, the clip decoded,
    and how it runs."""

    order: EditOrder
    entry: ModelEntry
    found: Recognised | None
    language: str
    clip: MonoClip | None
    route: Route


@dataclass(frozen=True)
class Candidate:
    """One seed of an edit, checked: ``check`` measures the result against what was asked, in
    ``check_seconds``; ``rank`` is its place among the edit's candidates (1 is the best)."""

    result: EditResult
    check: EditCheck
    check_seconds: float
    rank: int = 1


class EditJob:
    """One edit order on a Studio's models (see the module docstring). ``progress(phase, done, total)``
    sees every candidate's steps summed, ``should_stop`` stops them all, and ``warn`` hears each
    warning as soon as it is known."""

    def __init__(self, studio: Studio, order: EditOrder, *, progress: Progress | None = None,
                 should_stop: ShouldStop | None = None, warn: Callable[[str], None] | None = None):
        self.studio, self.order = studio, order
        self.limits = studio.config.limits
        self.progress, self.should_stop = progress, should_stop
        self.warn = warn or (lambda warning: None)

    def run(self) -> tuple[list[Delivery], ModelEntry]:
        """Each candidate ready to write, best first, and the model that made them."""
        intake = self.intake()  # 1
        cautions = self.cautions(intake)  # 2
        for caution in cautions:
            self.warn(caution)
        if intake.route.whole:  # 3 to 5: the windows plan themselves
            made = [self.whole(intake)]
        else:
            made = self.candidates(intake, self.plan(intake))
        if self.should_stop is not None and self.should_stop():  # stopped after the last step: nothing is delivered
            raise Cancelled("Stopped before the result was ready; nothing was produced.")
        return self.deliver(intake, made, cautions), intake.entry  # 6

    # ------------------------------------------------------------------ 1, 2: intake and cautions

    def intake(self) -> Intake:
        order, limits = self.order, self.limits
        entry = self.studio.entry(order.model)
        request = order.request
        clip = None if request.audio is None else self.studio.uploads.read(request.audio, request.read_limits)
        found = recognise(request.instruction)
        if order.enhance:
            with self.studio.engine.thinker(entry) as thinker:
                suggestion = enhance.suggest(request.instruction, found, clip=clip, thinker=thinker, limits=limits)
            request = replace(request, instruction=suggestion.instruction)
            order, found = replace(order, request=request, enhanced=suggestion.to_manifest()), suggestion.found
        routed = route(clip, request, found, window=window_seconds(entry.checkpoint, limits), label=entry.label,
                       limits=limits, candidates=order.candidates)
        return Intake(order, entry, found, language_of(request.instruction), clip, routed)

    def cautions(self, intake: Intake) -> tuple[str, ...]:
        rewrite = (intake.order.enhanced or {}).get("warning")
        return (*capability_warnings(intake.entry, intake.found, intake.language, self.studio.released()),
                *intake.route.warnings, *((rewrite,) if rewrite else ()))

    # ------------------------------------------------------------------ 3 to 5: plan, run, check

    def plan(self, intake: Intake) -> EditPlan:
        return plan_edit(intake.order.request, intake.entry.checkpoint, self.limits, source=intake.clip)

    def whole(self, intake: Intake) -> Candidate:
        """The whole recording edited in windows, checked like any edit on a bounded part of it
        (whole_file.checked_part), and not at all once Stop is pressed or the client is gone."""
        result = self.studio.engine.windows(intake.entry, intake.clip, intake.order.request, progress=self.progress,
                                            should_stop=self.should_stop)
        started = time.perf_counter()
        part, measured_on = checked_part(result)
        report = self.progress or silent
        report("check", 0, 1)
        checked = self._unless_stopped(lambda: self._checked(intake, SharedClip(), part))
        report("check", 1, 1)
        if measured_on:
            checked = replace(checked, note=f"{checked.note}; {measured_on}" if checked.note else measured_on)
        return Candidate(result, checked, time.perf_counter() - started)

    def _unless_stopped(self, work: Callable[[], EditCheck]) -> EditCheck:
        """``work()`` in a thread of its own, given up with Cancelled as soon as ``should_stop`` says so
        (checked every STOP_POLL_SECONDS): a measure cannot stop half-way, and nobody waits for it."""
        if self.should_stop is None:
            return work()
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="check")
        future = pool.submit(contextvars.copy_context().run, work)
        pool.shutdown(wait=False)  # the thread ends with its work, waited for or not
        while not future.done():
            if self.should_stop():
                raise Cancelled("Stopped before the result was ready; nothing was produced.")
            time.sleep(STOP_POLL_SECONDS)
        return future.result()

    def candidates(self, intake: Intake, plan: EditPlan) -> list[Candidate]:
        """The order's candidates, each ``plan`` with its own seed, run side by side through the same
        engine (so the step batcher solves them as one batch), checked, best first. Any candidate's
        failure (Stop included) fails the edit."""
        n = intake.order.candidates
        plans = [plan.with_seed((plan.request.seed + i) % 2**63) for i in range(n)]
        source = SharedClip()
        if target_of(intake.found).measurable and plan.clip is not None:  # the source's pYIN while the model runs
            threading.Thread(target=source.measure, args=_compared_source(plan), daemon=True,
                             name="check-source").start()
        steps = _OverallProgress(self.progress, n)

        def one(i: int) -> Candidate:
            result = self.studio.engine.run(plans[i], intake.entry, progress=steps.of(i), should_stop=self.should_stop)
            started = time.perf_counter()
            return Candidate(result, self._checked(intake, source, result), time.perf_counter() - started)

        made = [one(0)] if n == 1 else _side_by_side(one, n)
        places = {id(c): k for k, c in enumerate(rank([m.check for m in made]))}
        return sorted((replace(m, rank=places[id(m.check)] + 1) for m in made), key=lambda m: m.rank)

    def _checked(self, intake: Intake, source: SharedClip, result: EditResult) -> EditCheck:
        """The edit check of one result: the words the thinker hears where only the words can be
        checked and the engine lends a thinker, else the acoustic check. A failure of the check itself
        never fails the edit (a snapshot without the thinker's output head, or a bug): it says so."""
        target = target_of(intake.found)
        if not target.measurable and content_target(intake.found) is not None:
            try:
                heard = self._content_check(intake, result)
            except CheckpointError as exc:
                return unmeasured(target.task, f"the words cannot be checked: {exc}")
            if heard is not None:
                return heard
        before, after = result.compared()
        try:
            clip = None if before is None else source.clip(before, result.sample_rate)
            return check(target, clip, after, result.sample_rate)
        except Exception as exc:  # noqa: BLE001: the edit is done; its check says what went wrong
            log.exception("edit check failed")
            return unmeasured(target.task, f"the check failed ({type(exc).__name__})")

    def _content_check(self, intake: Intake, result: EditResult) -> EditCheck | None:
        """What the model's thinker hears in the result against the words asked; None where the
        engine lends no thinker (a text encoder that hears nothing, the replicas of Serve)."""
        with self.studio.engine.thinker(intake.entry) as thinker:
            if thinker is None:
                return None
            before, after = (None if wav is None else dsp.resample(wav, result.sample_rate, QWEN_SAMPLE_RATE)
                             for wav in result.compared())
            return check_content(thinker.transcriber, intake.found, after, before)

    # ------------------------------------------------------------------ 6: delivery

    def deliver(self, intake: Intake, made: list[Candidate], cautions: tuple[str, ...]) -> list[Delivery]:
        """Each candidate levelled and recorded; the warnings its run found (clipping) heard after it."""
        seeds = sorted(c.result.record.seed for c in made)
        entry = intake.entry
        model = {"key": entry.key, "label": entry.label, "demo": entry.demo}
        delivered = [deliver(c.result, intake.order, model=model, check=c.check, check_seconds=c.check_seconds,
                             cautions=cautions, candidate={"rank": c.rank, "of": len(made), "seeds": seeds})
                     for c in made]
        for warning in delivered[0].record["warnings"][len(cautions):]:
            self.warn(warning)
        return delivered


def run_request(studio: Studio, request: EditRequest, model: str | None = None, *, progress: Progress | None = None,
                should_stop: ShouldStop | None = None) -> tuple[EditResult, ModelEntry]:
    """One run of ``request`` on ``model``, planned and run as a job's candidate is, without its check
    or delivery: what the warm-up runs, and the tests of a pipeline's numbers."""
    entry = studio.entry(model)
    limits = studio.config.limits
    clip = None if request.audio is None else studio.uploads.read(request.audio, request.read_limits)
    plan = plan_edit(request, entry.checkpoint, limits, source=clip)
    return studio.engine.run(plan, entry, progress=progress, should_stop=should_stop), entry


def suggestion(studio: Studio, model: str | None, instruction: str, audio=None) -> enhance.Suggestion:
    """``instruction`` rewritten into the cookbook's wording for ``model`` (/suggest_instruction), as an
    edit with enhance rewrites it: its clip (``audio``) decoded once, its words recognised once."""
    entry = studio.entry(model)
    limits = studio.config.limits
    clip = None if audio is None else studio.uploads.read(audio, limits.for_whole())
    with studio.engine.thinker(entry) as thinker:
        return enhance.suggest(instruction, recognise(instruction), clip=clip, thinker=thinker, limits=limits)


def edit_problems(studio: Studio, values: Mapping[str, Any]) -> dict[str, str]:
    """The sentence for each knob of an edit's ``values`` that cannot be served, by name, before
    anything is queued: the knobs' own checks, the model's name, what its text encoder can read, the
    upload check of the clip (under a region's limits when a region is set), and whether a recording
    longer than a clip may be can run whole."""
    limits = studio.config.limits
    problems = EditOrder.problems(values, limits)
    entry = None
    if "model" not in problems:  # a name of the right type: whether the Studio has it
        try:
            entry = studio.entry(values.get("model", EDIT["model"].default))
        except AppError as exc:
            problems["model"] = str(exc)
    if entry is not None and "instruction" not in problems:
        if problem := studio.instruction_problem(entry, values["instruction"]):
            problems["instruction"] = problem
    if values.get("audio") is None or "audio" in problems:
        return problems
    region_end = None if "region_end" in problems else values.get("region_end") or None
    findings = upload_check.check_upload(values["audio"], limits.reading(region_end), studio.uploads.read)
    if findings["verdict"] == "rejected":
        problems["audio"] = findings["message"]
    elif region_end is not None and region_end > findings["duration_s"]:
        problems["region_end"] = f"The region ends at {region_end:g} s, past the clip's end at {findings['duration_s']:.2f} s."
    elif entry is not None and not problems:
        problems.update(_route_problem(studio, entry, EditOrder.from_knobs(values, limits), findings["duration_s"]))
    return problems


def _route_problem(studio: Studio, entry: ModelEntry, order: EditOrder, seconds: float) -> dict[str, str]:
    """The route's refusal of a recording longer than the model's window, by the knob it marks."""
    limits, request = studio.config.limits, order.request
    window = window_seconds(entry.checkpoint, limits)
    if seconds <= window:
        return {}
    clip = studio.uploads.read(request.audio, request.read_limits)
    try:
        route(clip, request, recognise(request.instruction), window=window, label=entry.label, limits=limits,
              candidates=order.candidates)
    except KnobError as exc:
        return {exc.knob: str(exc)}
    return {}


def _compared_source(plan: EditPlan) -> tuple[Any, int]:
    """The source the check will compare, as the plan read it: the region's part for a region edit."""
    wav, rate = plan.source, plan.checkpoint.sample_rate
    if plan.region is not None:
        wav = wav[round(plan.request.region[0] * rate):round(plan.request.region[1] * rate)]
    return wav, rate


class _OverallProgress:
    """One progress for N candidates: their sampling steps summed (step k of N times the steps in all);
    the other phases (load, condition, decode) as the first candidate reports them."""

    def __init__(self, progress: Progress | None, n: int) -> None:
        self.progress, self.n = progress, n
        self._steps: dict[int, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def of(self, i: int) -> Progress | None:
        if self.progress is None or self.n == 1:
            return self.progress

        def report(phase: str, done: int, total: int) -> None:
            if phase != "sample":
                if i == 0:
                    self.progress(phase, done, total)
                return
            with self._lock:
                self._steps[i] = (done, total)
                done_all = sum(d for d, _ in self._steps.values())
                total_all = max(sum(t for _, t in self._steps.values()), total * self.n)
            self.progress(phase, done_all, total_all)

        return report


def _side_by_side(work: Callable[[int], Candidate], n: int) -> list[Candidate]:
    """``work(i)`` for i < n, each in a thread of its own inside a copy of this thread's context (where
    Gradio finds the request's progress bar); the results in order, or the first failure raised
    (a Stop, which every candidate sees, as the Cancelled it is)."""
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="candidate") as pool:
        futures = [pool.submit(contextvars.copy_context().run, work, i) for i in range(n)]
        wait(futures)
    failed = [future.exception() for future in futures if future.exception() is not None]
    if failed:
        raise next((e for e in failed if isinstance(e, Cancelled)), failed[0])
    return [future.result() for future in futures]
