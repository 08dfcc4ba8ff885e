"""The app's event functions, bound to one Studio: thin parse → Studio → render steps.

The public ones are the API (``edit_audio``, ``text_to_audio``, ``inspect_audio``,
``model_info``): their parameter names and defaults are what ``gradio_client`` shows, and every
parameter has one. Each model endpoint has a validator (``check_edit``, ``check_audex``) that
Gradio runs before the request enters the queue, field by field, with the request types' own
checks; the handler then builds the request once and the pipeline trusts it.
AppErrors become ``gr.Error`` with their sentence; anything else is logged and reported with its
type, never as Gradio's generic error text.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import re
import time
from pathlib import Path
from typing import Any

import anyio
import gradio as gr
from gradio.route_utils import get_root_url
from gradio.utils import get_upload_folder

from auk_app import instructions, lengths, pace, upload_check
from auk_app.audio_io import write_companions
from auk_app.catalog import ModelEntry, capability_warnings
from auk_app.config import Limits
from auk_app.errors import AppError, Cancelled
from auk_app.job import EditJob, edit_problems, suggestion
from auk_app.knobs import AUDEX, EDIT, MAX_CANDIDATES, SUGGEST, Knobs, audex_request
from auk_app.recognise import language_of, recognise
from auk_app.results import EditOrder
from auk_app.service import Studio
from auk_app.validate import shown
from auk_app.ui import outputs, rvq_table, zerogpu
from auk_app.ui import text as ui_text
from auk_app.ui.gradio_queue import Arrival
from auk_app.ui.runs import Admission, Busy, Runs, client_gone
from auk_app.ui.progress_line import EditProgress
from auk_app.ui.zerogpu import gpu

log = logging.getLogger(__name__)
MAX_REFUSALS_KEPT = 1000  # page sessions whose last refused upload Generate can still name
STOP_WAIT_SECONDS = 120.0  # a step of the released model on a slow GPU, with its decode, ends well within this

# ----------------------------------------------------------------------------- value checks


def inputs_of(handler) -> list[str]:
    """A handler's input names in order: its parameters less Gradio's progress and request.
    The one list of an endpoint's inputs; ui/app.py wires components by these names."""
    return [name for name in inspect.signature(handler).parameters if name not in ("progress", "request")]


def taking(knobs: Knobs, fn, limits: Limits | None = None, **extra):
    """``fn(values, progress, request)`` as an event function with one parameter per knob in ``knobs``
    (then ``extra``'s), defaulting as the schema says: the API's parameters as gradio_client shows
    them, and how Gradio passes the page's inputs, its progress bar and the request. With ``limits``
    its docstring (the API's description) ends with each knob's help under those limits."""
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = inspect.Signature(
        [inspect.Parameter(k.name, keyword, default=k.default) for k in knobs]
        + [inspect.Parameter(name, keyword, default=default) for name, default in extra.items()]
        + [inspect.Parameter("progress", keyword, default=gr.Progress()),
           inspect.Parameter("request", keyword, default=None, annotation=gr.Request)])

    def event(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        return fn(values, values.pop("progress"), values.pop("request"))

    event.__signature__ = signature
    event.__annotations__ = {"request": gr.Request}  # Gradio finds the request by this type hint
    event.__name__, event.__qualname__, event.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    if limits is not None:
        event.__doc__ = inspect.cleandoc(fn.__doc__) + "\n\nParameters:\n" + "\n".join(
            f"    {k.name}: {k.describe(limits)}" for k in knobs)
    return event


def _named(handler, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The values a validator or budget function was called with, named by the handler's inputs."""
    bound = inspect.signature(handler).bind_partial(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def raw_problems(knobs: Knobs, values: dict[str, Any], limits: Limits) -> dict[str, str]:
    """The sentence for each of a call's values, as its client sent them, that its knob refuses; the
    clip, which a component reads as a file, must arrive as one."""
    problems = knobs.problems({k: v for k, v in values.items() if k != "audio"}, limits)
    clip = values.get("audio")
    if clip is not None and not (isinstance(clip, dict) and isinstance(clip.get("path") or clip.get("url"), str)):
        problems["audio"] = ("audio is a file: send it as gradio_client's handle_file(path) does ({\"path\": …, "
                             "\"meta\": {\"_type\": \"gradio.FileData\"}}), or null to go without a clip; got "
                             f"{shown(clip)}.")
    return problems


def _verdicts(names: list[str], problems: dict[str, str]) -> list[dict]:
    return [gr.validate(name not in problems, problems.get(name, "")) for name in names]


def _raise_if_stopped(stop) -> None:
    """A run stopped after its last step still delivers nothing: no files are written."""
    if stop.is_set():
        raise Cancelled("Stopped before the result was ready; nothing was produced.")


# An absolute path: a slash-separated run of at least two parts, not inside a URL.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])(?:/[^\s/'\"`,;()]+)+/([^\s/'\"`,;()]+)")


def without_paths(message: str) -> str:
    """``message`` with absolute paths cut to their last part: clients never see where the server keeps
    weights or data."""
    return _ABSOLUTE_PATH.sub(r"\1", message)


def _gr_error(exc: Exception) -> gr.Error:
    """The user's sentence for an AppError; a logged failure message for anything else."""
    if isinstance(exc, AppError):
        return gr.Error(without_paths(str(exc)), print_exception=False)
    log.exception("request failed")
    return gr.Error(
        f"The run failed unexpectedly ({type(exc).__name__}: {without_paths(str(exc))[:200]}). "
        "Nothing was produced; the server log has the details."
    )


def _output_root() -> Path:
    """Inside Gradio's temp dir (GRADIO_TEMP_DIR when set), never the working directory."""
    return Path(get_upload_folder()) / "auk_studio"


# ----------------------------------------------------------------------------- progress


def _auk_progress(progress: gr.Progress, candidates: int = 1):
    """The pipeline's ``progress(phase, done, total)`` as one Gradio progress line in a person's units,
    steps of a clip or windows of a whole recording with the time left (:mod:`auk_app.ui.progress_line`);
    with several candidates, their steps in all (the Studio sums them)."""
    return EditProgress(progress, candidates)


def _audex_progress(progress: gr.Progress):
    """The pipeline's ``progress(phase, done, total)`` (the phase is the run's label) as Gradio token
    progress, forwarded about a hundred times per run rather than for each of up to 4001 tokens."""

    def report(phase: str, done: int, total: int) -> None:
        if done == total or done % max(1, total // 100) == 0:
            progress((done, total), desc=f"{phase}: codec token {done} of at most {total}", unit="tokens")

    return report


# ----------------------------------------------------------------------------- edit checks and candidates


def _edit_outputs(files: list[outputs.EditFiles], state: dict, figure) -> tuple:
    """/edit_audio's returns, shared by the endpoint and the page: the best's audio, ``figure``, its
    manifest, the session state, its check line, the table of all candidates and their WAVs."""
    best = files[0]
    return (str(best.audio), figure, best.manifest, state, best.manifest["check"]["display"],
            candidate_table(files), [str(f.audio) for f in files])


def candidate_table(files: list[outputs.EditFiles]) -> list[dict[str, Any]]:
    """/edit_audio's table of candidates, best first: rank, seed, the check and the WAV's name."""
    return [{"rank": f.manifest["candidate"]["rank"], "seed": f.manifest["seed"], "check": f.manifest["check"],
             "file": f.audio.name} for f in files]


def _candidate_line(k: int, manifest: dict[str, Any]) -> str:
    """A candidate's label: its place, seed and check line."""
    return f"#{k + 1} · seed {manifest['seed']} · {manifest['check']['display']}"


def _chosen(state: dict | None, choice) -> dict | None:
    found = (state or {}).get("candidates") or []
    return found[choice] if isinstance(choice, int) and 0 <= choice < len(found) else None


def _builder_record(built: dict | None, instruction) -> dict[str, Any] | None:
    """What the manifest says of the builder: its task, and the speaker's pace the duration followed,
    when the instruction is the one it wrote."""
    if not built or built.get("instruction") != instruction or not built.get("task"):
        return None
    return {"task": built["task"], "seconds": built.get("seconds"), "pace": built.get("pace")}


# ----------------------------------------------------------------------------- UI updates


def recipe_knobs(entry: ModelEntry) -> list:
    """The sampling knobs of the page (the schema's "advanced" sliders and grid) that ``entry``'s
    recipe holds: they start at its defaults, and a fixed recipe locks them."""
    recipe = entry.checkpoint.defaults
    return [k for k in EDIT.in_group("advanced") if k.widget in ("slider", "grid") and hasattr(recipe, k.name)]


def knob_updates(entry: ModelEntry) -> list[dict]:
    """The updates of :func:`recipe_knobs` and the note under them, for ``entry``: sliders at its real
    defaults; on a fixed recipe (Flash) locked at its values, the grid shown, a knob it has no value
    for hidden, and the reason in the note."""
    recipe = entry.checkpoint.defaults
    knobs = recipe_knobs(entry)
    updates = [_knob_update(knob, getattr(recipe, knob.name), recipe.fixed) for knob in knobs]
    grid = next(getattr(recipe, knob.name) for knob in knobs if knob.widget == "grid")
    note = ui_text.flash_note(entry.label, grid) if recipe.fixed else ui_text.base_note(entry.label)
    return [*updates, gr.update(value=note, elem_classes=["flash-note" if recipe.fixed else "note"])]


def _knob_update(knob, value, fixed: bool) -> dict:
    if knob.widget == "grid":
        if fixed:
            return gr.update(value=ui_text.grid(value), interactive=False, label=f"{knob.label}: fixed")
        return gr.update(value="", interactive=True, label=knob.label,
                         placeholder="empty: built from the step count and sway, e.g. 0, 0.1, 0.4, 1")
    if value is None:
        return gr.update(visible=False)
    said = "fixed at" if fixed else "default"
    return gr.update(value=value, interactive=not fixed, visible=True, label=f"{knob.label}, {said} {value:g}")


def slider_knobs(entry: ModelEntry, values: dict[str, Any]) -> dict[str, Any]:
    """The page's knobs as /edit_audio's: a slider left at the model's default sends nothing, as an
    empty API knob, and a fixed recipe's locked ones send nothing at all, so the manifest's
    ``requested`` and ``ignored`` name only what the person changed."""
    recipe = entry.checkpoint.defaults
    sent = dict(values)
    for knob in recipe_knobs(entry):
        if recipe.fixed or (knob.widget == "slider" and sent[knob.name] == getattr(recipe, knob.name)):
            sent[knob.name] = None
    return sent


def model_choices(studio: Studio) -> list[tuple[str, str]]:
    """The model list: the default once (as auto), the other checkpoints, then the released variants
    that are not on this machine, marked, so that choosing one says how to get it."""
    default = studio.entry("auto")
    return ([(f"{default.label} · auto", "auto")]
            + [(e.label, e.key) for e in studio.models() if e is not default]
            + [(f"{label} · not downloaded", key) for key, label in studio.not_downloaded.items()])


def task_choices(entry: ModelEntry) -> list[tuple[str, str]]:
    """The builder's task list, each task the model was not trained for (or only in part) marked, so a
    person sees before writing an instruction which tasks this model can do."""
    tasks = entry.checkpoint.capabilities.tasks
    marks = {"all": "", "some": f" (only partly in {entry.label})", "none": f" (not in {entry.label})"}
    return [(t.label + marks[instructions.coverage(tasks, t.key)], t.key) for t in instructions.TASKS]


def field_updates(task_key: str) -> list[dict]:
    """The builder's five generic inputs (instructions.FIELD_NAMES, in order), relabelled or hidden for ``task_key``."""
    chosen = instructions.task(task_key)
    updates = []
    for name in instructions.FIELD_NAMES:
        slot = chosen.slots.get(name)
        if slot is None:
            updates.append(gr.update(visible=False, value=None if name in instructions.CHOICE_FIELDS else ""))
        elif slot.choices:
            updates.append(gr.update(visible=True, label=slot.label, choices=list(slot.choices), value=slot.default))
        else:
            updates.append(gr.update(visible=True, label=slot.label, value="", placeholder=slot.placeholder))
    return updates


def _companion_buttons(wav: str | None) -> tuple[dict, dict]:
    """The FLAC and MP3 download buttons for a result's WAV: the same PCM16 samples written beside it
    (audio_io.write_companions); a format libsndfile cannot write here, or no WAV, hides its button."""
    try:
        files = {} if wav is None else write_companions(wav)
    except Exception as exc:
        raise _gr_error(exc) from exc
    return tuple(gr.update(value=str(files[ext]) if ext in files else None, visible=ext in files)
                 for ext in ("flac", "mp3"))


# ----------------------------------------------------------------------------- handlers


class Handlers:
    """Every event function of the app over one Studio (and its limits, and the stop flags)."""

    def __init__(self, studio: Studio):
        self.studio = studio
        self.limits = studio.config.limits
        self.audex_demo = studio.audex_demo
        self.audex_seconds = studio.audex_seconds
        self._runs = Runs()
        # The public endpoints take the schema's knobs; the page's Generate also its builder's state.
        self._api_edit = taking(EDIT, self._edit_audio, self.limits)
        self._page_edit = taking(EDIT, self._edit_from_ui, built=None)
        self._api_audex = taking(AUDEX, self._text_to_audio, self.limits)
        self._api_suggest = taking(SUGGEST, self._suggest_instruction, self.limits)
        # The page's Generate (a private event) waits for the model like /edit_audio. A request of N
        # candidates holds N places (its ``candidates`` input, at the same place in both edits').
        runs_at = inputs_of(self._api_edit).index("candidates")
        self.admission = Admission(api_names=("edit_audio", "_edit_from_ui", "text_to_audio", "suggest_instruction",
                                              "suggest_on_page"),
                                   weights={"edit_audio": runs_at, "_edit_from_ui": runs_at})  # ui/app.py binds it
        # Each endpoint's inputs, and the knobs that check a call's values as its client sent them.
        self._inputs = {name: (handler, functools.partial(raw_problems, knobs)) for name, handler, knobs in (
            ("edit_audio", self._api_edit, EDIT), ("_edit_from_ui", self._page_edit, EDIT),
            ("text_to_audio", self._api_audex, AUDEX), ("suggest_instruction", self._api_suggest, SUGGEST),
            ("suggest_on_page", self.suggest_on_page, SUGGEST), ("inspect_audio", self.inspect_audio, SUGGEST))}
        # On a ZeroGPU Space the GPU is attached per call, for a budget computed from the request.
        self.edit_audio = self._runs.stoppable(gpu(self.edit_gpu_seconds)(self._api_edit))
        self.edit_from_ui = self._runs.stoppable(gpu(self.edit_gpu_seconds)(self._page_edit))
        self.text_to_audio = self._runs.stoppable(gpu(self.audex_gpu_seconds)(self._api_audex))
        self.suggest_instruction = self._runs.stoppable(gpu(lambda *args, **kwargs: 60)(self._api_suggest))
        # Validators: Gradio runs them inside the client's join request, before the request is queued.
        self.check_edit = self._validator(self._api_edit, self._edit_problems)
        self.check_edit_from_ui = self._validator(self._page_edit, self._page_edit_problems)
        # The sentence of each page session's last refused upload, which the player no longer holds.
        self._refused: dict[str | None, str] = {}
        self.check_audex = self._validator(self._api_audex, self._audex_problems)
        self.check_suggest = self._validator(self._api_suggest, self._suggest_problems)
        self.check_suggest_on_page = self._validator(self.suggest_on_page, self._suggest_problems)

    @contextlib.contextmanager
    def gate(self, arrival: Arrival):
        """What a call must pass before Gradio queues it (ui/app.py puts this in front of the queue):
        each value as its client sent it, by its knob's own check (a list is no instruction, a
        string no seed, a number no clip: a component would have read them as something else),
        then, at a model endpoint, places for the runs it asks for, held until it is queued."""
        handler, problems_of = self._inputs.get(arrival.api_name, (None, None))
        if handler is None:
            yield {}
            return
        names = inputs_of(handler)
        refused = problems_of(dict(zip(names, arrival.data)), self.limits)
        if refused or arrival.api_name not in self.admission.api_names:
            yield {names.index(name): message for name, message in refused.items()}
            return
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(self.admission.reserve(self.admission.runs_of(arrival.api_name, arrival.data)))
            except Busy as exc:
                yield {0: str(exc)}
                return
            yield {}

    def gated(self, api_name: str, handler, problems_of) -> None:
        """Check ``api_name``'s calls at the gate too: ``problems_of(values as sent, limits)`` by input
        name, ``handler`` naming the inputs (an endpoint another module wires, e.g. the Batch tab's)."""
        self._inputs[api_name] = (handler, problems_of)

    def _validator(self, handler, problems_of):
        """A validator for ``handler``: ``problems_of(values)`` in a worker thread, and then whether
        the client is still there.

        It takes ``handler``'s signature so that Gradio passes it the join's gr.Request: a client that
        gave up while the upload check ran (gradio_client's join times out after 5 s) never opens its
        stream, so nothing else would stop its event from running for nobody; here it is not queued.
        """
        names = inputs_of(handler)

        @functools.wraps(handler)
        async def validate(*args, **kwargs):
            values = _named(handler, args, kwargs)
            problems = await anyio.to_thread.run_sync(problems_of, values)
            if not problems and await client_gone(values.get("request")):
                problems = {names[0]: "The client went away during the checks, so the request was not queued."}
            return _verdicts(names, problems)

        return validate

    # ------------------------------------------------------------------ ZeroGPU budgets (same arguments as the handlers)

    def edit_gpu_seconds(self, *args, **kwargs) -> int:
        """One edit: loading plus a per-step cost growing with the target length and the candidates."""
        return zerogpu.edit_seconds(self.studio, _named(self._page_edit, args, kwargs))  # /edit_audio's come first

    def audex_gpu_seconds(self, *args, **kwargs) -> int:
        """Text-to-audio: about 10 ms per guided token, twice with the comparison run."""
        return zerogpu.audex_seconds(self.studio, _named(self._api_audex, args, kwargs))

    # ------------------------------------------------------------------ AuK

    def _page_edit_problems(self, values: dict[str, Any]) -> dict[str, str]:
        """The edit's problems for the page's Generate; with no clip and no duration after an upload
        was refused (and cleared from the player), the refused file is named, not the duration."""
        problems = self._edit_problems(values)
        refusal = self._refused.get(getattr(values.get("request"), "session_hash", None))
        if values.get("audio") is None and "seconds" in problems and refusal:
            problems.pop("seconds")
            problems["audio"] = (f"{refusal} There is no source clip to edit: upload another one, or set the "
                                 "duration to generate without one.")
        return problems

    def _edit_problems(self, values: dict[str, Any]) -> dict[str, str]:
        """Every input's problem (every knob, the model's name, the upload check), by input name."""
        return edit_problems(self.studio, values)

    def _edit_audio(self, values, progress, request):
        """Edit a clip, or generate speech/audio from the instruction alone, with AuK.

        Returns the 24 kHz WAV (PCM16), the before/after PNG, the manifest, the edit check's line
        ("asked −6 dB · got −5.9 dB ✓", or why it cannot be measured; the manifest's ``check`` holds
        task, asked, got, unit, tolerance and pass), the table of candidates best first (rank, seed,
        check, file) and their WAVs in that order; with several candidates the best by the check is
        the result.
        """
        files, state = self._edit(values, progress, request)
        return _edit_outputs(files, state, self._draw(files[0].figure))

    def _edit_from_ui(self, values, progress, request):
        """The Generate button: the edit with the sliders read by :func:`slider_knobs` (a private event,
        so the named endpoint keeps "empty means the checkpoint's default"). It returns the audio and
        the manifest as soon as they are written, the figure cleared; the event chained on it
        (:meth:`finish_edit`) draws the figure, which can take longer than the edit."""
        built = values.pop("built")
        files, state = self._edit(slider_knobs(self.studio.entry(values["model"]), values), progress, request,
                                  built=built)
        best = files[0]
        # In the session's state, not in this object: on ZeroGPU this runs in a worker process. Every
        # candidate's figure waits there until it is drawn (the best's by finish_edit, another's when picked).
        # "source": the clip edited, which the history's A/B plays against the result.
        state = {**state, "figure": best.figure, "audio": str(best.audio), "source": values["audio"],
                 "candidates": [{"audio": str(f.audio), "manifest": f.manifest, "file": str(f.manifest_file),
                                 "figure": f.figure if f is not best else None} for f in files]}
        return _edit_outputs(files, state, None)

    def finish_edit(self, state):
        """After the page's edit has shown its audio: the figure, and the same samples as FLAC and MP3
        beside the WAV (MP3 where libsndfile encodes it; its button stays hidden otherwise), which
        for a 10-minute region take seconds. The state is not an output, so a slow drawing cannot
        overwrite a newer edit's state; it lets go of the clips in place (a 10-minute region's are
        100 MB), which a state Gradio hands over by reference frees."""
        pending = (state or {}).get("figure")
        if pending is None:
            return gr.skip(), gr.skip(), gr.skip()
        figure = self._draw(pending)
        state["figure"] = None
        if state.get("candidates"):
            state["candidates"][0]["png"] = figure  # the best's, shown again when it is picked back
        return figure, *_companion_buttons(state["audio"])

    def show_candidates(self, state):
        """After the page's edit: with several candidates, each in a player labelled with its seed and
        check, best first, and the list to pick one from; with one, the section stays hidden."""
        found = (state or {}).get("candidates") or []
        lines = [_candidate_line(k, c["manifest"]) for k, c in enumerate(found)]
        players = [gr.update(value=c["audio"], visible=True, label=line) for c, line in zip(found, lines)]
        players += [gr.update(value=None, visible=False)] * (MAX_CANDIDATES - len(found))
        many = len(found) > 1
        return (gr.update(visible=many), gr.update(choices=[(f"#{k + 1}", k) for k in range(len(found))],
                                                   value=0 if many else None), *players)

    def pick_candidate(self, state, choice):
        """"Make it the result": the chosen candidate's audio, manifest, check line, seed, downloads and
        figure (drawn now if it was not yet) take the result's place."""
        chosen = _chosen(state, choice)
        if chosen is None:
            return (gr.skip(),) * 8
        if chosen.get("png") is None and chosen.get("figure") is not None:
            chosen["png"], chosen["figure"] = self._draw(chosen["figure"]), None
        state.update(audio=chosen["audio"], file=chosen["file"], seed=chosen["manifest"]["seed"])
        manifest = chosen["manifest"]
        return (chosen["audio"], manifest, manifest["check"]["display"], manifest["seed"],
                gr.update(value=chosen["file"], visible=True), chosen.get("png"), *_companion_buttons(chosen["audio"]))

    def use_candidate(self, state, choice):
        """"Use it as the next source": the chosen candidate into the source player, as "use the result"."""
        chosen = _chosen(state, choice)
        return self.use_result(None if chosen is None else chosen["audio"])

    @staticmethod
    def _draw(pending: outputs.PendingFigure) -> str:
        try:
            return str(pending.draw())
        except Exception as exc:
            raise _gr_error(exc) from exc

    def _edit(self, values, progress, request, built=None) -> tuple[list[outputs.EditFiles], dict]:
        """The edit's candidates (one unless asked for more) to WAVs and manifests, best first (the
        figures left to draw), the warnings shown as they are known, and the state after_edit reads.
        ``built`` is the builder's state: the manifest records its task and the pace its duration
        followed when the instruction is the one it built."""
        stop = self._runs.flag(request)
        try:
            order = EditOrder.from_knobs(values, self.limits, builder=_builder_record(built, values["instruction"]))
            made, entry = EditJob(self.studio, order, progress=_auk_progress(progress, order.candidates),
                                  should_stop=stop.is_set, warn=gr.Warning).run()
            _raise_if_stopped(stop)
            files = outputs.render_edits(made, entry.key, root=_output_root())
        except Exception as exc:
            raise _gr_error(exc) from exc
        return files, {"seed": min(f.manifest["seed"] for f in files), "file": str(files[0].manifest_file)}

    def _suggest_problems(self, values: dict[str, Any]) -> dict[str, str]:
        """The request's words, the model's name and the clip's upload check, by input name."""
        problems = SUGGEST.problems(values, self.limits)
        try:
            self.studio.entry(values["model"])
        except AppError as exc:
            problems["model"] = str(exc)
        if values["audio"] is not None and "audio" not in problems:
            findings = upload_check.check_upload(values["audio"], self.limits.for_whole(), self.studio.uploads.read)
            if findings["verdict"] == "rejected":
                problems["audio"] = findings["message"]
        return problems

    def _suggest_instruction(self, values, progress, request):
        """Rewrite a request in your own words into the cookbook instruction the model was trained on,
        to look at (and change) before an edit: the released model's thinker writes it (hearing the
        clip first for a word edit), the demo's recogniser where there is no thinker. Returns the
        request as asked, the instruction to use (your words when no rewrite was sure), who wrote it
        and, when your words were kept, why."""
        try:
            return suggestion(self.studio, values["model"], values["instruction"], values["audio"]).to_manifest()
        except Exception as exc:
            raise _gr_error(exc) from exc

    def suggest_on_page(self, model, instruction, audio):
        """The page's "Suggest the model's wording": the rewrite into the instruction box (and, for new
        words, their duration into the duration box), and a line saying what it was rewritten from (or
        why your words were kept)."""
        try:
            rewrite = suggestion(self.studio, model, EDIT["instruction"].check(instruction, self.limits), audio)
        except AppError as exc:
            return gr.skip(), gr.skip(), f"⚠ {exc}"
        if not rewrite.rewritten:
            return gr.skip(), gr.skip(), f"⚠ {rewrite.warning}"
        seconds = gr.skip() if rewrite.seconds is None else rewrite.seconds
        return rewrite.instruction, seconds, ui_text.rewritten_note(rewrite)

    # ------------------------------------------------------------------ Audex

    def _audex_problems(self, values: dict[str, Any]) -> dict[str, str]:
        """Every knob's problem, by input name."""
        return AUDEX.problems(values, self.limits)

    def _text_to_audio(self, values, progress, request):
        """Generate a sound from a caption with Audex (16 kHz).

        Returns the WAV (None when nothing decodable came out), the figure (spectrogram and token
        stream), the RVQ-phase validity report and the manifest; with compare_unmasked the unmasked
        run's report is the manifest's "unmasked" and its token stream is in the figure.
        """
        stop = self._runs.flag(request)
        try:
            ask = audex_request(values, self.limits, seconds=self.audex_seconds)
            for caution in self.studio.caption_warnings(ask.caption):  # before the run, as the edit's
                gr.Warning(caution)
            made = self.studio.text_to_audio(ask, progress=_audex_progress(progress), should_stop=stop.is_set)
            _raise_if_stopped(stop)
            files = outputs.render_audex(made, randomized_seed=values["randomize_seed"], root=_output_root())
        except Exception as exc:
            raise _gr_error(exc) from exc
        report = made.result.report
        table = rvq_table.report_table(report, made.unmasked.report if made.unmasked else None)
        audio = None if files.audio is None else str(files.audio)
        state = {"seed": made.result.seed, "file": str(files.manifest_file), "table": table, "audio": audio}
        return audio, str(files.figure), report, files.manifest, state

    # ------------------------------------------------------------------ cheap public helpers

    def inspect_audio(self, audio=None):
        """The upload check's findings for a clip, without running a model: rate, channels, length, levels, verdict.

        Parameters:
            audio: The clip to check (any format soundfile or librosa reads), under the limits of the longest
                edit (a whole recording's), and what the default model can edit it as.
        """
        return self._upload_findings(audio, self.limits.for_whole(), "auto")

    def model_info(self):
        """Which models exist, which is loaded, on which device and dtype, and whether the demo is in use."""
        return self.studio.info()

    # ------------------------------------------------------------------ private UI plumbing

    def on_model_change(self, model):
        """The knobs and the builder's task marks of the chosen model; a typed name that is no model is
        refused at once and undone."""
        try:
            entry, name = self.studio.entry(model), gr.skip()
        except AppError as exc:
            gr.Warning(str(exc))
            entry, name = self.studio.entry("auto"), gr.update(value="auto")
        return name, *knob_updates(entry), gr.update(choices=task_choices(entry))

    def capability_note(self, model, instruction):
        """Under the instruction, before anything runs: what in it the chosen model was not trained for."""
        if not isinstance(instruction, str) or not instruction.strip():
            return ""
        try:
            entry = self.studio.entry(model)
        except AppError:  # an unknown model name: on_model_change says so
            return ""
        cautions = capability_warnings(entry, recognise(instruction), language_of(instruction), self.studio.released())
        return "\n\n".join(f"⚠ {caution}" for caution in cautions)

    def on_audio_change(self, audio, start=None, end=None, model="auto", request: gr.Request = None):
        """The upload's verdict (under a region's limit when one is set: ``start``, ``end``; a whole
        recording's otherwise, with what ``model``'s window lets it be edited as), the length and the
        voiced seconds the builder times new words from (the region's when one is set, else the clip's),
        and the player: a refused clip is cleared from it, so nobody runs an edit that cannot start,
        and its refusal is kept for Generate to name."""
        limits = self.limits.reading(end)
        findings = None if audio is None else self._upload_findings(audio, limits, None if end else model)
        usable = findings is not None and findings["verdict"] != "rejected"
        self._remember_refusal(request, None if usable or findings is None else
                               f"The upload {Path(audio).name} was refused: {findings['message']}")
        region = (start or 0.0, end) if usable and end is not None and end > (start or 0.0) else None
        length = None if not usable else findings["duration_s"] if region is None else region[1] - region[0]
        voiced = self._voiced_seconds(audio, limits, region) if usable else None
        return (ui_text.upload_verdict(findings), length, voiced,
                gr.skip() if usable or audio is None else gr.update(value=None))

    def _remember_refusal(self, request: gr.Request | None, refusal: str | None) -> None:
        """Keep (or, for a usable clip or an emptied player, forget) a session's refused upload; the
        oldest sessions' go first past MAX_REFUSALS_KEPT."""
        session = getattr(request, "session_hash", None)
        self._refused.pop(session, None)
        if refusal is not None and session is not None:
            self._refused[session] = refusal
            while len(self._refused) > MAX_REFUSALS_KEPT:
                self._refused.pop(next(iter(self._refused)))

    def _upload_findings(self, audio, limits: Limits, model: str | None) -> dict[str, Any]:
        """The upload check of ``audio`` read under ``limits``; for a whole clip (a ``model`` named), its
        message ends with what a clip of its length can be edited as on that model (else the default)."""
        findings = upload_check.check_upload(audio, limits, self.studio.uploads.read)
        if model is not None and findings["verdict"] != "rejected":
            try:
                entry = self.studio.entry(model)
            except AppError:
                entry = self.studio.entry("auto")
            if story := lengths.uses(findings["duration_s"], entry.window(self.limits), self.limits):
                findings["message"] += " " + story
        return findings

    def _voiced_seconds(self, audio, limits: Limits, region: tuple[float, float] | None) -> float:
        """Seconds of speech in an upload (or its region), pauses left out: the builder times new words
        at the speaker's pace from it."""
        clip = self.studio.uploads.read(audio, limits)  # decoded by the upload check just now
        start, end = (0, clip.mono.size) if region is None else (round(r * clip.sample_rate) for r in region)
        return pace.voiced_seconds(clip.mono[start:end], clip.sample_rate)

    def use_result(self, path):
        """"Use the result as the source": the result into the player, and a line saying it happened."""
        if not path:
            return gr.skip(), "There is no result yet to use as the source."
        return path, f"The result ({Path(path).name}) is now the source clip."

    def preview(self, task_key, mode, text, original, option, amount, source_seconds, source_voiced=None,
                language=instructions.EN):
        fields = {"mode": mode, "text": text, "original": original, "option": option, "amount": amount}
        built = instructions.build(task_key, {k: v or "" for k, v in fields.items()},
                                   source_seconds=source_seconds, language=language or instructions.EN,
                                   limits=self.limits, voiced_seconds=source_voiced)
        # The task rides along: the manifest records it, and the speaker's pace the duration follows.
        return ui_text.builder_preview(built), {
            "instruction": built.instruction, "seconds": built.duration.seconds, "task": task_key,
            "pace": None if built.pace is None else built.pace.to_manifest()}

    @staticmethod
    def apply_built(built):
        return built["instruction"], built["seconds"]

    def after_edit(self, state):
        return state["seed"], gr.update(value=state["file"], visible=True), self.status()

    def after_audex(self, state):
        """The seed used, the manifest, the FLAC/MP3 of the WAV (if one was decoded), the report, the status."""
        return (state["seed"], gr.update(value=state["file"], visible=True), *_companion_buttons(state["audio"]),
                state["table"], self.status())

    def stop(self, request: gr.Request):
        """Stop this session's run; the line beside the button says what that does, and when."""
        self._runs.stop(request)
        return ui_text.stopped_note(time.strftime("%H:%M:%S"))

    def stopped(self, request: gr.Request):
        """After Stop: once the run has ended at its next step, the line says that it stopped; where
        nothing was running, the line stays as Stop left it."""
        if not self._runs.stopped(request, STOP_WAIT_SECONDS):
            return gr.skip()
        return ui_text.stopped_done(time.strftime("%H:%M:%S"))

    def status(self):
        return ui_text.status_line(self.studio.info())

    def api_page(self, request: gr.Request):
        """The API tab with this server's address as the browser reached it (a proxy's too), not a guess."""
        raw = getattr(request, "request", None)
        if raw is None:
            return ui_text.api_page(self.studio.info()["available_models"], self.limits)
        path = raw.url.path  # this event's route, under the app's own root path when it is mounted
        route = path[path.find("/gradio_api"):] if "/gradio_api" in path else path
        return ui_text.api_page(self.studio.info()["available_models"], self.limits,
                                get_root_url(raw, route, None) + "/")
