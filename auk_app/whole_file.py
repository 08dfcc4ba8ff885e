"""A whole recording longer than the model's window, edited with one instruction in overlapping
windows (:func:`edit_whole`), and which instructions may be (:func:`whole_file_refusal`).

The window is the longest clip the checkpoint was trained on (``capabilities.max_clip_seconds``):
a longer clip is under-edited, a model trained on 6 s clips barely moves the pitch of 30 s. The
windows (:mod:`auk_app.auk.windows`) are solved a few at a time in threads, so the pipeline's step
batcher runs their Euler steps together; their latents are joined with linear crossfades in
window order and decoded in chunks (:mod:`auk_app.auk.stream_decode`) as soon as they are final.
Memory holds the source, the result and a few windows' latents, whatever the recording's length.

Windows agree because each gets the same instruction, knobs and seed. With one seed, a window's
edit is a function of its own audio alone, not of where it falls in the file: a stretch that
repeats (a steady tone, a hum) is edited alike in every window, and the record's one seed
reproduces every window. Seed + index would make each window another draw of the model, which is
what candidates are for, not windows meant to agree.

Only edits that keep the timing and the words qualify, and whose meaning does not depend on the
window: volume, pitch, noise and reverberation removal, repairs, music separation, and free
wording in which the edit check recognises a volume, pitch or noise-removal target. A speed
change moves every seam, speech generation and word edits change the content, and "the speaker
who starts first" is another speaker in each window: those take a region.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch

from auk_app import dsp, instructions, lengths
from auk_app.auk.checkpoint import AuKCheckpoint
from auk_app.auk.plan import EditPlan, Recipe, window_seconds
from auk_app.audio_io import MonoClip
from auk_app.auk.request import EditRequest, EditResult
from auk_app.auk.step_reuse import StepTally
from auk_app.auk.stream_decode import StreamDecoder
from auk_app.auk.windows import MAX_OVERLAP_SHARE, LatentJoiner, WindowPlan, plan_windows
from auk_app.config import Limits
from auk_app.errors import Cancelled, InputError, KnobError
from auk_app.lengths import WHOLE_TASKS
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.recognise import Recognised
from auk_app.validate import SILENCE_PEAK, check_clip

OVERLAP_SECONDS = 1.0  # shared by neighbouring windows; each seam crossfades over this much
# The edit check of a recording longer than this measures pieces of it (checked_part): 30 s of audio,
# about 7 s of the check's measures on two cores, whatever the recording's length.
CHECK_WHOLE_SECONDS = 60.0
CHECK_PIECES, CHECK_PIECE_SECONDS = 6, 5.0


class WindowEngine(Protocol):
    """What :func:`edit_whole` runs windows on: an :class:`~auk_app.auk.pipeline.AuKPipeline`, or
    anything that plans, solves, encodes and decodes as it does (Serve replicas:
    :class:`~auk_app.serve.windows.ServeWindows`). ``max_batch`` is how many windows it solves at once."""

    checkpoint: AuKCheckpoint
    limits: Limits
    max_batch: int

    def plan(self, request: EditRequest) -> EditPlan: ...

    def latents(self, plan: EditPlan, *, progress: Progress | None = None,
                should_stop: ShouldStop | None = None, tally: StepTally | None = None) -> torch.Tensor: ...

    def encode(self, wav: np.ndarray) -> torch.Tensor: ...

    def stream_decoder(self) -> StreamDecoder: ...


@dataclass(frozen=True)
class WholeFileResult:
    wav: np.ndarray  # float32 mono at the model's rate, the recording's length, unclamped as the model made it
    sample_rate: int
    windows: WindowPlan
    plan: EditPlan  # a window's plan: its request (one seed for all) and recipe (the checkpoint's defaults filled in)
    timings: dict[str, float]  # "decode" (joining and decoding), "total"
    steps: dict[str, int]  # what the windows' Euler steps did, summed (StepTally's counts)
    source: np.ndarray  # the recording at the model's rate, as the windows read it

    @property
    def seed(self) -> int:
        return self.plan.request.seed

    @property
    def recipe(self) -> Recipe:
        return self.plan.recipe


def whole_file_refusal(found: Recognised | None, window: float, limits: Limits) -> str | None:
    """The one sentence that refuses a request (what the recogniser ``found`` in it) on a whole
    recording longer than the window; None when the edit keeps the timing and the words, so windows
    may share it."""
    if found is not None and instructions.supports(WHOLE_TASKS, found.key):
        return None
    return lengths.whole_refusal(window, limits)


@dataclass(frozen=True)
class Route:
    """How an edit's clip runs: ``whole`` in windows, or in one piece with ``warnings`` (a clip or
    region longer than the model's window)."""

    whole: bool
    warnings: tuple[str, ...] = ()


def route(clip: MonoClip | None, request: EditRequest, found: Recognised | None, *, window: float, label: str,
          limits: Limits, candidates: int = 1) -> Route:
    """Whether ``clip`` runs whole in windows: longer than the ``window``, no region, one candidate,
    and an edit that keeps the timing and the words (what the recogniser ``found``). A recording
    longer than a clip may be that cannot run whole is refused with the sentence that says why."""
    if clip is None or request.region is not None:
        seconds = 0.0 if request.region is None else request.region[1] - request.region[0]
        warning = long_clip_warning(seconds, label, window)
        return Route(False, (warning,) if warning else ())
    if clip.seconds <= window:
        return Route(False)
    refusal, knob = whole_file_refusal(found, window, limits), "audio"
    if refusal is None and candidates > 1:
        refusal, knob = (f"A whole recording longer than the model's {window:g} s window is edited once; ask for "
                         "one candidate, or choose a region to try several."), "candidates"
    if refusal is not None and clip.seconds > limits.max_input_seconds:
        raise KnobError(knob, refusal)
    warning = None if refusal is None else long_clip_warning(clip.seconds, label, window)
    return Route(refusal is None, (warning,) if warning else ())


def checked_part(result: EditResult) -> tuple[EditResult, str | None]:
    """What a whole recording's edit check measures: the recording itself up to
    CHECK_WHOLE_SECONDS, else CHECK_PIECES pieces of CHECK_PIECE_SECONDS spread evenly over it, the
    source's and the result's at the same places, joined (the check's measures, pYIN above all, take
    seconds a minute: an hour's would cost more than its edit, and memory with its length); and the
    words that say which, for the check's note."""
    rate, n = result.sample_rate, result.wav.size
    if n <= CHECK_WHOLE_SECONDS * rate or result.source is None:
        return result, None
    piece = round(CHECK_PIECE_SECONDS * rate)
    starts = [round((k + 0.5) * n / CHECK_PIECES) - piece // 2 for k in range(CHECK_PIECES)]
    take = lambda wav: np.concatenate([wav[start:start + piece] for start in starts])  # noqa: E731
    sample = replace(result, wav=take(result.wav), source=take(result.source))
    return sample, (f"measured on {CHECK_PIECES} pieces of {CHECK_PIECE_SECONDS:g} s spread over the "
                    f"{n / rate:.0f} s recording")


def long_clip_warning(seconds: float, model: str, max_clip_seconds: float) -> str | None:
    """The sentence for a single clip longer than the model's training clips, edited in one piece."""
    if seconds <= max_clip_seconds:
        return None
    return (f"The clip lasts {seconds:.1f} s, longer than the {max_clip_seconds:g} s clips {model} was trained on, "
            f"so expect a weaker edit; edit it in regions of at most {max_clip_seconds:g} s, or leave the region "
            "empty to edit the whole recording in windows of that length.")


def edit_whole(pipeline: WindowEngine, audio: np.ndarray, sample_rate: int, instruction: str, *,
               seed: int | None = None, knobs: Mapping[str, Any] | None = None,
               overlap_seconds: float = OVERLAP_SECONDS, concurrent: int | None = None,
               progress: Progress | None = None, should_stop: ShouldStop | None = None) -> WholeFileResult:
    """``audio`` (mono at ``sample_rate``) edited whole by ``instruction`` in windows (see the module
    docstring). ``knobs`` are EditRequest's sampling fields (nfe, cfg, sway, t_grid, vae_sample);
    ``concurrent`` windows are solved at once (default: the pipeline's max_batch, one step batch).
    Progress reports "sample" (every window's steps together), "windows" and "decode"; Stop ends the
    run between steps with Cancelled, and nothing is returned. A recording past the limits raises
    InputError first; whether the instruction may run whole is the caller's to ask
    (:func:`whole_file_refusal`), from what it recognised in it."""
    started = time.perf_counter()
    if concurrent is not None and concurrent < 1:
        raise ValueError(f"concurrent is how many windows to solve at once, at least 1; got {concurrent}")
    report = progress or silent
    checkpoint, limits = pipeline.checkpoint, pipeline.limits
    window = window_seconds(checkpoint, limits)
    source = _checked_source(audio, sample_rate, pipeline)
    rate = checkpoint.sample_rate
    first = EditRequest(instruction=instruction, audio=(source[: round(window * rate)], rate), seed=seed,
                        limits=limits, **dict(knobs or {}))  # checks every knob, and draws the seed once
    plan = pipeline.plan(replace(first, audio=None, seconds=window))  # no source checks here
    windows = plan_windows(source.size, window=round(window * rate),
                           overlap=round(min(overlap_seconds, window / MAX_OVERLAP_SHARE) * rate), hop=checkpoint.hop)
    report("windows", 0, len(windows.windows))  # how many, before the first step: the line counts them from the start
    solver = _WindowSolver(pipeline, source, windows, first, report, should_stop)
    wav, decode_seconds = _join_and_decode(pipeline, solver, concurrent or pipeline.max_batch, report, should_stop)
    timings = {"decode": round(decode_seconds, 4), "total": round(time.perf_counter() - started, 4)}
    return WholeFileResult(wav=wav, sample_rate=rate, windows=windows, plan=plan, timings=timings,
                           steps=asdict(solver.steps), source=source)


def edit_request_whole(engine: WindowEngine, clip: MonoClip, request: EditRequest, *,
                       progress: Progress | None = None, should_stop: ShouldStop | None = None) -> WholeFileResult:
    """:func:`edit_whole` of ``clip`` with ``request``'s instruction, seed and sampling knobs."""
    knobs = {k: v for k, v in request.knobs().items() if k not in ("instruction", "seconds", "seed")}
    return edit_whole(engine, clip.mono, clip.sample_rate, request.instruction, seed=request.seed, knobs=knobs,
                      progress=progress, should_stop=should_stop)


def _checked_source(audio: np.ndarray, sample_rate: int, pipeline: WindowEngine) -> np.ndarray:
    """The recording at the model's rate, through an upload's checks with the whole-file limit."""
    limits = pipeline.limits
    seconds = audio.size / sample_rate
    if seconds > limits.max_whole_file_seconds:
        raise InputError(
            f"The recording lasts {seconds / 60:.1f} minutes ({seconds:.0f} s); a whole recording may last at most "
            f"{limits.max_whole_file_seconds / 60:g} minutes. Split it, or choose a region to edit."
        )
    check_clip(np.asarray(audio), sample_rate, limits.for_whole())
    return dsp.resample(np.asarray(audio, dtype=np.float32), sample_rate, pipeline.checkpoint.sample_rate)


class _WindowSolver:
    """Solves one window at a time on any thread, with progress summed over the windows and one
    Stop for all of them: the first failure stops the others at their next step."""

    def __init__(self, pipeline: WindowEngine, source: np.ndarray, windows: WindowPlan, request: EditRequest,
                 report: Progress, should_stop: ShouldStop | None):
        self.pipeline, self.source, self.windows, self.request = pipeline, source, windows, request
        self.report, self.should_stop = report, should_stop
        self.stopped = threading.Event()
        self.error: BaseException | None = None  # the first window's failure, raised for all of them
        self._lock = threading.Lock()
        self._steps = [0] * len(windows.windows)
        self._finished = 0
        self.steps = StepTally()  # what the windows' steps did, summed as each window ends

    def solve(self, index: int) -> torch.Tensor:
        """Window ``index``'s edited latents [frames, L]; a silent window keeps its source's."""
        start, stop = self.windows.windows[index]
        clip, rate = self.source[start:stop], self.pipeline.checkpoint.sample_rate
        try:
            if np.abs(clip).max() < SILENCE_PEAK:  # nothing to edit (a plan refuses a clip this quiet)
                latents = _frames(self.pipeline.encode(clip), self.windows.window_frames(index))
            else:
                plan = self.pipeline.plan(replace(self.request, audio=(clip, rate)))
                progress = lambda phase, done, total: self._step(index, phase, done, total)  # noqa: E731
                tally = StepTally()
                latents = self.pipeline.latents(plan, progress=progress, should_stop=self._stop_requested, tally=tally)
                with self._lock:
                    self.steps.add(asdict(tally))
        except BaseException as exc:
            with self._lock:
                self.error = self.error or exc
            self.stopped.set()
            raise
        with self._lock:
            self._finished += 1
            self.report("windows", self._finished, len(self._steps))
        return latents

    def _stop_requested(self) -> bool:
        return self.stopped.is_set() or (self.should_stop is not None and self.should_stop())

    def _step(self, index: int, phase: str, done: int, total: int) -> None:
        if phase != "sample":
            return
        with self._lock:  # every window takes the same steps
            self._steps[index] = done
            self.report("sample", sum(self._steps), total * len(self._steps))


def _frames(latents: torch.Tensor, count: int) -> torch.Tensor:
    """``latents`` [n, L] as ``count`` frames: the codec's encoder may make one frame less for a partial hop."""
    if latents.shape[0] >= count:
        return latents[:count]
    return torch.cat((latents, latents[-1:].expand(count - latents.shape[0], -1)))


def _join_and_decode(pipeline: WindowEngine, solver: _WindowSolver, concurrent: int, report: Progress,
                     should_stop: ShouldStop | None) -> tuple[np.ndarray, float]:
    """Solve the windows ``concurrent`` at a time, join them in order and decode what is final;
    returns the recording and the seconds spent joining and decoding."""
    windows = solver.windows
    joiner, decoder = LatentJoiner(windows), pipeline.stream_decoder()
    out, written, decoding = np.empty(windows.n_samples, np.float32), 0, 0.0

    def write(wav: np.ndarray) -> None:
        nonlocal written
        wav = wav[: windows.n_samples - written]
        out[written : written + wav.size] = wav
        written += wav.size
        report("decode", written, windows.n_samples)

    pending: deque[Future] = deque()
    with ThreadPoolExecutor(max_workers=max(1, concurrent), thread_name_prefix="auk-window") as pool:
        try:
            for index in range(len(windows.windows)):
                while len(pending) < concurrent and index + len(pending) < len(windows.windows):
                    pending.append(pool.submit(solver.solve, index + len(pending)))
                latents = pending.popleft().result()
                if should_stop is not None and should_stop():
                    raise Cancelled("Stopped before the result was ready; nothing was produced.")
                tick = time.perf_counter()
                write(decoder.push(joiner.add(latents)))
                decoding += time.perf_counter() - tick
        except BaseException as exc:
            solver.stopped.set()
            for future in pending:
                future.cancel()
            raise solver.error or exc
    tick = time.perf_counter()
    write(decoder.end())
    return out, decoding + time.perf_counter() - tick


def as_edit_result(made: WholeFileResult, source: MonoClip, *, device: str, dtype: str,
                   quantize: str = "none") -> EditResult:
    """A whole-file edit as every other edit's result, for the check and the manifest: a window's
    record, made the recording's, with the windows (how many, how long, their crossfade)."""
    rate, windows, hop = made.sample_rate, made.windows, made.plan.checkpoint.hop
    seconds = made.wav.size / rate
    record = made.plan.record(seconds=seconds, ref_latent_frames=windows.frames, cache_hit=False,
                              timings=made.timings, device=device, dtype=dtype)
    record = replace(record, quantize=quantize, gen_frames=windows.frames, ref_frames=made.wav.size // hop,
                     fit_to_source=True, source_seconds=source.seconds, source_samples_24k=made.wav.size,
                     source_sample_rate=source.sample_rate, source_channels=source.channels,
                     steps=made.steps, windows={"count": len(windows.windows),
                              "seconds": (windows.windows[0][1] - windows.windows[0][0]) / rate,
                              "crossfade_seconds": windows.crossfade * hop / rate})
    return EditResult(wav=made.wav, sample_rate=rate, record=record, source=made.source)
