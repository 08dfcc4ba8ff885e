"""The event functions called directly: Stop, error translation, Flash locking, builder plumbing, GPU budgets."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest


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

    monkeypatch.setattr(handlers.studio, "edit", broken)
    with pytest.raises(gr.Error, match=r"failed unexpectedly \(RuntimeError: disk full\)"):
        asyncio.run(handlers.edit_audio(None, "Say hi.", seconds=1, progress=lambda *a, **k: None))


def test_flash_locks_the_sampling_knobs_with_the_reason(flash_app):
    from auk_app.ui.handlers import knob_updates

    flash, demo = (flash_app.studio.entry(name) for name in ("flash", "demo"))
    locked = knob_updates(flash)
    assert [u["interactive"] for u in locked[:4]] == [False] * 4
    assert "fixed recipe" in locked[4]["value"] and "0.07612" in locked[4]["value"]
    unlocked = knob_updates(demo)
    assert [u["interactive"] for u in unlocked[:4]] == [True] * 4
    assert unlocked[0]["placeholder"] == f"default: {demo.checkpoint.defaults['nfe']}"


def test_builder_fields_follow_the_task(handlers):
    from auk_app.ui.handlers import field_updates

    mode, text, original, option, amount = field_updates("volume")
    assert mode["visible"] and mode["choices"] == ["Increase", "Decrease"] and amount["value"] == "10"
    assert not text["visible"] and not original["visible"] and not option["visible"]
    preview, built = handlers.preview("speed", None, None, None, None, "2.0", 3.0)
    assert built == {"instruction": "Adjust the speech speed to 2.0x.", "seconds": 1.5}
    assert "1.5 s" in preview and "source 3.00 s ÷ 2" in preview
    _, built = handlers.preview("speed", None, None, None, None, "2.0", 3.0, "zh")
    assert built == {"instruction": "将语速调整为2.0倍。", "seconds": 1.5}


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
    verdict, length = handlers.on_audio_change(str(bomb), 0, 20.0)
    assert "921.4 million samples" in verdict and "Export it at 48 kHz or less" in verdict and length is None


@pytest.mark.parametrize("mark", [{"alive": False, "closed": False}, {"alive": True, "closed": True}],
                         ids=["stream-gone", "heartbeat-gone"])
def test_a_request_whose_client_is_gone_is_not_started(handlers, monkeypatch, mark):
    """Gradio marks a gone client's events dead (its stream dropped) or closed (its browser's heartbeat
    stopped; Gradio still runs those); a run whose turn comes after either costs nothing."""
    import gradio as gr

    queue = SimpleNamespace(active_jobs=[[SimpleNamespace(session_hash="gone", **mark)]])
    app = SimpleNamespace(get_blocks=lambda: SimpleNamespace(_queue=queue))
    gone = SimpleNamespace(session_hash="gone", request=SimpleNamespace(app=app))
    started = []
    monkeypatch.setattr(handlers.studio, "edit", lambda *args, **kwargs: started.append(args))
    monkeypatch.setattr(handlers.studio, "text_to_audio", lambda *args, **kwargs: started.append(args))
    with pytest.raises(gr.Error, match="The client went away before its run started, so it was not run."):
        asyncio.run(handlers.edit_audio(None, "Say hi.", seconds=1, progress=lambda *a, **k: None, request=gone))
    with pytest.raises(gr.Error, match="went away"):
        asyncio.run(handlers.text_to_audio("rain", progress=lambda *a, **k: None, request=gone))
    assert started == []


def test_a_full_model_queue_refuses_before_the_upload_is_decoded(app, handlers, clips, monkeypatch):
    """A burst of region edits on a full queue must not each decode a 10-minute source first."""
    import gradio as gr

    from auk_app.ui import handlers as handlers_module
    from auk_app.ui.runs import Admission

    decoded = []
    monkeypatch.setattr(handlers_module.upload_check, "check_upload", lambda *args: decoded.append(args))
    full = Admission(api_names=("edit_audio",))
    queue = SimpleNamespace(event_queue_per_concurrency_id={}, active_jobs=[])
    full.bind(SimpleNamespace(_queue=queue), cap=0)
    monkeypatch.setattr(handlers, "admission", full)
    verdicts = asyncio.run(handlers.check_edit(clips.voice, "Raise the volume by 3 dB."))
    assert "the most it queues is 0" in verdicts[0]["message"] and not verdicts[0]["is_valid"]
    assert decoded == []
