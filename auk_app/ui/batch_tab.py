"""The Batch tab and ``/edit_batch``: several clips (or a zip, or a CSV beside them) run as one batch.

The page's Start and the named endpoint are one event over the tab's own inputs (the sampling knobs
are number boxes, so that empty means the model's default, as in the API). Its validator counts
the items and their minutes from the uploads' headers before anything runs and refuses a batch over
:data:`MAX_ITEMS` or :data:`MAX_MINUTES`; the gate in front of the queue checks each raw value and
holds as many places in the model queue as the batch has items (``runs.Admission``), so a batch
waits and counts as the runs it is. The items run through
:class:`auk_app.batch.BatchRun` (side by side, sharing DiT steps), Stop ends them between steps,
and the results come back as a table whose rows play, the report's figures and one zip of everything.
"""

from __future__ import annotations

import functools
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import gradio as gr
from gradio.utils import get_upload_folder

from auk_app.batch import BatchRun, Outcome, Tally, summary_text, write_report
from auk_app.batch.console import clock
from auk_app.batch.intake import count, measure, stage
from auk_app.batch.report import KEY_ERRORS, rows
from auk_app.errors import AppError
from auk_app.knobs import EDIT, Knobs
from auk_app.service import Studio
from auk_app.ui import outputs
from auk_app.ui.handlers import Handlers, _gr_error, _named, _output_root, _verdicts, inputs_of, model_choices, taking
from auk_app.ui.runs import client_gone
from auk_app.validate import check_instruction, shown
from auk_app.ui.widgets import page_widget

MAX_ITEMS = 12  # items of one page batch: each holds a place in the model queue of 16
MAX_MINUTES = 10.0  # minutes of source audio in one page batch
# A batch's knobs: the edit's settings, seed and advanced ones. Its seeds are fixed (a fresh draw per
# item would defeat the report's reproducibility), so the seed group's switch is left out; a region
# belongs to a row of a CSV, not to the whole batch.
KNOBS = Knobs([k for k in EDIT if k.group in ("settings", "seed", "advanced")
               and not (k.group == "seed" and k.widget == "checkbox")])
TABLE = ["id", "status", "task", "instruction", "check", "key score"]


def limits_line() -> str:
    return (f"Up to {MAX_ITEMS} clips and {MAX_MINUTES:g} minutes of audio a batch here, each clip within an edit's "
            "own limits; larger sets run with `python -m auk_app batch` (docs/batch.md).")


def build(studio: Studio) -> SimpleNamespace:
    """The uploads, the instruction and the knobs on the left; Start, Stop and the results on the right."""
    limits = studio.config.limits
    c = SimpleNamespace()
    with gr.Row(equal_height=False, elem_id="batch-layout"):
        with gr.Column(scale=5, elem_id="batch-left"):
            c.files = gr.File(label="Clips, a zip of clips, or a CSV with the clips", file_count="multiple",
                              type="filepath", elem_id="batch-files")
            c.instruction = gr.Textbox(label="Instruction (for every clip, and for CSV rows without one)", lines=2,
                                       elem_id="batch-instruction", placeholder="e.g. Decrease the volume by 6 dB.")
            gr.Markdown(limits_line(), elem_classes=["note"], elem_id="batch-limits")
            c.submission = gr.Checkbox(False, label="Also a 16 kHz mono PCM16 copy of each result (submission/)",
                                       elem_id="batch-submission")
            with gr.Accordion("Knobs (every item's; a CSV row's own columns win)", open=False, elem_id="batch-knobs"):
                for knob in KNOBS:
                    setattr(c, knob.name, _widget(knob, studio, limits))
        with gr.Column(scale=6, elem_id="batch-right"):
            with gr.Row():
                c.start = gr.Button("Start", variant="primary", elem_id="batch-start", scale=3)
                c.stop = gr.Button("Stop", variant="stop", elem_id="batch-stop", scale=1)
            c.status = gr.Markdown(elem_id="batch-status")
            c.zip = gr.File(label="Everything (zip): WAVs, manifests, report", interactive=False, elem_id="batch-zip")
            c.table = gr.Dataframe(headers=TABLE, interactive=False, wrap=True, elem_id="batch-table",
                                   label="Results: select a row to play it")
            c.player = gr.Audio(label="Selected result", type="filepath", interactive=False, elem_id="batch-player")
            c.figures = gr.Gallery(label="Each task's error distribution", columns=2, height=300, object_fit="contain",
                                   elem_id="batch-figures")
            c.report = gr.JSON(label="Report", visible=False)
    c.state = gr.State(None)
    return c


def _widget(knob, studio: Studio, limits):
    """A knob as the tab shows it: a sampling slider as a number box that may stay empty (the model's
    default), the model as the edit tab's list, the rest as their declaration says."""
    if knob.widget == "slider" and knob.default is None:
        return gr.Number(None, label=knob.label, info=knob.describe(limits), elem_id=f"batch-{knob.name}")
    extra = {"choices": model_choices(studio)} if knob.widget == "choice" else {}
    return page_widget(knob, limits, prefix="batch-", **extra)


class BatchHandlers:
    """The tab's event functions over the app's handlers (their Studio, stop flags and queue places)."""

    def __init__(self, h: Handlers):
        self.h, self.studio, self.limits = h, h.studio, h.limits
        own = taking(KNOBS, self._edit_batch, self.limits, files=None, instruction=None, submission=False)
        self.own = own
        self.edit_batch = h._runs.stoppable(own)
        self.check_batch = self._validator(own)
        self.files_at = inputs_of(own).index("files")

    def runs_of(self, data: list[Any]) -> int:
        """The items of a batch as it arrives or waits, from its inputs as the client sent them (file
        records): only Gradio's own uploads are read, as Gradio itself will allow no others."""
        files = data[self.files_at] if self.files_at < len(data) else None
        uploads = Path(get_upload_folder()).resolve()
        paths = [Path(f["path"]).resolve() for f in files if isinstance(f, dict) and isinstance(f.get("path"), str)] \
            if isinstance(files, list) else []
        return count([p for p in paths if p.is_relative_to(uploads)])

    @staticmethod
    def raw_problems(values: dict[str, Any], limits) -> dict[str, str]:
        """Each value as its client sent it, before Gradio reads it: the knobs by their own checks, the
        files as a list of files, the instruction as text (or nothing: a CSV's rows carry theirs)."""
        problems = KNOBS.problems({k: v for k, v in values.items() if k in KNOBS}, limits)
        files = values.get("files")
        if files is not None and not (isinstance(files, list) and all(
                isinstance(f, dict) and isinstance(f.get("path") or f.get("url"), str) for f in files)):
            problems["files"] = ("files is a list of files: send each as gradio_client's handle_file(path) does; got "
                                 f"{shown(files)}.")
        if values.get("instruction") not in (None, ""):
            try:
                check_instruction(values["instruction"], limits)
            except AppError as exc:
                problems["instruction"] = str(exc)
        if not isinstance(values.get("submission", False), bool):
            problems["submission"] = f"submission is true or false; got {shown(values['submission'])}."
        return problems

    def _validator(self, handler):
        """The batch's size and knobs, before the queue: over a limit, a bad knob or a manifest that
        cannot be read is refused in one sentence."""
        names = inputs_of(handler)

        @functools.wraps(handler)
        async def validate(*args, **kwargs):
            values = _named(handler, args, kwargs)
            try:
                size = await anyio.to_thread.run_sync(measure, values["files"] or [], values["instruction"])
            except AppError as exc:
                return _verdicts(names, {"files": str(exc)})
            refusal = _over_limits(size)
            if refusal:
                return _verdicts(names, {"files": refusal})
            problems = self._knob_problems(values)
            if not problems and await client_gone(values.get("request")):
                problems = {"files": "The client went away during the checks, so the batch was not queued."}
            return _verdicts(names, problems)

        return validate

    def _knob_problems(self, values: dict[str, Any]) -> dict[str, str]:
        problems = KNOBS.problems({k.name: values[k.name] for k in KNOBS}, self.limits)
        if "model" not in problems:
            try:
                self.studio.entry(values["model"])
            except AppError as exc:
                problems["model"] = str(exc)
        return problems

    def _edit_batch(self, values, progress, request):
        """Edit several clips as one batch with AuK: uploaded clips with one instruction, a zip of clips, or
        a CSV (or JSONL) manifest beside its clips (one row an item: id, audio, instruction, any knob).
        Returns one zip of everything (each result's 24 kHz WAV and manifest, report.csv, report.md, the
        figures), the report (counts, per-task pass rates and errors, every row), the results table and
        the figures. A bad row fails alone, with its sentence in the report."""
        stop = self.h._runs.flag(request)
        try:
            folder = outputs.new_request_dir(_output_root())
            manifest = stage(values.pop("files") or [], folder / "uploads", values.pop("instruction") or None)
            out = folder / "batch"
            tally = _Progress(progress)
            knobs = {k: v for k, v in values.items() if k in KNOBS and v is not None}
            done = BatchRun(self.studio, manifest, out, defaults=knobs, submission=values["submission"],
                            on_item=tally, should_stop=stop.is_set).run()
            summary = write_report(out, done)
        except Exception as exc:
            raise _gr_error(exc) from exc
        table = rows(done)
        report = {**summary, "text": summary_text(summary), "rows": table}
        return (str(_zipped(out, folder / f"auk_batch_{len(done)}_items.zip")), report, _table(table),
                list(summary["figures"].values()), {"rows": [_playable(o, out) for o in done]})

    def after(self, report):
        """The line under Start once a batch is done: its counts, and the failed rows' count."""
        return summary_text(report).split("\n")[0] if report else ""

    @staticmethod
    def play(state, event: gr.SelectData):
        """A selected row's result in the player (a failed row has none)."""
        found = (state or {}).get("rows") or []
        row = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
        return found[row] if isinstance(row, int) and 0 <= row < len(found) else None


def _over_limits(size) -> str | None:
    if size.items > MAX_ITEMS:
        return (f"This batch has {size.items} items; a batch here takes at most {MAX_ITEMS}. Upload fewer, or run the "
                "set with python -m auk_app batch.")
    if size.seconds > MAX_MINUTES * 60:
        return (f"This batch holds {size.seconds / 60:.1f} minutes of audio; a batch here takes at most "
                f"{MAX_MINUTES:g}. Upload fewer or shorter clips, or run the set with python -m auk_app batch.")
    return None


class _Progress:
    """The batch's progress as Gradio's bar: n of N items, the failures, the time left."""

    def __init__(self, progress: gr.Progress):
        self.progress = progress

    def __call__(self, outcome: Outcome, tally: Tally) -> None:
        self.progress((tally.finished, tally.total), unit="items",
                      desc=f"{tally.finished} of {tally.total} items · {tally.failed} failed · {clock(tally.seconds_left)}")


def _key_score(row: dict[str, Any]) -> str:
    key, name = KEY_ERRORS.get(str(row["task"]), (None, None))
    value = row.get(key) if key else None
    return "" if value is None else f"{name} {value:.3g}"


def _table(table: list[dict[str, Any]]) -> list[list[Any]]:
    return [[r["id"], r["status"], r["task"] or "", r["instruction"] or "", r["check"] or r["problem"] or "",
             _key_score(r)] for r in table]


def _playable(outcome: Outcome, out: Path) -> str | None:
    """The item's WAV where it has one (done, or kept from a run before)."""
    return str(out / f"{outcome.item.id}.wav") if outcome.manifest else None


def _zipped(out: Path, target: Path) -> Path:
    """Everything under ``out`` in one zip, by its paths inside ``out``."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(out.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(out))
    return target


def wire(c: SimpleNamespace, h: Handlers, queue: dict[str, Any]) -> None:
    """Start as /edit_batch (in the edits' queue), its status line, the rows that play, and Stop."""
    b = BatchHandlers(h)
    h.admission.count("edit_batch", b.runs_of)
    h.gated("edit_batch", b.own, b.raw_problems)
    run = c.start.click(b.edit_batch, inputs=[getattr(c, name) for name in inputs_of(b.edit_batch)],
                        outputs=[c.zip, c.report, c.table, c.figures, c.state], validator=b.check_batch,
                        api_name="edit_batch", api_description=b.edit_batch.__doc__, **queue)
    run.success(b.after, c.report, c.status, queue=False, api_visibility="private")
    c.table.select(b.play, c.state, c.player, queue=False, api_visibility="private")
    c.stop.click(h.stop, None, c.status, cancels=[run], queue=False, api_visibility="private")
