"""The Gradio 6 face of AuK Studio: ``build_demo(studio)`` lays out the Blocks and wires the events;
``launch_options()`` gives the launch-time look and limits (Gradio 6 takes theme and css at launch).

Tabs: "Edit & generate (AuK)", "Text to audio (Audex)", "API", "About", "Batch" (:mod:`auk_app.ui.batch_tab`,
which also serves ``/edit_batch``), and under them the history
of this browser's results (:mod:`auk_app.ui.history_panel`). The event functions live
in :mod:`auk_app.ui.handlers`; the generated wording in :mod:`auk_app.ui.text`; the look (theme,
CSS, the order of a tab's sections on a phone) in :mod:`auk_app.ui.style`, the page's few scripts
in :mod:`auk_app.ui.page_js`; what loads behind the page in :mod:`auk_app.ui.warming`.

Public API (named; everything else is ``api_visibility="private"``): ``/edit_audio``,
``/text_to_audio``, ``/inspect_audio`` and ``/model_info``. ``/edit_audio`` is declared on hidden
inputs of its own, where an empty knob means the checkpoint's default; the page's Generate is a
private event over its sliders. At most ``QUEUE_MAX_SIZE`` model runs wait or run (a request's
candidates each count), held by a gate in front of Gradio's queue however many arrive at once
(``Handlers.gate``: each call's raw values, then ``runs.Admission``); no model endpoint can be
reached past it (``api_open=False``). Uploads are held to their disk budget (``outputs.keep_uploads``). ``/edit_audio`` runs up to
``StudioConfig.auk_batch`` edits at once (``concurrency_id="auk"``), so concurrent edits reach the
pipeline together and share DiT steps; ``/text_to_audio`` runs one at a time
(``concurrency_id="gpu"``), and so do edits with ``--offload`` or ``--auk-batch 1``, sharing that one
slot. The cheap ``/model_info`` bypasses the queue (``queue=False``); ``/inspect_audio`` and the
upload's verdict decode uploads, so they share a small queue of their own.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr

from auk_app import instructions
from auk_app.ui import batch_tab, history_panel, outputs, page_js, result_notes, style
from auk_app.ui import text as ui_text
from auk_app.config import Limits
from auk_app.knobs import AUDEX, EDIT, MAX_CANDIDATES
from auk_app.catalog import ModelEntry
from auk_app.service import Studio
from auk_app.ui.handlers import (Handlers, field_updates, inputs_of, knob_updates, model_choices, recipe_knobs,
                                 task_choices)
from auk_app.ui.check_card import manifest_card
from auk_app.ui.gradio_queue import guard_arrivals
from auk_app.ui.warming import Warming
from auk_app.ui.widgets import api_widget, page_widget

GPU_QUEUE = "gpu"  # text to audio: one at a time
AUK_QUEUE = "auk"  # edits: up to StudioConfig.auk_batch at once, sharing DiT steps in the pipeline
INTAKE_QUEUE = "intake"  # /inspect_audio decodes uploads: queued, a few at a time, like the model runs
INTAKE_CONCURRENCY = 2
FIGURE_QUEUE = "figure"  # the page's before/after figures and FLAC/MP3 files, made after the audio is shown
FIGURE_CONCURRENCY = 2
PRIVATE = {"queue": False, "api_visibility": "private"}  # UI plumbing: no queue, no API entry
QUEUE_MAX_SIZE = 16  # model runs waiting or running (a candidate is a run); beyond this a request is refused at once
BACKSTOP_MAX_SIZE = 256  # all queued events: only cheap ones can fill what the model requests leave
# An hour, the longest whole recording: 115 MB as 16 kHz mono PCM16 WAV, less as MP3 or OGG.
MAX_FILE_SIZE = "120mb"
_EXAMPLE_INSTRUCTIONS = [  # (instruction, seconds, its button's label)
    ['Generate speech based on the following description: "A calm, low male voice". '
     'The content to speak is: "Welcome to the studio.".', 1.5, "Speech from text, 1.5 s"],
    ["Decrease the volume by 10 dB.", 0, "Volume −10 dB"],
    ["Raise the pitch by 2 semitones.", 0, "Pitch +2 semitones"],
    ["Remove only the background noise, preserve everything else, and output audio of the same length.", 0,
     "Remove the background noise"],
    # the demo model's text-to-tone vocabulary: 200..700 Hz in 50 Hz steps
    ["Generate a 450 Hz sine tone.", 2.0, "A 450 Hz tone, 2 s"],
]
# Made once with espeak-ng and numpy (assets/examples/make_examples.py): Spaces have no espeak-ng.
EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "assets" / "examples"
_EXAMPLE_CLIPS = [  # what the demo model does, so a first visitor's click gives a real edit; (clip, instruction, label)
    ["speech.flac", "Decrease the volume by 10 dB.", "Speech · volume −10 dB"],
    ["tone.flac", "Raise the pitch by 2 semitones.", "Tone · pitch +2 semitones"],
    ["noisy_speech.flac",
     "Remove only the background noise, preserve everything else, and output audio of the same length.",
     "Noisy speech · remove the noise"],
]
_EXAMPLE_CAPTIONS = [["Rain falling on a tin roof"], ["A dog barks twice in a quiet street"],
                     ["Footsteps on gravel, then a car door closes"]]
# What Audex-Tiny (the demo) can make: training/audex_sounds.py's kinds of sound, in its words.
_DEMO_EXAMPLE_CAPTIONS = [["A 440 Hz beep lasting one second"], ["A sweep from 300 Hz to 1200 Hz over 1.5 seconds"],
                          ["Three knocks on a door"], ["White noise fading out over 1.5 seconds"],
                          ["A 1000 Hz beep, then two clicks"]]


def launch_options() -> dict[str, Any]:
    """What ``Blocks.launch`` needs besides host, port and share."""
    return {
        "theme": style.theme(),
        "css": style.css(),
        "max_file_size": MAX_FILE_SIZE,
        "footer_links": ["api", "gradio", "settings"],
    }


def _props(update: dict) -> dict:
    """A ``gr.update`` as constructor keyword arguments, so build time and change time agree."""
    return {key: value for key, value in update.items() if key != "__type__"}


# ----------------------------------------------------------------------------- layout


def _edit_tab(studio: Studio, handlers: Handlers) -> SimpleNamespace:
    """What to edit on the left (clip, instruction, examples, builder); on the right the settings,
    then Generate with its result right under it. Each part is a section of its own, so that on a
    phone, where the columns give way to one, the sections follow a person's order: clip,
    instruction, Generate, result, then the rest (:mod:`auk_app.ui.style`)."""
    limits = studio.config.limits
    default = studio.entry("auto")
    c = SimpleNamespace()
    # Rendered in the right column; created first so the examples on the left can fill it.
    c.seconds = page_widget(EDIT["seconds"], limits, step=0.02, render=False)
    with gr.Row(equal_height=False, elem_id="edit-layout"):
        with gr.Column(scale=6, elem_id="edit-left"):
            with gr.Column(elem_id="edit-source"):
                _source_and_instruction(c, limits, default)
            with gr.Column(elem_id="edit-examples"):
                _clip_examples(c)
            with gr.Column(elem_id="edit-builder"):
                _builder(c, handlers, default)
            with gr.Column(elem_id="edit-instruction-examples"):
                c.instruction_examples = gr.Examples(
                    [[text, seconds] for text, seconds, _ in _EXAMPLE_INSTRUCTIONS], inputs=[c.instruction, c.seconds],
                    label="Example instructions", example_labels=[label for *_, label in _EXAMPLE_INSTRUCTIONS],
                    cache_examples=False)
        with gr.Column(scale=5, elem_id="edit-right"):
            with gr.Column(elem_id="edit-settings"):
                _settings(c, studio)
            with gr.Column(elem_id="edit-advanced"):
                _advanced(c, limits, default)
            with gr.Column(elem_id="edit-action"):
                _action(c)
            with gr.Column(elem_id="edit-result"):
                _result(c)
    with gr.Accordion("Manifest: every knob, seed, version and timing", open=False):
        c.manifest = gr.JSON(label="Manifest", elem_id="edit-manifest")
    c.state = gr.State(None)
    return c


def _clip_examples(c: SimpleNamespace) -> None:
    """Not cached: Gradio keys its cache by component id, so a demo model's result would outlive a
    switch to the released weights, and it would skip the validator. A click fills the clip (with
    its verdict) and the instruction; Generate runs. Shown as labelled buttons, which wrap on a
    phone, rather than a table of three columns."""
    c.clip_examples = gr.Examples([[str(EXAMPLE_DIR / clip), text, 0] for clip, text, _ in _EXAMPLE_CLIPS],
                                  inputs=[c.audio, c.instruction, c.seconds], label="Example clips",
                                  example_labels=[label for *_, label in _EXAMPLE_CLIPS],
                                  cache_examples=False, api_visibility="private", elem_id="clip-examples")


def _action(c: SimpleNamespace) -> None:
    """Generate and Stop, and the line saying what Stop did (cleared by the next Generate)."""
    with gr.Row():
        c.run = gr.Button("Generate", variant="primary", elem_id="run-edit", scale=3)
        c.stop = gr.Button("Stop", variant="stop", elem_id="stop-edit", scale=1)
    c.stop_note = gr.Markdown(elem_id="stop-note", elem_classes=["note"])


def _result(c: SimpleNamespace) -> None:
    """The result (where the progress shows), its downloads, the check as a card beside the
    before/after figure, and the candidates of a run of several."""
    c.output = gr.Audio(
        label="Result · 24 kHz WAV, level as generated",
        type="filepath", interactive=False, buttons=["download"], elem_id="edit-output",
    )
    c.warnings = result_notes.block("edit-warnings")
    # /edit_audio's line ("asked −6 dB · got −5.9 dB ✓"); the page shows it as the card below
    c.check_line = gr.Markdown(elem_id="edit-check", visible=False)
    with gr.Row():
        c.use_as_input = gr.Button("↩ Use the result as the source", size="sm", elem_id="use-as-input")
        c.flac_file = gr.DownloadButton("FLAC", visible=False, size="sm", elem_id="edit-flac-file")
        c.mp3_file = gr.DownloadButton("MP3", visible=False, size="sm", elem_id="edit-mp3-file")
        c.manifest_file = gr.DownloadButton("Manifest (JSON)", visible=False, size="sm",
                                            elem_id="edit-manifest-file")
    c.use_note = gr.Markdown(elem_id="use-note", elem_classes=["note"])
    gr.Markdown("Before / after: waveforms and log-mel spectrograms on one time axis; beside them, the check of "
                "what was asked against what the result measures", elem_classes=["note"])
    with gr.Row(equal_height=False, elem_id="edit-view"):
        c.check_card = gr.HTML(elem_id="check-card", visible=False, scale=1, min_width=220, padding=False)
        c.figure = gr.Image(label="Before / after", show_label=False, type="filepath", format="png",
                            interactive=False, buttons=["download", "fullscreen"], elem_id="edit-figure", scale=3,
                            min_width=260)
    _candidates(c)


def _candidates(c: SimpleNamespace) -> None:
    """Every candidate of a run of several as a ranked list, best first: each a slim player (the
    browser's own) labelled with its seed and check; the one picked below can become the result or
    the next source. Hidden until a run has more than one."""
    slim = gr.WaveformOptions(show_recording_waveform=False)
    with gr.Column(visible=False, elem_id="edit-candidates") as c.candidate_box:
        gr.Markdown("**Candidates**, best first by the edit check", elem_classes=["note"])
        c.candidate_players = [gr.Audio(type="filepath", interactive=False, visible=False, buttons=["download"],
                                        waveform_options=slim, elem_id=f"candidate-{k + 1}",
                                        elem_classes=["candidate"]) for k in range(MAX_CANDIDATES)]
        c.candidate_pick = gr.Radio([], label="Choose a candidate", elem_id="candidate-pick")
        with gr.Row():
            c.pick_result = gr.Button("Make it the result", size="sm", elem_id="candidate-result")
            c.pick_source = gr.Button("↩ Use it as the next source", size="sm", elem_id="candidate-source")
    # /edit_audio's table of all candidates and their WAVs (the page shows them in the players above)
    c.candidate_table = gr.JSON(visible=False, label="Candidates")
    c.candidate_files = gr.File(file_count="multiple", visible=False, label="Candidate WAVs")


def _source_and_instruction(c: SimpleNamespace, limits: Limits, default: ModelEntry) -> None:
    """The source player with its verdict, and the instruction with what the model cannot do in it."""
    c.audio = page_widget(EDIT["audio"], limits, elem_id="source-audio", sources=["upload", "microphone"],
                          waveform_options=gr.WaveformOptions(sample_rate=default.checkpoint.sample_rate))
    c.verdict = gr.Markdown(ui_text.upload_verdict(None), elem_id="upload-verdict")
    gr.Markdown(f"Up to {limits.max_input_seconds:g} s and {limits.max_channels} channels, any common format; "
                "mixed to mono and resampled to 24 kHz. The result is written as PCM16 WAV at exactly the "
                "level the model produced (no normalisation; clipping is reported, and Advanced "
                "offers headroom).", elem_classes=["note"])
    c.source_seconds = gr.State(None)
    c.source_voiced = gr.State(None)  # the clip's (or region's) seconds of speech: the speaker's pace
    c.instruction = page_widget(EDIT["instruction"], limits, lines=3,
                                placeholder="e.g. Decrease the volume by 10 dB. The builder below writes the exact "
                                            "wording.")
    c.instruction_count = gr.Markdown(f"0 / {limits.max_instruction_chars:,} characters", elem_id="instruction-count",
                                      elem_classes=["note"])
    with gr.Row():
        c.suggest = gr.Button("Suggest the model's wording", size="sm", elem_id="suggest")
    c.suggest_note = gr.Markdown(elem_id="suggest-note", elem_classes=["note"])
    c.capability_note = gr.Markdown(elem_id="capability-note")


def _builder(c: SimpleNamespace, handlers: Handlers, default: ModelEntry) -> None:
    """The instruction builder, opened on a task the default model can do (the demo moves levels)."""
    first = instructions.task("volume") if default.demo else instructions.TASKS[0]
    fields = dict(zip(instructions.FIELD_NAMES, map(_props, field_updates(first.key))))
    preview_md, preview_state = handlers.preview(first.key, *(f.get("value") for f in fields.values()), None)
    with gr.Accordion("Instruction builder: pick a task, fill in the fields", open=True):
        with gr.Row():
            c.task = gr.Dropdown(task_choices(default), value=first.key,
                                 label="Task", scale=3, min_width=300, elem_id="builder-task")
            c.mode = gr.Dropdown(scale=2, elem_id="builder-mode", **fields["mode"])
            c.language = gr.Radio(list(instructions.LANGUAGE_CHOICES), value=instructions.EN,
                                  label="Language", scale=1, elem_id="builder-language",
                                  info="The cookbook's English or Chinese wording")
        with gr.Row():
            c.original = gr.Textbox(elem_id="builder-original", **fields["original"])
            c.text = gr.Textbox(elem_id="builder-text", **fields["text"])
        with gr.Row():
            c.option = gr.Dropdown(elem_id="builder-option", **fields["option"])
            c.amount = gr.Dropdown(elem_id="builder-amount", **fields["amount"])
        c.built_md = gr.Markdown(preview_md, elem_id="builder-preview")
        c.built = gr.State(preview_state)
        c.use_built = gr.Button("Use this instruction and duration", size="sm", elem_id="use-built")


def _settings(c: SimpleNamespace, studio: Studio) -> None:
    """Model, duration, region, seed and candidates."""
    limits = studio.config.limits
    # Custom values stay allowed so an API client's unknown name gets the validator's sentence
    # (Gradio's own check answers a bare HTTP 400); in the browser on_model_change refuses them.
    c.model = page_widget(EDIT["model"], limits, choices=model_choices(studio),
                          info="Starts on the released weights when found, else on the embedded demo model (auto).")
    c.seconds.render()
    for group, extra in (("region", {}), ("seed", {"step": 1})):
        with gr.Row():
            for knob in EDIT.in_group(group):  # min_width: on a phone a row wraps rather than squeeze a box
                setattr(c, knob.name, page_widget(knob, limits, min_width=150,
                                                  **(extra if knob.widget == "number" else {})))


def _advanced(c: SimpleNamespace, limits: Limits, default: ModelEntry) -> None:
    """The sampling knobs as sliders at the default model's own values, the grid, and the rest of the
    schema's advanced knobs (the latent's draw, headroom)."""
    sampling = recipe_knobs(default)
    *updates, note = map(_props, knob_updates(default))
    at_default = {knob.name: update for knob, update in zip(sampling, updates)}
    with gr.Accordion("Advanced sampling", open=False, elem_id="advanced"):
        c.knob_note = gr.Markdown(elem_id="knob-note", **note)
        with gr.Row():
            for knob in sampling:
                if knob.widget == "slider":
                    setattr(c, knob.name, page_widget(knob, limits, **at_default[knob.name]))
        for knob in EDIT.in_group("advanced"):
            if knob.widget != "slider":
                setattr(c, knob.name, page_widget(knob, limits, **at_default.get(knob.name, {})))


def _edit_endpoint(studio: Studio) -> SimpleNamespace:
    """The named /edit_audio endpoint's inputs, never shown: its knobs stay empty by default, meaning
    the chosen checkpoint's defaults, which the page's sliders cannot (they always hold a number)."""
    models = ["auto", *(e.key for e in studio.models()), *studio.not_downloaded]
    c = SimpleNamespace(trigger=gr.Button(visible=False))
    for knob in EDIT:
        setattr(c, knob.name, api_widget(knob, choices=models))
    return c


def _audex_tab(handlers: Handlers) -> SimpleNamespace:
    """The caption, the knobs, Generate and the examples on the left; the result, its report and its
    figure on the right. On a phone: caption, Generate, result, then knobs and examples."""
    c = SimpleNamespace()
    gr.Markdown(ui_text.audex_banner(), visible=handlers.audex_demo, elem_classes=["banner"], elem_id="audex-banner")
    with gr.Row(equal_height=False, elem_id="audex-layout"):
        with gr.Column(scale=4, elem_id="audex-left"):
            with gr.Column(elem_id="audex-caption"):
                c.caption = page_widget(AUDEX["caption"], handlers.limits, lines=2, info=None,
                                        placeholder="A 440 Hz beep lasting one second, then three clicks."
                                        if handlers.audex_demo else "Rain falling on a tin roof, distant thunder.")
            with gr.Column(elem_id="audex-knobs"):
                _audex_knobs(c, handlers)
            with gr.Column(elem_id="audex-action"):
                with gr.Row():
                    c.run = gr.Button("Generate sound", variant="primary", elem_id="run-audex", scale=3)
                    c.stop = gr.Button("Stop", variant="stop", elem_id="stop-audex", scale=1)
                c.stop_note = gr.Markdown(elem_id="audex-stop-note", elem_classes=["note"])
            with gr.Column(elem_id="audex-examples"):
                captions = _DEMO_EXAMPLE_CAPTIONS if handlers.audex_demo else _EXAMPLE_CAPTIONS
                gr.Examples(captions, inputs=[c.caption], label="Example captions", cache_examples=False)
        with gr.Column(scale=6, elem_id="audex-right"):
            with gr.Column(elem_id="audex-result"):
                _audex_result(c)
    with gr.Accordion("Raw validity report and manifest (JSON)", open=False):
        c.report = gr.JSON(label="Validity report", elem_id="rvq-report-json")
        c.manifest = gr.JSON(label="Manifest", elem_id="audex-manifest")
    c.state = gr.State(None)
    return c


def _audex_knobs(c: SimpleNamespace, handlers: Handlers) -> None:
    """The sampling knobs, two to a row; on a phone a row wraps rather than squeeze a box (min_width,
    and for the checkbox, which drops it, auk_app.ui.style)."""
    shown = {"cfg": {"step": 0.5}, "max_seconds": {"value": handlers.audex_seconds, "step": 0.5},
             "temperature": {"step": 0.1}, "top_k": {"step": 1}, "seed": {"step": 1}}
    knobs = [k for k in AUDEX if k.widget != "text"]
    for pair in (knobs[i:i + 2] for i in range(0, len(knobs), 2)):
        with gr.Row():
            for knob in pair:
                prefix = "audex-" if knob.name in EDIT else ""
                setattr(c, knob.name, page_widget(knob, handlers.limits, prefix=prefix, min_width=150,
                                                  **shown.get(knob.name, {})))


def _audex_result(c: SimpleNamespace) -> None:
    c.output = gr.Audio(label="Result · 16 kHz WAV (XCodec1)", type="filepath",
                        interactive=False, buttons=["download"], elem_id="audex-output")
    c.warnings = result_notes.block("audex-warnings")
    c.report_md = gr.Markdown("The RVQ-phase validity report appears here after a run.", elem_id="rvq-report")
    with gr.Row():
        c.flac_file = gr.DownloadButton("FLAC", visible=False, size="sm", elem_id="audex-flac-file")
        c.mp3_file = gr.DownloadButton("MP3", visible=False, size="sm", elem_id="audex-mp3-file")
        c.manifest_file = gr.DownloadButton("Manifest (JSON)", visible=False, size="sm",
                                            elem_id="audex-manifest-file")
    gr.Markdown("Spectrogram of the result and the generated token stream", elem_classes=["note"])
    c.figure = gr.Image(label="Spectrogram and token stream", show_label=False, type="filepath", format="png",
                        interactive=False, buttons=["download", "fullscreen"], elem_id="audex-figure")


# ----------------------------------------------------------------------------- the app


def _edit_queue(config) -> dict[str, Any]:
    """Batched edits get a queue of their own, admitting ``auk_batch`` at once; with ``--offload``
    or ``--auk-batch 1`` (small GPUs) edits share text to audio's one slot."""
    if config.auk_batch > 1 and not config.offload:
        return {"concurrency_id": AUK_QUEUE, "concurrency_limit": config.auk_batch}
    return {"concurrency_id": GPU_QUEUE, "concurrency_limit": 1}


def _wire_edit(e: SimpleNamespace, endpoint: SimpleNamespace, h: Handlers, config) -> Any:
    """The page's Generate, a private event over its sliders, and /edit_audio, declared on its own hidden
    inputs, sharing one edit queue (:func:`_edit_queue`). Returns the page's event (Stop cancels it)."""
    queue = _edit_queue(config)
    results = [e.output, e.figure, e.manifest, e.state, e.check_line, e.candidate_table, e.candidate_files]
    endpoint.trigger.click(
        h.edit_audio, inputs=[getattr(endpoint, name) for name in inputs_of(h.edit_audio)], outputs=results,
        validator=h.check_edit, api_name="edit_audio", api_description=h.edit_audio.__doc__, **queue,
    )
    # The page's edit returns the audio and manifest with the figure cleared; the figure is drawn by
    # the event chained on it, queued apart so a slow drawing holds no model slot.
    return e.run.click(h.edit_from_ui, inputs=[getattr(e, name) for name in inputs_of(h.edit_from_ui)],
                       outputs=results, validator=h.check_edit_from_ui, api_visibility="private", **queue)


def _wire_suggest(e: SimpleNamespace, endpoint: SimpleNamespace, h: Handlers) -> None:
    """/suggest_instruction on the edit endpoint's hidden inputs, and the page's button, which puts the
    rewrite into the instruction box; both in the GPU's one slot (the released model's thinker writes it)."""
    suggest = gr.Button(visible=False)
    suggest.click(h.suggest_instruction, [getattr(endpoint, name) for name in inputs_of(h.suggest_instruction)],
                  gr.JSON(visible=False), validator=h.check_suggest, api_name="suggest_instruction",
                  api_description=h.suggest_instruction.__doc__, concurrency_id=GPU_QUEUE, concurrency_limit=1)
    e.suggest.click(h.suggest_on_page, [e.model, e.instruction, e.audio], [e.instruction, e.seconds, e.suggest_note],
                    validator=h.check_suggest_on_page, api_visibility="private", concurrency_id=GPU_QUEUE,
                    concurrency_limit=1)


def _wire_edit_plumbing(e: SimpleNamespace, h: Handlers) -> list[dict]:
    """The edit tab's private events: model knobs and task marks, the capability note, the builder,
    the upload verdict and the result-as-source swap. Returns what follows a new source clip (its
    checks, the builder's preview, the capability note), for other events to chain."""
    sampling = [getattr(e, knob.name) for knob in recipe_knobs(h.studio.entry("auto"))]
    # A person's choice, not every change: a restored entry sets a model and that model's knobs together.
    e.model.input(h.on_model_change, e.model, [e.model, *sampling, e.knob_note, e.task], **PRIVATE)
    # The note follows a finished instruction (left, submitted, built or picked), not each keystroke, where
    # a half-typed request would read as no task at all.
    note = {"fn": h.capability_note, "inputs": [e.model, e.instruction], "outputs": e.capability_note, **PRIVATE}
    gr.on([e.model.change, e.instruction.blur, e.instruction.submit], **note)
    e.instruction_examples.load_input_event.then(**note)
    fields = [getattr(e, name) for name in instructions.FIELD_NAMES]
    builder = [e.task, *fields, e.source_seconds, e.source_voiced, e.language]
    preview = {"fn": h.preview, "inputs": builder, "outputs": [e.built_md, e.built], **PRIVATE}
    # A new task relabels the fields, then previews. The fields preview on a person's input only: their
    # change events also fire mid-relabelling, sending the old task's value (Volume's "Decrease")
    # against the new task's choices (Pitch's Raise/Lower), which Gradio refuses with a console error.
    e.task.change(field_updates, e.task, fields, **PRIVATE).then(**preview)
    # The player's own input (upload, record, clear), not its change: clearing a refused clip must not
    # re-check the empty player and replace the refusal with "No clip".
    # The verdict decodes the upload, and the raw API reaches private events too: queued with /inspect_audio.
    region = [getattr(e, knob.name) for knob in EDIT.in_group("region")]
    clip = {"fn": h.on_audio_change, "inputs": [e.audio, *region, e.model],
            "outputs": [e.verdict, e.source_seconds, e.source_voiced, e.audio], "api_visibility": "private",
            "concurrency_id": INTAKE_QUEUE, "concurrency_limit": INTAKE_CONCURRENCY}
    gr.on([e.audio.input, e.model.change, *(edge.change for edge in region)], **clip).then(**preview)
    gr.on([e.language.change] + [f.input for f in fields], **preview)
    e.use_built.click(h.apply_built, e.built, [e.instruction, e.seconds], **PRIVATE).then(**note)
    e.clip_examples.load_input_event.then(**clip).then(**preview).then(**note)
    e.use_as_input.click(h.use_result, e.output, [e.audio, e.use_note], **PRIVATE).then(**clip).then(**preview)
    e.pick_source.click(h.use_candidate, [e.state, e.candidate_pick], [e.audio, e.use_note],
                        **PRIVATE).then(**clip).then(**preview)
    # A candidate's figure may still need drawing: queued with the figures, not on the event loop.
    e.pick_result.click(h.pick_candidate, [e.state, e.candidate_pick],
                        [e.output, e.manifest, e.check_line, e.seed, e.manifest_file, e.figure, e.flac_file,
                         e.mp3_file], api_visibility="private", concurrency_id=FIGURE_QUEUE,
                        concurrency_limit=FIGURE_CONCURRENCY)
    return [clip, preview, note]


def _wire_audex(a: SimpleNamespace, h: Handlers, status) -> Any:
    """/text_to_audio, alone in the GPU queue, and what follows a result: the seed, the manifest, the
    FLAC/MP3 downloads, the report table and the status line. Returns the event (Stop cancels it)."""
    audex = a.run.click(
        h.text_to_audio,
        inputs=[getattr(a, name) for name in inputs_of(h.text_to_audio)],
        outputs=[a.output, a.figure, a.report, a.manifest, a.state],
        validator=h.check_audex, api_name="text_to_audio", api_description=h.text_to_audio.__doc__,
        concurrency_id=GPU_QUEUE, concurrency_limit=1,
    )
    audex.success(h.after_audex, a.state, [a.seed, a.manifest_file, a.flac_file, a.mp3_file, a.report_md, status],
                  **PRIVATE)
    return audex


def _check_card(manifest: dict | None) -> dict:
    card = manifest_card(manifest)
    return gr.update(value=card, visible=bool(card))


def _wire_views(e: SimpleNamespace, a: SimpleNamespace) -> None:
    """The page's views: the check card follows the result's manifest (a new edit's or a picked
    candidate's), the region is shaded on the source's waveform, and pressing Generate clears the
    line a previous Stop left (the last two in the browser)."""
    e.manifest.change(_check_card, e.manifest, e.check_card, **PRIVATE)
    result_notes.wire(e.manifest, e.warnings, e.run)
    result_notes.wire(a.manifest, a.warnings, a.run)
    region = [e.region_start, e.region_end]
    gr.on([e.audio.change, *(edge.change for edge in region)], None, region, None, js=page_js.SHADE_REGION,
          **PRIVATE)
    for run, note in ((e.run, e.stop_note), (a.run, a.stop_note)):
        run.click(None, None, note, js="() => ''", **PRIVATE)


def _loading_line(demo: gr.Blocks, h: Handlers, warming: Warming | None, status) -> None:
    """Under the status line, what ``warming`` still loads, refreshed every second until it is done
    (then the status line, which names the loaded model, follows)."""
    pending = warming.pending() if warming is not None else []
    line = gr.Markdown(ui_text.loading_line(pending), visible=bool(pending), elem_classes=["status-line"],
                       elem_id="loading-line")
    ticker = gr.Timer(1.0, active=bool(pending))

    def refresh():
        left = warming.pending() if warming is not None else []
        return gr.update(value=ui_text.loading_line(left), visible=bool(left)), h.status(), gr.Timer(active=bool(left))

    gr.on([ticker.tick, demo.load], refresh, None, [line, status, ticker], show_progress="hidden", **PRIVATE)


def _api_tab(studio: Studio) -> SimpleNamespace:
    """How to call the app from Python, and two buttons that call its model-free helpers."""
    api = SimpleNamespace()
    api.page = gr.Markdown(ui_text.api_page(studio.info()["available_models"], studio.config.limits),
                           elem_id="api-page")
    with gr.Row():
        api.info = gr.Button("Call /model_info", size="sm")
        api.inspect = gr.Button("Call /inspect_audio on the source clip", size="sm")
    api.result = gr.JSON(label="Result", elem_id="api-result")
    return api


def _wire_helpers(api: SimpleNamespace, e: SimpleNamespace, h: Handlers) -> None:
    """The public helpers without a model: /model_info outside the queue, /inspect_audio in its own."""
    api.info.click(h.model_info, None, api.result, api_name="model_info", queue=False,
                   api_description=h.model_info.__doc__)
    api.inspect.click(h.inspect_audio, e.audio, api.result, api_name="inspect_audio",
                      api_description=h.inspect_audio.__doc__, concurrency_id=INTAKE_QUEUE,
                      concurrency_limit=INTAKE_CONCURRENCY)


def _wire_page_scripts(demo: gr.Blocks, e: SimpleNamespace, limits: Limits) -> None:
    """What runs in the browser alone: the banner folded on phones, toasts rendered, Ctrl+Enter in the
    instruction or caption, and the instruction's length against its limit as one types."""
    demo.load(None, js=page_js.FOLD_ON_PHONES)
    demo.load(None, js=page_js.RENDER_TOASTS)
    demo.load(None, js=page_js.RUN_ON_CTRL_ENTER)
    e.instruction.change(None, e.instruction, e.instruction_count,
                         js=page_js.count_characters(limits.max_instruction_chars), **PRIVATE)


def build_demo(studio: Studio, warming: Warming | None = None) -> gr.Blocks:
    """The whole app over ``studio``; launch it with ``.launch(**launch_options(), ...)``. ``warming``
    (started once the page is up) loads what first runs need, and the page says what it still loads."""
    h = Handlers(studio)
    default = studio.entry("auto")
    with gr.Blocks(title="AuK Studio", delete_cache=(outputs.MAX_AGE_SECONDS, outputs.MAX_AGE_SECONDS)) as demo:
        gr.Markdown("# AuK Studio\nEdit speech and audio by instruction with **AuK**, or make sounds from text "
                    "with **Audex**. Everything runs in this process; nothing is sent elsewhere.")
        status = gr.Markdown(h.status(), elem_classes=["status-line"], elem_id="status-line")
        _loading_line(demo, h, warming, status)
        # Open on a desktop; folded on a phone (page_js.FOLD_ON_PHONES), where it would fill the first screen.
        with gr.Accordion("About the demo model in use", open=True, visible=default.demo, elem_id="demo-banner-box"):
            gr.Markdown(ui_text.demo_banner(), elem_classes=["banner"], elem_id="demo-banner")
        with gr.Tabs(overflow_behavior="wrap") as tabs:  # every tab in sight on a phone, none behind a menu
            with gr.Tab("Edit & generate (AuK)", id="edit"):
                e = _edit_tab(studio, h)
                endpoint = _edit_endpoint(studio)
            with gr.Tab("Text to audio (Audex)", id="audex"):
                a = _audex_tab(h)
            with gr.Tab("API", id="api"):
                api = _api_tab(studio)
            with gr.Tab("About", id="about"):
                gr.Markdown(ui_text.about_page(studio.config.limits, MAX_FILE_SIZE),
                            elem_id="about-page")
            with gr.Tab("Batch", id="batch"):
                batch = batch_tab.build(studio)
        history = history_panel.build()

        # Model endpoints: validated before the queue; edits batch in the pipeline, text to audio runs alone.
        edit = _wire_edit(e, endpoint, h, studio.config)
        _wire_suggest(e, endpoint, h)
        edit.success(h.after_edit, e.state, [e.seed, e.manifest_file, status], **PRIVATE)
        edit.success(h.show_candidates, e.state, [e.candidate_box, e.candidate_pick, *e.candidate_players], **PRIVATE)
        figure = edit.success(h.finish_edit, e.state, [e.figure, e.flac_file, e.mp3_file],
                              api_visibility="private", concurrency_id=FIGURE_QUEUE,
                              concurrency_limit=FIGURE_CONCURRENCY)
        audex = _wire_audex(a, h, status)
        e.stop.click(h.stop, None, e.stop_note, cancels=[edit, figure], **PRIVATE).then(h.stopped, None, e.stop_note,
                                                                                      **PRIVATE)
        a.stop.click(h.stop, None, a.stop_note, cancels=[audex], **PRIVATE).then(h.stopped, None, a.stop_note, **PRIVATE)

        _wire_helpers(api, e, h)
        batch_tab.wire(batch, h, _edit_queue(studio.config))
        new_source = _wire_edit_plumbing(e, h)
        history_panel.wire(history, history_panel.Events(h, e, a, tabs, history), edit, audex, demo, new_source)
        _wire_views(e, a)
        _wire_page_scripts(demo, e, studio.config.limits)
        demo.load(h.api_page, None, api.page, **PRIVATE)

    # The model requests' cap is the gate's (Admission): Gradio's own max_size is checked before
    # validation, so it gives way to simultaneous arrivals, and it counts every event, cheap ones too.
    # api_open=False: a queued event's direct POST route (/gradio_api/run/<name>) is closed, so every
    # request that reaches a model passes the gate; /model_info (no queue) stays open.
    demo.queue(max_size=BACKSTOP_MAX_SIZE, default_concurrency_limit=1, api_open=False)
    h.admission.bind(demo, QUEUE_MAX_SIZE)
    guard_arrivals(demo, h.gate)  # each call's raw values and its places, before Gradio reads or queues it
    outputs.keep_uploads(demo.upload_file_set)  # Gradio's record of the uploads, held to their disk budget
    return demo
