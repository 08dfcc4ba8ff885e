"""The event functions called directly: Stop, error translation, Flash locking, builder plumbing, GPU budgets."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from auk_app.config import Limits
from auk_app.job import EditJob, run_request
from auk_app.results import EditOrder


@pytest.fixture(scope="module")
def handlers(app):
    from auk_app.ui.handlers import Handlers

    return Handlers(app.studio)


def test_stop_ends_the_callers_own_run_at_the_next_step(handlers, clips):
    import gradio as gr

    me, other = SimpleNamespace(session_hash="me"), SimpleNamespace(session_hash="someone else")
    phases = []

    def progress(fraction, desc=None, unit=None):
        phases.append(desc)
        if desc.startswith("Sampling"):
            handlers.stop(other)  # another session's Stop must not touch this run…
            handlers.stop(me)  # …this session's does

    with pytest.raises(gr.Error, match="Stopped before the result was ready"):
        asyncio.run(handlers.edit_audio(str(clips.voice), "Decrease the volume by 10 dB.", nfe=8, seed=1,
                                        randomize_seed=False, progress=progress, request=me))
    assert sum(desc.startswith("Sampling") for desc in phases) == 1
    assert phases[0] == "Loading the model (first run only)"


def test_unexpected_failures_are_named_not_hidden(handlers, monkeypatch):
    import gradio as gr

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(handlers.studio.engine, "run", broken)
    with pytest.raises(gr.Error, match=r"failed unexpectedly \(RuntimeError: disk full\)"):
        asyncio.run(handlers.edit_audio(None, "Say hi.", seconds=1, progress=lambda *a, **k: None))


def test_flash_locks_the_sampling_knobs_with_the_reason(flash_app):
    from auk_app.ui.handlers import knob_updates, slider_knobs

    flash, demo = (flash_app.studio.entry(name) for name in ("flash", "demo"))
    nfe, cfg, sway, t_grid, step_cache, note = knob_updates(flash)
    assert [nfe["interactive"], cfg["interactive"], t_grid["interactive"], sway["visible"]] == [False] * 4
    assert (nfe["value"], cfg["value"]) == (4, 0) and t_grid["value"].startswith("0, 0.07612")
    assert step_cache["interactive"] is False and step_cache["value"] == 0  # never on Flash's four steps
    assert "fixed recipe" in note["value"] and "0.07612" in note["value"]
    unlocked = knob_updates(demo)
    assert [u["interactive"] for u in unlocked[:4]] == [True] * 4
    defaults = demo.checkpoint.defaults
    # The sliders hold the checkpoint's real defaults (the demo's 16 steps, not the releases' 32).
    assert [u["value"] for u in unlocked[:3]] == [defaults.nfe, defaults.cfg, defaults.sway] == [16, 0.0, -1.0]
    # A slider left at its default sends nothing, as an empty API knob; Flash's locked ones never send.
    page = {"nfe": 16.0, "cfg": 0.0, "sway": -1.0, "t_grid": "", "step_cache": 0.0, "seed": 3}
    left = {"nfe": None, "cfg": None, "sway": None, "step_cache": None}
    assert slider_knobs(demo, page) == {**page, **left}
    assert slider_knobs(demo, {**page, "nfe": 8.0, "sway": 0.5, "step_cache": 0.1}) == {
        **page, **left, "nfe": 8.0, "sway": 0.5, "step_cache": 0.1}
    assert slider_knobs(flash, {**page, "nfe": 4.0, "t_grid": "0, 0.5, 1", "step_cache": 0.1}) == {
        **page, **left, "t_grid": None}


def test_builder_fields_follow_the_task(handlers):
    from auk_app.ui.handlers import field_updates

    mode, text, original, option, amount = field_updates("volume")
    assert mode["visible"] and mode["choices"] == ["Increase", "Decrease"] and amount["value"] == "10"
    assert not text["visible"] and not original["visible"] and not option["visible"]
    preview, built = handlers.preview("speed", None, None, None, None, "2.0", 3.0)
    assert built == {"instruction": "Adjust the speech speed to 2.0x.", "seconds": 1.5, "task": "speed", "pace": None}
    assert "1.5 s" in preview and "source 3.00 s ÷ 2" in preview
    _, built = handlers.preview("speed", None, None, None, None, "2.0", 3.0, language="zh")
    assert built["instruction"] == "将语速调整为2.0倍。" and built["seconds"] == 1.5 and built["task"] == "speed"


def test_gpu_budgets_grow_with_the_request(handlers):
    edit_gpu_seconds, audex_gpu_seconds = handlers.edit_gpu_seconds, handlers.audex_gpu_seconds
    assert edit_gpu_seconds(None, "x", "auto", 5, 8) < edit_gpu_seconds(None, "x", "auto", 30, 64) <= 180
    assert edit_gpu_seconds(seconds="junk") > 0
    assert audex_gpu_seconds("rain", 3.0, 2) < audex_gpu_seconds("rain", 3.0, 20, compare_unmasked=True) <= 180


def test_the_uploads_verdict_is_queued_and_budgeted_like_inspect_audio(app, handlers, tmp_path):
    """The verdict decodes the upload and any client can trigger it through the raw API: it waits
    in the intake queue, and a file whose header asks for gigabytes gets the sample budget's sentence."""
    from auk_app.ui.app import INTAKE_QUEUE
    from tests.app.test_upload_check import _flac_header

    verdicts = [fn for fn in app.demo.fns.values() if getattr(fn.fn, "__name__", "") == "on_audio_change"]
    assert verdicts and all(fn.queue and fn.concurrency_id == INTAKE_QUEUE for fn in verdicts)
    bomb = _flac_header(tmp_path / "bomb.flac", rate=192_000, channels=8, frames=int(599.9 * 192_000))
    verdict, length, _, _ = handlers.on_audio_change(str(bomb), 0, 20.0)
    assert "921.4 million samples" in verdict and "Export it at 48 kHz or less" in verdict and length is None


@pytest.mark.parametrize("mark", [{"alive": False, "closed": False}, {"alive": True, "closed": True}],
                         ids=["stream-gone", "heartbeat-gone"])
def test_a_request_whose_client_is_gone_is_not_started(handlers, monkeypatch, mark):
    """Gradio marks a gone client's events dead (its stream dropped) or closed (its browser's heartbeat
    stopped; Gradio still runs those); a run whose turn comes after either costs nothing."""
    import gradio as gr

    from auk_app.ui import runs
    from auk_app.ui.gradio_queue import QueuedEvent

    running = QueuedEvent("e1", "edit_audio", "gone", [], gone=not mark["alive"] or mark["closed"])
    monkeypatch.setattr(runs, "events", lambda blocks: ([], [running]))  # as gradio_queue reads Gradio's
    gone = SimpleNamespace(session_hash="gone", request=SimpleNamespace(app=SimpleNamespace(get_blocks=object)))
    started = []
    monkeypatch.setattr(handlers.studio.engine, "run", lambda *args, **kwargs: started.append(args))
    monkeypatch.setattr(handlers.studio, "text_to_audio", lambda *args, **kwargs: started.append(args))
    with pytest.raises(gr.Error, match="The client went away before its run started, so it was not run."):
        asyncio.run(handlers.edit_audio(None, "Say hi.", seconds=1, progress=lambda *a, **k: None, request=gone))
    with pytest.raises(gr.Error, match="went away"):
        asyncio.run(handlers.text_to_audio("rain", progress=lambda *a, **k: None, request=gone))
    assert started == []


def test_a_full_model_queue_refuses_before_the_upload_is_decoded(app, handlers, clips, monkeypatch):
    """A burst of region edits on a full queue must not each decode a 10-minute source first: the
    gate in front of the queue refuses them before the validator (which decodes) runs."""
    from auk_app.knobs import EDIT
    from auk_app.ui import handlers as handlers_module
    from auk_app.ui import runs
    from auk_app.ui.gradio_queue import Arrival

    decoded = []
    monkeypatch.setattr(handlers_module.upload_check, "check_upload", lambda *args: decoded.append(args))
    monkeypatch.setattr(runs, "events", lambda blocks: ([], []))  # an empty queue, as gradio_queue reads it
    full = runs.Admission(api_names=("edit_audio",))
    full.bind(object(), cap=0)
    monkeypatch.setattr(handlers, "admission", full)
    data = [{"path": str(clips.voice)}, "Raise the volume by 3 dB.", *[k.default for k in EDIT][2:]]
    with handlers.gate(Arrival("edit_audio", data)) as refused:
        assert list(refused) == [0] and "the most it takes is 0" in refused[0]
    assert decoded == []


def test_the_builder_marks_and_the_note_names_what_the_model_was_not_trained_for(flash_app):
    from auk_app.ui.handlers import Handlers, task_choices

    studio = flash_app.studio
    labels = dict((key, label) for label, key in task_choices(studio.entry("demo")))
    assert labels["volume"] == "Acoustic editing · Volume"
    assert labels["enhance"].endswith("(only partly in AuK-Tiny (demo))")
    assert labels["emotion"].endswith("(not in AuK-Tiny (demo))")
    # The test's Flash is built from the demo's weights but declares no capabilities: a release's full set.
    assert all("(" not in label.split("·")[1].replace("(clone", "").replace("(voice", "").replace("(a cappella", "")
               for label, _ in task_choices(studio.entry("flash")))
    note = Handlers(studio).capability_note("demo", "Change the emotion to happy.")
    assert note.startswith("⚠ AuK-Tiny (demo) was not trained for Emotion") and "choose `flash`" in note
    assert Handlers(studio).capability_note("demo", "Increase the volume by 5 dB.") == ""
    assert Handlers(studio).capability_note("no-such-model", "Change the emotion to happy.") == ""


def test_the_model_list_shows_each_model_once_and_the_released_ones_not_here(flash_app):
    from auk_app.ui.handlers import model_choices

    assert model_choices(flash_app.studio) == [
        ("AuK-Tiny (demo) · auto", "auto"), ("AuK-Flash-test (flash)", "flash"), ("AuK (base) · not downloaded", "base")]


def test_a_refused_clip_leaves_the_player_and_a_long_one_says_how_it_is_edited(handlers, clips):
    verdict, length, _, player = handlers.on_audio_change(str(clips.silent))
    assert verdict.startswith("✗ Refused:") and length is None and player == {"__type__": "update", "value": None}
    verdict, length, voiced, player = handlers.on_audio_change(str(clips.voice))
    assert verdict.startswith("✓ Ready:") and length == 0.6 and "value" not in player and 0 < voiced <= 0.6
    verdict, _, _, player = handlers.on_audio_change(str(clips.too_long))  # 31 s: whole in windows, or a region
    assert verdict.startswith("✓ Ready:") and "run on the whole 31.0 s in 6 s windows" in verdict
    assert "choose a region of at most 30 s" in verdict and "value" not in player


def test_stop_and_use_as_source_say_what_they_did(handlers, clips):
    assert handlers.stop(None).startswith("Stopped at ") and "writes nothing" in handlers.stop(None)
    assert handlers.use_result(None)[1] == "There is no result yet to use as the source."
    assert handlers.use_result(str(clips.voice)) == (str(clips.voice), "The result (voice.wav) is now the source clip.")


def test_the_pages_edit_returns_the_audio_before_its_figure_is_drawn(handlers, clips, monkeypatch):
    """A figure can take far longer than the edit. With drawing held on an Event, the page's edit
    still returns its WAV and manifest, and only the chained figure event waits."""
    import threading

    from auk_app.ui import figures

    release, drawing, draw = threading.Event(), threading.Event(), figures.before_after

    def held(*args, **kwargs):
        drawing.set()
        assert release.wait(60), "never released"
        return draw(*args, **kwargs)

    monkeypatch.setattr(figures, "before_after", held)
    audio, figure, manifest, state, *_ = asyncio.run(handlers.edit_from_ui(
        str(clips.voice), "Decrease the volume by 10 dB.", nfe=16, cfg=0, sway=-1, seed=3, randomize_seed=False,
        progress=lambda *a, **k: None))
    assert not drawing.is_set() and figure is None  # the audio arrived with no drawing begun
    assert Path(audio).stat().st_size > 0 and manifest["seed"] == 3
    done = {}
    worker = threading.Thread(target=lambda: done.update(out=handlers.finish_edit(state)))
    worker.start()
    assert drawing.wait(60) and "out" not in done
    release.set()
    worker.join(60)
    path, flac, _ = done["out"]
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and state["figure"] is None
    assert flac["visible"] and flac["value"] == str(Path(audio).with_suffix(".flac"))  # the downloads come here too


def test_the_audio_is_set_by_an_event_that_does_not_draw(app):
    fns = {getattr(f.fn, "__name__", ""): (index, f) for index, f in app.demo.fns.items()}
    page_index, page = fns["_edit_from_ui"]
    _, figure = fns["finish_edit"]
    ids = {block.elem_id for block in page.outputs}
    assert "edit-output" in ids and "edit-manifest" in ids
    assert figure.trigger_after == page_index and figure.trigger_only_on_success
    assert [block.elem_id for block in figure.outputs][0] == "edit-figure"


def test_the_example_clips_are_small_shipped_files_listed_on_the_page(app):
    """Speech, tone and noisy speech as committed FLAC (Spaces have no espeak-ng)."""
    import gradio as gr
    import soundfile as sf

    from auk_app.ui.app import EXAMPLE_DIR

    names = ["speech.flac", "tone.flac", "noisy_speech.flac"]
    assert sum((EXAMPLE_DIR / name).stat().st_size for name in names) < 300_000
    for name in names:
        info = sf.info(str(EXAMPLE_DIR / name))
        assert (info.format, info.channels, info.samplerate) == ("FLAC", 1, 24_000) and 1 <= info.duration <= 3
    listed = next(b for b in app.demo.blocks.values() if isinstance(b, gr.Dataset) and b.elem_id == "clip-examples")
    assert [Path(sample[0]).name for sample in listed.samples] == names
    assert all(sample[1] for sample in listed.samples)  # each with an instruction the demo model does


def test_a_request_of_n_candidates_holds_n_places_in_the_model_queue(handlers, monkeypatch):
    from auk_app.ui import runs
    from auk_app.ui.gradio_queue import QueuedEvent
    from auk_app.ui.handlers import inputs_of

    at = inputs_of(handlers.edit_audio).index("candidates")
    assert at == inputs_of(handlers.edit_from_ui).index("candidates")  # both edits count alike
    waiting = QueuedEvent("a", "edit_audio", "s1", [None] * at + [6], gone=False)
    running = QueuedEvent("b", "edit_audio", "s2", [None] * at + [2], gone=False)
    queue = ([waiting], [running])
    monkeypatch.setattr(runs, "events", lambda blocks: queue)  # as gradio_queue reads Gradio's
    admission = runs.Admission(api_names=("edit_audio",), weights={"edit_audio": at})
    admission.bind(object(), cap=16)
    assert admission.runs_of("edit_audio", [None] * at + [4]) == 4
    with admission.reserve(6):  # 6 waiting + 2 running + 6 = 14
        with admission.reserve(2):  # 16: full
            with pytest.raises(runs.Busy, match=r"16 runs are waiting for the model or running, the most it takes "
                                                r"is 16 \(this request asks for 4\)"):
                with admission.reserve(4):
                    pass
        with admission.reserve(2):  # the arrival of 2 was queued or refused: its places are free again
            pass
    queue = ([], [])
    empty = runs.Admission(api_names=("edit_audio",), weights={"edit_audio": at})
    empty.bind(object(), cap=4)
    with empty.reserve(8):  # one request always fits an empty queue, however many candidates it asks for
        pass


def test_gpu_budget_grows_with_the_candidates(handlers):
    one, four = (handlers.edit_gpu_seconds(None, "Hi.", nfe=8, seconds=5, candidates=n) for n in (1, 4))
    assert one < four <= 180


def test_stop_stops_every_candidate_and_progress_counts_their_steps_together(app, clips):
    from auk_app.errors import Cancelled

    stop, reports = threading.Event(), []

    def progress(phase, done, total):
        reports.append((phase, done, total))
        if phase == "sample" and done >= 3:
            stop.set()

    order = EditOrder.from_knobs({"instruction": "Decrease the volume by 6 dB.", "audio": str(clips.voice), "nfe": 8,
                                  "seed": 1, "randomize_seed": False, "candidates": 3, "model": "demo"}, Limits())
    with pytest.raises(Cancelled):
        EditJob(app.studio, order, progress=progress, should_stop=stop.is_set).run()
    steps = [(done, total) for phase, done, total in reports if phase == "sample"]
    assert steps and all(total == 24 for _, total in steps)  # 3 candidates × 8 steps, in all
    assert max(done for done, _ in steps) < 24  # none of them ran on to its end


def test_candidates_are_planned_once_and_run_with_their_own_seeds(app, clips, monkeypatch):
    from auk_app import job

    planned, plan_edit = [], job.plan_edit
    monkeypatch.setattr(job, "plan_edit", lambda *args, **kwargs: planned.append(args[0]) or plan_edit(*args, **kwargs))
    order = EditOrder.from_knobs({"instruction": "Decrease the volume by 6 dB.", "audio": str(clips.voice), "nfe": 2,
                                  "seed": 7, "randomize_seed": False, "candidates": 3, "model": "demo"}, Limits())
    made, _ = EditJob(app.studio, order).run()
    assert len(planned) == 1
    assert sorted(c.result.record.seed for c in made) == [7, 8, 9]
    alone, _ = run_request(app.studio, replace(order.request, seed=8), "demo")
    batched = next(c for c in made if c.result.record.seed == 8).result.wav
    np.testing.assert_allclose(batched, alone.wav, atol=1e-4)  # batched with the others, the same edit


def test_new_words_follow_the_clips_pace_into_the_manifest(handlers, clips, monkeypatch):
    """The upload's voiced seconds reach the builder, which times new words at the speaker's pace, and
    the manifest of the edit it wrote records that pace."""
    import asyncio

    _, length, voiced, _ = handlers.on_audio_change(str(clips.voice))
    _, built = handlers.preview("zero_shot_tts", None, "Good morning to you all.", "Hello there.", None, None,
                                length, voiced)
    assert built["pace"] and built["pace"]["voiced_seconds"] == round(voiced, 3)
    from auk_app import job

    monkeypatch.setattr(job, "capability_warnings", lambda *args: [])  # the demo was not trained for speech
    outputs = asyncio.run(handlers.edit_from_ui(
        str(clips.voice), built["instruction"], seconds=built["seconds"], nfe=2, seed=1, randomize_seed=False,
        built=built, progress=lambda *a, **k: None))
    manifest = outputs[2]
    assert manifest["builder"] == {"task": "zero_shot_tts", "seconds": built["seconds"], "pace": built["pace"]}
