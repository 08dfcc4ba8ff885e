"""The service between the UI (or a script) and the pipelines.

It knows which models exist on this machine, loads them lazily, keeps one AuK model resident
at a time, and dispatches requests. The embedded demo model (``assets/AuK-Tiny``) is always
available and goes through the same loader as a release; nothing here branches on "demo"
except what is reported to the user and which Audex snapshot is used.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from auk_app import dsp, enhance, instructions, pace, recognise, resolve, upload_check
from auk_app.audio_io import MonoClip, load_mono
from auk_app.audex.params import MAX_CODEC_CAP
from auk_app.audex.request import TRAINED_SECONDS, AudexRequest, TextToAudioResult
from auk_app.auk.batching import DEFAULT_MAX_BATCH
from auk_app.auk.checkpoint import AuKCheckpoint, read_auk_checkpoint
from auk_app.auk.conditioner import instruction_reader
from auk_app.auk.pipeline import AuKPipeline
from auk_app.auk.plan import EditPlan, plan_edit, recipe_for, window_seconds
from auk_app.auk.registry import QWEN_OMNI
from auk_app.auk.request import EditRequest, EditResult
from auk_app.check import Clip, EditCheck, Target, check, rank, target_from_text, unmeasured
from auk_app.check.transcribe import WORD_EDIT_TASKS, Transcriber, check_content, content_target
from auk_app.enhance import Suggestion
from auk_app.config import QWEN_SAMPLE_RATE, Limits
from auk_app.demo import DEMO_DIR
from auk_app.errors import AppError, Cancelled, CheckpointError, InputError
from auk_app.knobs import EDIT
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.quantize import pick_quantization
from auk_app.results import Delivery, EditOrder, check_parts, deliver
from auk_app.runtime import pick_device, pick_precision
from auk_app.urls import server_host
from auk_app.validate import shown
from auk_app.whole_file import as_edit_result, edit_whole, long_clip_warning, whole_file_refusal

if TYPE_CHECKING:  # the Audex stack imports in seconds: only a Studio that serves Audex pays for it
    from auk_app.audex.pipeline import AudexPipeline

AUDEX_DEMO_SECONDS = 3.0  # the tiny demo LM on a CPU: a few seconds keep a run short
AUDEX_RUN = "Sampling"  # the progress phases of text_to_audio's runs
AUDEX_COMPARISON_RUN = "Comparison run without the mask"
log = logging.getLogger(__name__)
GET_WEIGHTS = (
    f"The released weights are not on this machine. Download them with `{resolve.AUK_BASE.download_command}` "
    f"and `{resolve.QWEN_OMNI.download_command}`, then restart."
)


# The released variants, always offered: a client that names one that is not here learns how to get it.
RELEASED = {"base": ("AuK (base)", resolve.AUK_BASE), "flash": ("AuK-Flash (flash)", resolve.AUK_FLASH)}


@dataclass(frozen=True)
class ModelEntry:
    key: str  # what clients send: "demo", "base", "flash" or an extra checkpoint's name
    label: str
    checkpoint: AuKCheckpoint
    demo: bool


@dataclass(frozen=True)
class Candidate:
    """One seed of an edit, checked: ``check`` measures the result against what was asked, in
    ``check_seconds``; ``rank`` is its place among the request's candidates (1 is the best)."""

    result: EditResult
    check: EditCheck
    check_seconds: float
    rank: int = 1


@dataclass(frozen=True)
class LongSource:
    """An edit's clip, read once, as long edits see it: whether it runs ``whole`` in windows, and the
    ``warnings`` for a clip or region longer than the model's window that runs in one piece."""

    clip: MonoClip | None
    whole: bool
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class StudioConfig:
    """Where the weights are (explicit paths win over the resolution order) and how to run them."""

    auk_base: Path | None = None
    auk_flash: Path | None = None
    extra_auk: tuple[Path, ...] = ()
    qwen: Path | None = None
    audex: Path | None = None
    xcodec: Path | None = None
    device: str | None = None
    dtype: str | None = None
    quantize: str = "none"  # weight-only int8 or int4 block linears of the DiT and text encoder (auk_app.quantize)
    offload: bool = False
    auk_batch: int = DEFAULT_MAX_BATCH  # most concurrent edits per DiT step (and concurrent edits the app admits)
    pack: bool = False  # shared steps attend over each edit's own frames (auk_app.auk.packing), not padding
    compile: bool | None = None  # compile the DiT's blocks; None: on CUDA
    download: bool = False
    default_model: str = "auto"
    audex_server: str | None = None  # a vLLM server with the Audex plugin samples Audex streams
    auk_server: str | None = None  # a Ray Serve deployment of AuK (auk_app.serve) runs the edits
    limits: Limits = field(default_factory=Limits)
    demo_dir: Path = DEMO_DIR

    def __post_init__(self) -> None:
        if isinstance(self.auk_batch, bool) or not isinstance(self.auk_batch, int) or self.auk_batch < 1:
            raise InputError(f"auk_batch is the number of edits served at once, at least 1; got {self.auk_batch!r}.")


class Studio:
    """Model registry and dispatcher shared by the Gradio app, the CLI and the tests."""

    def __init__(self, config: StudioConfig = StudioConfig()):
        if config.audex_server:
            from auk_app.audex.remote import check_server_url

            check_server_url(config.audex_server)  # a bad URL is refused here, before anything loads
        self.config = config
        self.auk_server = None  # the edits' engine when not this process: a ServeRunner
        if config.auk_server:
            from auk_app.serve.client import ServeRunner

            self.auk_server = ServeRunner(config.auk_server)  # a bad URL is refused here
        self.device = pick_device(config.device)
        self.precision = pick_precision(self.device, config.dtype)
        self.quantization = pick_quantization(self.device, self.precision, config.quantize)  # refused at start
        self._entries = self._discover()
        self.not_downloaded = {key: label for key, (label, _) in RELEASED.items() if key not in self._entries}
        self._default = self._pick_default(config.default_model)
        self._pipelines: dict[str, AuKPipeline] = {}
        self._audex = None
        # Decided from where the files are, without writing the demo snapshot: that waits for first use.
        self.audex_demo = not self.config.download and (
            resolve.find(resolve.AUDEX, self.config.audex) is None
            or resolve.find(resolve.XCODEC1, self.config.xcodec) is None
        )
        self._lock = threading.Lock()
        self._editing = threading.Condition()  # guards _running: edits in flight per model key
        self._running: dict[str, int] = {}
        self._readers: dict[str, Callable[[str], str | None] | None] = {}  # per model: its instruction_reader
        self._readers_lock = threading.Lock()
        self._codecs: dict[str, Any] = {}  # per model on Serve: its codec alone, for whole recordings

    # ------------------------------------------------------------------ registry

    def _discover(self) -> dict[str, ModelEntry]:
        entries = {"demo": ModelEntry("demo", "AuK-Tiny (demo)", read_auk_checkpoint(self.config.demo_dir), demo=True)}
        found = {
            "base": self._find(resolve.AUK_BASE, self.config.auk_base),
            "flash": self._find(resolve.AUK_FLASH, self.config.auk_flash),
        }
        for key, directory in found.items():
            if directory is not None:
                checkpoint = read_auk_checkpoint(directory)
                entries[key] = ModelEntry(key, f"{checkpoint.name} ({checkpoint.variant})", checkpoint, demo=False)
        for directory in self.config.extra_auk:
            checkpoint = read_auk_checkpoint(directory)
            key = Path(directory).name
            entries[key] = ModelEntry(key, f"{checkpoint.name} ({key})", checkpoint, demo=False)
        return entries

    def _find(self, repo: resolve.Repo, explicit: Path | None) -> Path | None:
        if self.config.download:
            return resolve.resolve(repo, explicit, download=True)
        return resolve.find(repo, explicit)

    def _pick_default(self, wanted: str) -> str:
        if wanted == "auto":
            return next((k for k in ("base", "flash") if k in self._entries), "demo")
        return self.entry(wanted).key

    def models(self) -> list[ModelEntry]:
        return list(self._entries.values())

    def entry(self, name: str | None) -> ModelEntry:
        """The model a client named: ``auto``, a key or a label; InputError lists the choices."""
        name = (name or "auto").strip()
        if name == "auto":
            return self._entries[self._default]
        for entry in self._entries.values():
            if name in (entry.key, entry.label):
                return entry
        choices = ", ".join(["auto", *self._entries])
        for key, label in self.not_downloaded.items():
            if name in (key, label):
                raise InputError(self._get_released(key, choices))
        raise InputError(f"Unknown model {shown(name)}. Choose one of: {choices}.")  # shown: a 100 kB name stays short

    def _get_released(self, key: str, choices: str) -> str:
        """One sentence: the released variant ``key`` is not here, the command that fetches it, the choices now."""
        label, repo = RELEASED[key]
        qwen = "" if resolve.find(resolve.QWEN_OMNI, self.config.qwen) else f" and `{resolve.QWEN_OMNI.download_command}`"
        return (f"{label} is not downloaded: fetch it with `{repo.download_command}`{qwen}, then restart the app; "
                f"until then choose one of: {choices}.")

    # ------------------------------------------------------------------ AuK

    def pipeline(self, entry: ModelEntry) -> AuKPipeline:
        """The entry's pipeline; loading another model first unloads the resident one."""
        with self._lock:
            pipeline = self._pipelines.get(entry.key)
            if pipeline is None:
                text_encoder = None
                if entry.checkpoint.text_encoder.kind == QWEN_OMNI:  # a snapshot to find (MiniLM is installed)
                    text_encoder = self._qwen_dir(entry)
                pipeline = AuKPipeline(
                    entry.checkpoint, text_encoder_path=text_encoder, device=self.device, dtype=self.precision,
                    offload=self.config.offload, limits=self.config.limits, max_batch=self.config.auk_batch,
                    compile=self.config.compile, pack=self.config.pack, quantize=self.quantization,
                )
                for other in self._pipelines.values():
                    other.unload()
                self._pipelines = {entry.key: pipeline}
            return pipeline

    def _qwen_dir(self, entry: ModelEntry) -> Path:
        bundled = entry.checkpoint.directory / "thinker"  # a vLLM-Omni assembled directory links it here
        if self.config.qwen is None and resolve.QWEN_OMNI.is_complete(bundled):
            return bundled
        return resolve.resolve(resolve.QWEN_OMNI, self.config.qwen, download=self.config.download)

    def capability_warnings(self, model: str | None, instruction: str | None) -> list[str]:
        """One sentence per thing in ``instruction`` that ``model`` was not trained for (a cookbook task
        its config does not declare, Chinese on an English-only model), with where the released weights
        are: a request it cannot serve well still runs, but nobody should mistake the result for AuK's."""
        entry = self.entry(model)
        capabilities = entry.checkpoint.capabilities
        gaps = recognise.untrained(instruction or "", capabilities.tasks, capabilities.languages)
        released = [e.key for e in self._entries.values() if not e.demo and e.checkpoint.capabilities.tasks is None]
        where = (f"the released weights are here: choose `{released[0]}`." if released
                 else f"the released AuK weights were. {GET_WEIGHTS}")
        unmatched = recognise.unmatched(instruction or "", capabilities.tasks, entry.label)  # a request of no task
        return [f"{entry.label} was not trained for {gap}, so expect a result that does not follow the "
                f"instruction; {where}" for gap in gaps] + unmatched

    def edit_problems(self, values: Mapping[str, Any]) -> dict[str, str]:
        """The sentence for each knob of an edit's ``values`` that cannot be served, by name: the knobs'
        own checks, the model's name, and the upload check of the clip (under a region's limits when
        a region is set), before anything is queued."""
        problems = EditOrder.problems(values, self.config.limits)
        try:
            entry = self.entry(values.get("model", EDIT["model"].default))
        except AppError as exc:
            problems["model"] = str(exc)
        else:
            if "instruction" not in problems and (problem := self._instruction_problem(entry, values["instruction"])):
                problems["instruction"] = problem
        if values.get("audio") is not None and "audio" not in problems:
            region_end = None if "region_end" in problems else values.get("region_end") or None
            limits = self.config.limits
            findings = upload_check.check_upload(values["audio"], limits.reading(region_end))
            if findings["verdict"] == "rejected":
                problems["audio"] = findings["message"]
            elif region_end is not None and region_end > findings["duration_s"]:
                problems["region_end"] = (f"The region ends at {region_end:g} s, past the clip's end at "
                                          f"{findings['duration_s']:.2f} s.")
            elif region_end is None and findings["duration_s"] > limits.max_input_seconds and "model" not in problems:
                window = window_seconds(entry.checkpoint, limits)
                if refusal := whole_file_refusal(values.get("instruction") or "", window, limits.max_target_seconds):
                    problems["audio"] = refusal
        return problems

    def voiced_seconds(self, audio, region: tuple[float, float] | None = None) -> float | None:
        """Seconds of speech in an upload (or its region), pauses left out: the builder times new words
        at the speaker's pace from it. None where the clip cannot be read."""
        try:
            clip = load_mono(audio, self.config.limits.reading(None if region is None else region[1]))
        except AppError:
            return None
        start, end = (0, clip.mono.size) if region is None else (round(r * clip.sample_rate) for r in region)
        return pace.voiced_seconds(clip.mono[start:end], clip.sample_rate)

    def _instruction_problem(self, entry: ModelEntry, instruction: str) -> str | None:
        """What ``entry``'s text encoder refuses in ``instruction`` (more tokens than it has positions),
        read by its tokenizer alone, which is kept per model."""
        with self._readers_lock:  # validators run side by side: the tokenizer is loaded once
            if entry.key not in self._readers:
                encoder = entry.checkpoint.text_encoder
                locate = (lambda: self._qwen_dir(entry)) if encoder.kind == QWEN_OMNI else (lambda: None)
                self._readers[entry.key] = instruction_reader(encoder, locate)
        reader = self._readers[entry.key]
        return None if reader is None else reader(instruction)

    def gpu_seconds(self, values: Mapping[str, Any]) -> int:
        """A ZeroGPU budget for an edit's ``values``: loading, plus a cost per Euler step growing with the
        target length and the candidates (batched, each after the first costs about half of one)."""
        try:
            order = EditOrder.from_knobs(values, self.config.limits)
            steps = recipe_for(order.request, self.entry(order.model).checkpoint).steps
            target, extra = order.request.seconds or 30.0, order.candidates - 1
        except AppError:
            steps, target, extra = 32, 30.0, 0
        return int(min(180, 30 + steps * target * 0.05 * (1 + extra / 2)))

    def audex_gpu_seconds(self, values: Mapping[str, Any]) -> int:
        """A ZeroGPU budget for a text-to-audio request: about 10 ms per guided token, twice with the
        comparison run."""
        try:
            request = AudexRequest.from_knobs(values, self.config.limits, seconds=self.audex_seconds)
            tokens = request.tokens_asked()
        except AppError:
            tokens = 2 * MAX_CODEC_CAP
        return int(min(180, 20 + tokens * 0.01))

    def edit(self, request: EditRequest, model: str | None = None, **callbacks) -> tuple[EditResult, ModelEntry]:
        """Plan ``request`` (every check, before waiting for the model), then run it."""
        entry = self.entry(model)
        return self.run_plan(plan_edit(request, entry.checkpoint, self.config.limits), entry, **callbacks), entry

    def run_plan(self, plan: EditPlan, entry: ModelEntry, **callbacks) -> EditResult:
        """Run a plan of ``entry``'s checkpoint: where every edit's model work starts."""
        if self.auk_server is not None:  # a replica runs the plan's window; the region is spliced here
            return self.auk_server.run(plan, **callbacks)
        with self._resident(entry) as pipeline:
            return pipeline.run(plan, **callbacks)

    def edit_candidates(self, request: EditRequest, model: str | None = None, *, candidates: int = 1,
                        target: Target | None = None, progress=None, should_stop=None,
                        ) -> tuple[list[Candidate], ModelEntry]:
        """``candidates`` seeds of ``request`` (its seed, seed+1, …), each checked against ``target``
        (default: what the instruction's text asks for), best first by :func:`auk_app.check.rank`.

        The request is planned once; each candidate runs that plan with its own seed, in a thread of
        its own through the same pipeline, so the step batcher solves them as one batch.
        ``should_stop`` stops them all and ``progress`` sees the steps of all of them summed. Any
        candidate's failure (Stop included) fails the request."""
        n = EDIT["candidates"].check(candidates, self.config.limits)
        entry = self.entry(model)
        target = target_from_text(request.instruction) if target is None else target
        plan = plan_edit(request, entry.checkpoint, self.config.limits)
        plans = [plan.with_seed((request.seed + i) % 2**63) for i in range(n)]
        source = _SharedSource()
        if target.measurable and plan.clip is not None:  # the source's pYIN while the model runs
            threading.Thread(target=source.measure, args=(plan,), daemon=True, name="check-source").start()
        steps = _OverallProgress(progress, n)
        heard = None if target.measurable or content_target(request.instruction) is None else self._heard(entry)

        def one(i: int) -> tuple[EditResult, EditCheck, float]:
            result = self.run_plan(plans[i], entry, progress=steps.of(i), should_stop=should_stop)
            started = time.perf_counter()
            return result, _checked(target, source, result, heard), time.perf_counter() - started

        if n == 1:
            made = [one(0)]
        else:
            made = _in_threads(one, n)
        order = {id(c): k for k, c in enumerate(rank([c for _, c, _ in made]))}
        ranked = sorted((Candidate(r, c, s, order[id(c)] + 1) for r, c, s in made), key=lambda c: c.rank)
        return ranked, entry

    def fulfil(self, order: EditOrder, *, progress: Progress | None = None, should_stop: ShouldStop | None = None,
               warn: Callable[[str], None] | None = None) -> tuple[list[Delivery], ModelEntry]:
        """Run ``order`` and make each candidate ready to write, best first (:mod:`auk_app.results`).
        ``warn`` hears each warning as soon as it is known: what the model was not trained for before
        the run, what the run found (clipping) after it."""
        entry = self.entry(order.model)
        if order.enhance:
            order = self._enhanced(order, entry)
        long = self._long_source(order, entry)
        rewrite = (order.enhanced or {}).get("warning")
        cautions = tuple(self.capability_warnings(order.model, order.request.instruction)) + long.warnings + (
            (rewrite,) if rewrite else ())
        for caution in cautions if warn else ():
            warn(caution)
        if long.whole:
            made = [self._edit_whole(order, entry, long.clip, progress, should_stop)]
        else:
            made, entry = self.edit_candidates(order.request, order.model, candidates=order.candidates,
                                               target=order.target, progress=progress, should_stop=should_stop)
        if should_stop is not None and should_stop():  # stopped after the last step: still nothing is delivered
            raise Cancelled("Stopped before the result was ready; nothing was produced.")
        seeds = sorted(c.result.record.seed for c in made)
        model = {"key": entry.key, "label": entry.label, "demo": entry.demo}
        delivered = [deliver(c.result, order, model=model, check=c.check, check_seconds=c.check_seconds,
                             cautions=cautions, candidate={"rank": c.rank, "of": len(made), "seeds": seeds})
                     for c in made]
        for warning in delivered[0].record["warnings"][len(cautions):] if warn else ():
            warn(warning)
        return delivered, entry

    def suggest(self, model: str | None, instruction: str, audio=None) -> Suggestion:
        """``instruction`` rewritten into the cookbook's wording (:mod:`auk_app.enhance`): by the resident
        thinker where the model has one in this process, else by the recogniser. For a word edit the
        thinker hears what the source clip (``audio``) says first."""
        entry = self.entry(model)
        clip = None if audio is None else load_mono(audio, self.config.limits.for_whole())
        if not entry.checkpoint.text_encoder.reads_audio or self.auk_server is not None:
            return self._timed(enhance.by_recogniser(instruction), clip, None)
        found = recognise.recognise(instruction)
        with self._resident(entry) as pipeline, pipeline.conditioner_in_use() as conditioner:
            transcriber = Transcriber.from_conditioner(conditioner, pipeline.text_encoder_path)
            transcript = None
            if clip is not None and found is not None and found.task in instructions.TASKS_BY_KEY \
                    and instructions.task(found.task).paced:
                transcript = transcriber.transcribe(dsp.resample(clip.mono, clip.sample_rate, QWEN_SAMPLE_RATE))
            heard = transcript if found is not None and found.task in WORD_EDIT_TASKS else None
            suggestion = enhance.by_thinker(conditioner.model, conditioner.processor.tokenizer, instruction, heard)
        return self._timed(suggestion, clip, transcript)

    def _timed(self, suggestion: Suggestion, clip: MonoClip | None, transcript: str | None) -> Suggestion:
        """``suggestion`` with the duration its new words take (speech, a word edit), at the source
        speaker's pace where the clip and what it says are known, as the builder times them."""
        found = recognise.recognise(suggestion.instruction)
        if found is None or found.task not in instructions.TASKS_BY_KEY or not instructions.task(found.task).paced:
            return suggestion
        voiced = None if clip is None else pace.voiced_seconds(clip.mono, clip.sample_rate)
        built = instructions.build(found.task, found.fields, source_seconds=None if clip is None else clip.seconds,
                                   limits=self.config.limits, voiced_seconds=voiced, transcript=transcript)
        return replace(suggestion, seconds=built.duration.seconds or None,
                       pace=None if built.pace is None else built.pace.to_manifest())

    def _enhanced(self, order: EditOrder, entry: ModelEntry) -> EditOrder:
        """``order`` with its instruction rewritten into the cookbook's wording, both recorded."""
        suggestion = self.suggest(entry.key, order.request.instruction, order.request.audio)
        request = replace(order.request, instruction=suggestion.instruction)
        return replace(order, request=request, enhanced=suggestion.to_manifest())

    def _long_source(self, order: EditOrder, entry: ModelEntry) -> LongSource:
        """Whether ``order``'s clip runs whole in windows (longer than the model's window, no region, an
        edit that keeps timing and words), and what to warn about a clip or region longer than the
        window that runs in one piece; a recording past 30 s that cannot run whole is refused."""
        request, limits = order.request, self.config.limits
        window = window_seconds(entry.checkpoint, limits)
        if request.audio is None or request.region is not None:
            seconds = 0.0 if request.region is None else request.region[1] - request.region[0]
            warning = long_clip_warning(seconds, entry.label, window)
            return LongSource(None, False, (warning,) if warning else ())
        clip = load_mono(request.audio, limits.for_whole())
        if clip.seconds <= window:
            return LongSource(clip, False, ())
        refusal = whole_file_refusal(request.instruction, window, limits.max_target_seconds)
        if refusal is None and order.candidates > 1:
            refusal = (f"A whole recording longer than the model's {window:g} s window is edited once; ask for one "
                       "candidate, or choose a region to try several.")
        if refusal is not None and clip.seconds > limits.max_input_seconds:
            raise InputError(refusal)
        warning = None if refusal is None else long_clip_warning(clip.seconds, entry.label, window)
        return LongSource(clip, refusal is None, (warning,) if warning else ())

    def _edit_whole(self, order: EditOrder, entry: ModelEntry, clip: MonoClip, progress, should_stop) -> Candidate:
        """The whole recording edited in windows, here or on the Serve replicas, checked like any edit."""
        request = order.request
        knobs = {k: v for k, v in request.knobs().items() if k not in ("instruction", "seconds", "seed")}
        run = functools.partial(edit_whole, audio=clip.mono, sample_rate=clip.sample_rate,
                                instruction=request.instruction, seed=request.seed, knobs=knobs, progress=progress,
                                should_stop=should_stop)
        if self.auk_server is not None:  # each window a request to the replicas; joined and decoded here
            windows = self._serve_windows(entry)
            result = windows.edit_result(run(windows), clip)
        else:
            with self._resident(entry) as pipeline:
                made = run(pipeline)
            result = as_edit_result(made, clip, device=str(pipeline.device), dtype=pipeline.precision.name,
                                    quantize=pipeline.quantization.mode)
        target = order.target or target_from_text(request.instruction)
        started = time.perf_counter()
        checked = _checked(target, _SharedSource(), result)
        return Candidate(result, checked, time.perf_counter() - started)

    def _serve_windows(self, entry: ModelEntry):
        """A whole-recording edit's windows on the Serve deployment, with ``entry``'s codec in this
        process (loaded on the first such edit, kept for the next)."""
        from auk_app.serve.windows import AppCodec, ServeWindows

        with self._lock:
            codec = self._codecs.setdefault(entry.key, AppCodec(entry.checkpoint, self.device))
        return ServeWindows(self.auk_server, entry.checkpoint, self.config.limits, codec)

    def _heard(self, entry: ModelEntry) -> Callable[[EditResult], EditCheck] | None:
        """The content check of ``entry``'s results (what the thinker hears against the text the
        instruction asks for), or None where the text encoder does not hear audio (MiniLM) or the model
        runs on Ray Serve replicas (the app holds no thinker then)."""
        if not entry.checkpoint.text_encoder.reads_audio or self.auk_server is not None:
            return None

        def heard(result: EditResult) -> EditCheck:
            before, after = (None if wav is None else dsp.resample(wav, result.sample_rate, QWEN_SAMPLE_RATE)
                             for wav in check_parts(result))
            with self._resident(entry) as pipeline, pipeline.conditioner_in_use() as conditioner:
                transcriber = Transcriber.from_conditioner(conditioner, pipeline.text_encoder_path)
                return check_content(transcriber, result.record.instruction, after, before)

        return heard

    @contextlib.contextmanager
    def _resident(self, entry: ModelEntry):
        """The entry's pipeline, counted as in use while the block runs. Edits of the resident model
        run side by side (they share DiT steps); one of another model waits until they are done, so a
        switch never unloads a model under running edits nor holds two models at once."""
        with self._editing:
            self._editing.wait_for(lambda: not any(n for key, n in self._running.items() if key != entry.key))
            pipeline = self.pipeline(entry)
            self._running[entry.key] = self._running.get(entry.key, 0) + 1
        try:
            yield pipeline
        finally:
            with self._editing:
                self._running[entry.key] -= 1
                self._editing.notify_all()

    # ------------------------------------------------------------------ Audex

    def audex(self) -> AudexPipeline:
        """The Audex pipeline: the released weights when found, else Audex-Tiny (assets/Audex-Tiny)."""
        from auk_app.audex.pipeline import AudexPipeline
        from auk_app.audex.remote import RemoteSampler

        with self._lock:
            if self._audex is None:
                if self.audex_demo:
                    from auk_app.demo.audex_snapshot import shared_demo_snapshot

                    demo = shared_demo_snapshot()
                    root, xcodec = demo.thinker_dir, demo.xcodec_dir
                else:
                    root = self._find(resolve.AUDEX, self.config.audex)
                    xcodec = self._find(resolve.XCODEC1, self.config.xcodec)
                server = RemoteSampler(self.config.audex_server) if self.config.audex_server else None
                # Audex has no float32-master recipe: under autocast-bf16 it runs bf16 weights, as released.
                self._audex = AudexPipeline.from_paths(root, xcodec, device=self.device, dtype=self.precision.compute,
                                                       sampler=server, quantization=self.quantization)
            return self._audex

    @property
    def audex_seconds(self) -> float:
        """The default length: the released model's 10 s, or a few seconds of the tiny demo on a CPU."""
        return AUDEX_DEMO_SECONDS if self.audex_demo else TRAINED_SECONDS

    def text_to_audio(self, request: AudexRequest, *, progress: Progress = silent,
                      should_stop: ShouldStop | None = None) -> TextToAudioResult:
        """The masked run and, when asked for, the same seed without the mask (not decoded);
        ``progress(phase, done, total)`` names the run in ``phase``.

        On an Audex server both runs share one deadline, sized from the tokens the request asks for:
        each run with its own would let a request with a comparison hold the one model slot twice as long."""
        pipeline = self.audex()
        sampler = pipeline.sampler
        deadline = sampler.deadline(request.tokens_asked())
        result = pipeline.generate(request.sampling, label=AUDEX_RUN, progress=progress, should_stop=should_stop,
                                   deadline=deadline)
        unmasked = None
        if request.compare_unmasked:
            unmasked = pipeline.generate(request.unmasked(), label=AUDEX_COMPARISON_RUN, decode=False,
                                         progress=progress, should_stop=should_stop, deadline=deadline)
        model = {
            "model": "Audex-Tiny (demo)" if self.audex_demo else "Nemotron-Labs-Audex-2B",
            "demo_model": self.audex_demo, "thinker_dir": pipeline.thinker_dir.name,
            "xcodec_dir": pipeline.xcodec_dir.name, "device": str(pipeline.device),
            "dtype": str(pipeline.dtype).removeprefix("torch."),
            "quantize": self.quantization.mode if sampler.engine == "in-process" else "none",  # a server's own
            "engine": sampler.engine,
            "engine_server": sampler.host,
        }
        return TextToAudioResult(request=request, result=result, unmasked=unmasked, model=model,
                                 warnings=tuple(self.caption_warnings(request.caption)))

    def caption_warnings(self, caption: str) -> list[str]:
        """With Audex-Tiny, one sentence naming the words of ``caption`` it does not know; none with
        the released weights."""
        if not self.audex_demo:
            return []
        from auk_app.demo.audex_vocabulary import caption_warnings  # the release path imports nothing of the demo
        return caption_warnings(caption)

    # ------------------------------------------------------------------ status

    def _audex_server_host(self) -> str | None:
        return server_host(self.config.audex_server) if self.config.audex_server else None

    def info(self) -> dict[str, Any]:
        loaded = next((key for key, p in self._pipelines.items() if p.loaded), None)
        default = self._entries[self._default]
        return {
            "available_models": ["auto", *self._entries],
            "not_downloaded": {key: RELEASED[key][1].download_command for key in self.not_downloaded},
            "default_model": default.key,
            "loaded_model": loaded,
            "device": str(self.device),
            "dtype": self.precision.name,
            "quantize": self.quantization.mode,
            "demo": default.demo,
            "audex_demo": self.audex_demo,
            "audex_server": self._audex_server_host(),
            "auk_server": None if self.auk_server is None else self.auk_server.host,
            "models": {
                e.key: {"label": e.label, "variant": e.checkpoint.variant, "folder": e.checkpoint.directory.name,
                        "demo": e.demo, "defaults": asdict(e.checkpoint.defaults),
                        "capabilities": asdict(e.checkpoint.capabilities)}
                for e in self._entries.values()
            },
        }



# ----------------------------------------------------------------------------- candidates and checks


class _SharedSource:
    """The source as one check Clip for all candidates, so its measures (pYIN) are taken once, and
    taken while the model runs (``measure``) rather than after it."""

    def __init__(self) -> None:
        self._clip: Clip | None = None
        self._lock = threading.Lock()

    def clip(self, wav: np.ndarray, rate: int) -> Clip:
        with self._lock:
            if self._clip is None:
                self._clip = Clip(wav, rate)
            return self._clip

    def measure(self, plan: EditPlan) -> None:
        """Take the source's measures from the plan's clip, as the run reads it. A failure here is
        the run's own to report: the check then measures the source itself."""
        try:
            wav, rate = plan.source, plan.checkpoint.sample_rate
            if plan.region is not None:
                wav = wav[round(plan.request.region[0] * rate):round(plan.request.region[1] * rate)]
            clip = self.clip(wav, rate)
            clip.measure_all()
        except Exception:  # noqa: BLE001
            log.debug("measuring the source ahead of the check failed", exc_info=True)


def _checked(target: Target, source: _SharedSource, result: EditResult,
             heard: Callable[[EditResult], EditCheck] | None = None) -> EditCheck:
    """The edit check of one result (by ``heard`` where only the words can be checked); a failure
    of the check itself never fails the edit: a snapshot without the thinker's output head, or a bug."""
    if heard is not None:
        try:
            return heard(result)
        except CheckpointError as exc:
            return unmeasured(target.task, f"the words cannot be checked: {exc}")
    before, after = check_parts(result)
    try:
        clip = None if before is None else source.clip(before, result.sample_rate)
        return check(target, clip, after, result.sample_rate)
    except Exception as exc:  # noqa: BLE001: the edit is done; its check says what went wrong
        log.exception("edit check failed")
        return unmeasured(target.task, f"the check failed ({type(exc).__name__})")


class _OverallProgress:
    """One progress for N candidates: their sampling steps summed (step k of N times the steps in all); the other
    phases (load, condition, decode) as the first candidate reports them."""

    def __init__(self, progress, n: int) -> None:
        self.progress, self.n = progress, n
        self._steps: dict[int, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def of(self, i: int):
        if self.progress is None:
            return None
        if self.n == 1:
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


def _in_threads(work, n: int) -> list:
    """``work(i)`` for i < n, each in its own thread inside a copy of this thread's context (where
    Gradio finds the request's progress bar); the results in order, or the first failure raised
    (a Stop, which every candidate sees, as the Cancelled it is)."""
    results: list = [None] * n
    errors: list[BaseException | None] = [None] * n

    def run(i: int) -> None:
        try:
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001: re-raised in the calling thread
            errors[i] = exc

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(run, i), name=f"candidate-{i}",
                                daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = [e for e in errors if e is not None]
    if failed:
        raise next((e for e in failed if isinstance(e, Cancelled)), failed[0])
    return results
