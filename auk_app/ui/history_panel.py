"""The history panel under the tabs: this browser's results, kept across a reload.

:func:`build` lays it out; :func:`wire` adds an entry (:mod:`auk_app.ui.history`) for each edit and
text-to-audio run the page finishes, draws the list (:mod:`auk_app.ui.history_view`) when the page
loads and after each change, and answers its clicks. A click on an entry restores its settings
and seed into its tab, ready to run again or to change (an edit's model with that model's knobs,
as choosing it would, and its source clip while that is kept); "Use as the source" loads its result
into the edit tab's player, from any entry, so a chain of edits can branch; "Download all" zips the
session's WAVs and manifests. The list lives in Gradio's BrowserState (the browser's
localStorage); the entries hold settings and file paths, not audio.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder

from auk_app.errors import AppError
from auk_app.knobs import AUDEX, EDIT
from auk_app.ui import history, history_view, outputs
from auk_app.ui.handlers import Handlers, knob_updates, recipe_knobs, task_choices

STORAGE_KEY = "auk-studio-history"  # the same key across restarts: a reload finds the list it left
PRIVATE = {"queue": False, "api_visibility": "private"}
_NOT_KNOBS = ("audio", "model")  # an edit's knobs the restore sets apart from the rest


def _root() -> Path:
    """Gradio's temp folder, where uploads and results live (and nothing else): files outside it are never used."""
    return Path(get_upload_folder())


def build() -> SimpleNamespace:
    """The panel: a note, the list, Download all and its zip, and the list's BrowserState."""
    p = SimpleNamespace()
    with gr.Accordion("History: this browser's results", open=True, elem_id="history"):
        p.note = gr.Markdown(elem_id="history-note", elem_classes=["note"])
        p.html = gr.HTML(history_view.panel_html([], _root()), js_on_load=history_view.SCRIPT, elem_id="history-panel")
        p.download = gr.Button("Download all: a zip of the WAVs and manifests", size="sm", elem_id="history-download")
        p.zip = gr.File(label="This session's results", visible=False, interactive=False, elem_id="history-zip")
    p.state = gr.BrowserState([], storage_key=STORAGE_KEY)
    return p


class Events:
    """The panel's event functions over the app's handlers and the tabs' components."""

    def __init__(self, handlers: Handlers, edit: SimpleNamespace, audex: SimpleNamespace, tabs: gr.Tabs,
                 panel: SimpleNamespace):
        self.h, self.e, self.a, self.tabs, self.p = handlers, edit, audex, tabs, panel

    def outputs(self) -> list:
        """Every component a click may change."""
        e = self.e
        return [self.tabs, self.p.note, e.audio, e.use_note, e.model, e.knob_note, e.task,
                *(getattr(e, k.name) for k in EDIT if k.name not in _NOT_KNOBS),
                *(getattr(self.a, k.name) for k in AUDEX)]

    @staticmethod
    def show(value):
        return history_view.panel_html(history.entries(value), _root())

    def add_edit(self, value, state):
        """After the page's edit: its entry, with the clip it edited (the A/B's source)."""
        entry = history.edit_entry(state["candidates"][0]["manifest"], seed=state["seed"], audio=state["audio"],
                                   manifest_file=state["file"], source=state["source"])
        return self._with(history.added(value, entry))

    def add_audex(self, value, state):
        """After the page's text to audio: its entry, from the manifest it wrote."""
        manifest = json.loads(Path(state["file"]).read_text(encoding="utf-8"))
        entry = history.audex_entry(manifest, audio=state["audio"], manifest_file=state["file"])
        return self._with(history.added(value, entry))

    @staticmethod
    def _with(entries: list[dict[str, Any]]):
        return entries, history_view.panel_html(entries, _root())

    def on_click(self, value, event: gr.EventData):
        """An entry's title (restore) or its "Use as the source"."""
        try:
            action, entry = event.action, history.find(value, event.entry)
        except (AttributeError, TypeError):  # an event without the panel's data
            return {}
        if entry is None:
            return {self.p.note: "That entry is no longer in the history."}
        if action == "source":
            return self._use(entry)
        return self._restore_edit(entry) if entry["kind"] == "edit" else self._restore_audex(entry)

    def _use(self, entry: dict[str, Any]) -> dict:
        path = history.kept(entry["audio"], _root())
        if path is None:
            return {self.p.note: "Its files are no longer kept; its settings still restore with a click on it."}
        audio, note = self.h.use_result(str(path))
        return {self.e.audio: audio, self.e.use_note: note, self.p.note: note, self.tabs: gr.Tabs(selected="edit")}

    def _restore_edit(self, entry: dict[str, Any]) -> dict:
        """The edit's model, its knobs (the model's own defaults where the run sent none, as the page's
        sliders left alone do), instruction, seed and source clip."""
        settings, e = entry["settings"], self.e
        try:
            model, name = self.h.studio.entry(settings["model"]), settings["model"]
        except AppError as exc:  # a model this server no longer offers
            gr.Warning(str(exc))
            model, name = self.h.studio.entry("auto"), "auto"
        sampling = recipe_knobs(model)
        *updates, note = knob_updates(model)
        found = {e.model: gr.update(value=name), e.knob_note: note, e.task: gr.update(choices=task_choices(model))}
        for knob, update in zip(sampling, updates):
            sent = settings.get(knob.name)
            found[getattr(e, knob.name)] = update if sent is None or model.checkpoint.defaults.fixed else {
                **update, "value": sent}
        shown = {k.name for k in sampling} | set(_NOT_KNOBS)
        found.update({getattr(e, k.name): gr.update(value=settings.get(k.name)) for k in EDIT if k.name not in shown})
        said = f"Restored: the edit of seed {entry['seed']}. Generate runs it again."
        source = history.kept(entry["source"], _root())
        if source is not None:
            found[e.audio] = str(source)
        elif entry["source"] is None:  # made from the instruction alone
            found[e.audio] = None
        else:
            said += " Its source clip is no longer kept: upload it again to edit it."
        return {**found, self.p.note: said, self.tabs: gr.Tabs(selected="edit")}

    def _restore_audex(self, entry: dict[str, Any]) -> dict:
        settings = entry["settings"]
        found = {getattr(self.a, k.name): gr.update(value=settings.get(k.name)) for k in AUDEX}
        said = f"Restored: the sound of seed {entry['seed']}. Generate sound makes it again."
        return {**found, self.p.note: said, self.tabs: gr.Tabs(selected="audex")}

    @staticmethod
    def download(value):
        """A zip of every kept WAV and manifest of the list, with history.json (kept an hour)."""
        entries = history.entries(value)
        if not entries:
            return gr.update(value=None, visible=False), "There are no results yet to download."
        folder = outputs.new_request_dir(_root() / "auk_studio_history")
        bundle = history.bundle(entries, folder / "auk_studio_history.zip", _root())
        count = f"{len(entries)} result" + ("s" if len(entries) > 1 else "")
        return gr.update(value=str(bundle), visible=True), f"{count} in one zip, below."


def wire(p: SimpleNamespace, events: Events, edit, audex, demo: gr.Blocks, follow: list[dict]) -> None:
    """Entries from the page's edit (``edit``) and text to audio (``audex``), the list drawn at load, and
    the clicks, after which ``follow`` runs (the new source clip's checks)."""
    edit.success(events.add_edit, [p.state, events.e.state], [p.state, p.html], **PRIVATE)
    audex.success(events.add_audex, [p.state, events.a.state], [p.state, p.html], **PRIVATE)
    demo.load(events.show, p.state, p.html, **PRIVATE)
    clicked = p.html.click(events.on_click, p.state, events.outputs(), **PRIVATE)
    for step in follow:
        clicked = clicked.then(**step)
    p.download.click(events.download, p.state, [p.zip, p.note], api_visibility="private")
