"""The model queue's cap holds however requests arrive, and cheap endpoints answer meanwhile."""

from __future__ import annotations

import threading
import time
import uuid

import httpx
import pytest

from auk_app.errors import Cancelled

ARRIVALS = 40


def _edit_fn_index(demo) -> int:
    return next(fn_id for fn_id, fn in demo.fns.items() if fn.api_name == "edit_audio")


def _handlers(demo):
    """The Handlers behind ``demo``'s event functions."""
    info = next(fn for fn in demo.fns.values() if fn.api_name == "model_info")
    return info.fn.__self__


def _join(url: str, fn_index: int) -> httpx.Response:
    """One raw arrival at the queue, as any client can make it: a text-only edit of 1 s (all 15 inputs,
    the last one candidate)."""
    data = [None, "Say hi.", "auto", 1, None, None, None, "", 0, True, True, None, None, False, 1]
    body = {"data": data, "fn_index": fn_index, "session_hash": uuid.uuid4().hex, "event_data": None,
            "trigger_id": None}
    return httpx.post(f"{url.rstrip('/')}/gradio_api/queue/join", json=body, timeout=60)


def test_simultaneous_arrivals_cannot_pass_the_cap_and_model_info_still_answers(app, client_for, monkeypatch):
    from auk_app.ui.app import QUEUE_MAX_SIZE

    release = threading.Event()

    def held(*args, should_stop=None, **kwargs):  # a run that holds the model until the test lets go
        while not release.wait(0.05) and not (should_stop and should_stop()):
            pass
        raise Cancelled("released")

    monkeypatch.setattr(app.studio, "run_plan", held)
    fn_index, replies, gate = _edit_fn_index(app.demo), [], threading.Barrier(ARRIVALS)

    def arrive():
        gate.wait()
        replies.append(_join(app.url, fn_index))

    threads = [threading.Thread(target=arrive) for _ in range(ARRIVALS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        admitted = [r for r in replies if r.status_code == 200]
        refused = [r for r in replies if r.status_code != 200]
        assert len(replies) == ARRIVALS
        running = app.studio.config.auk_batch  # the edit queue runs this many at once (batched steps)
        assert QUEUE_MAX_SIZE <= len(admitted) <= QUEUE_MAX_SIZE + running  # the cap, plus those already running
        assert all(r.status_code == 422 and f"the most it queues is {QUEUE_MAX_SIZE}. Try again in a minute."
                   in _refusal(r) for r in refused)
        started = time.monotonic()
        info = client_for(app.url).predict(api_name="/model_info")
        assert info["default_model"] == "demo" and time.monotonic() - started < 30
    finally:
        release.set()
        _drain(app.demo)  # let the admitted ones end before the next test


def _refusal(reply: httpx.Response) -> str:
    """The sentences of a refused join: a validator's verdicts (HTTP 422) or Gradio's own detail."""
    detail = reply.json()["detail"]
    return detail if isinstance(detail, str) else " ".join(v["message"] for v in detail if not v["is_valid"])


def _drain(demo) -> None:
    """Wait (up to a minute) until nothing is queued or running."""
    deadline = time.monotonic() + 60
    while (len(demo._queue) or any(demo._queue.active_jobs)) and time.monotonic() < deadline:
        time.sleep(0.1)


def _upload(url: str, path) -> dict:
    """``path`` uploaded as a client does, as the FileData a raw join sends for it."""
    with open(path, "rb") as handle:
        reply = httpx.post(f"{url.rstrip('/')}/gradio_api/upload", files={"files": (path.name, handle)}, timeout=30)
    reply.raise_for_status()
    return {"path": reply.json()[0], "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}


def test_a_client_that_gives_up_during_the_upload_check_costs_no_run(app, clips, client_for, monkeypatch):
    """A gradio_client that times out in its join while the upload check runs never opens its
    stream, so Gradio would keep the event alive and run it for nobody. The validator looks again
    after the check: the abandoned request is never queued, and the next one still runs."""
    from gradio_client.exceptions import AppError

    from auk_app.ui import handlers as handlers_module

    real_check = handlers_module.upload_check.check_upload
    checking, gave_up, checked = threading.Event(), threading.Event(), threading.Event()

    def slow_check(*args):  # the client's patience runs out while this waits
        checking.set()
        assert gave_up.wait(30), "the client never gave up"
        time.sleep(0.5)  # the server's loop reads the client's FIN within milliseconds; give it that
        try:
            return real_check(*args)
        finally:
            checked.set()

    edits = []

    def recorded(plan, *args, **kwargs):
        edits.append(plan.request.instruction)
        raise AppError("recorded, not run")

    monkeypatch.setattr(handlers_module.upload_check, "check_upload", slow_check)
    monkeypatch.setattr(app.studio, "run_plan", recorded)
    data = [_upload(app.url, clips.voice), "Abandoned.", "auto", 1, None, None, None, "", 0, True, True, None, None, False, 1]
    body = {"data": data, "fn_index": _edit_fn_index(app.demo), "session_hash": uuid.uuid4().hex,
            "event_data": None, "trigger_id": None}
    try:
        httpx.post(f"{app.url.rstrip('/')}/gradio_api/queue/join", json=body, timeout=1.0)
        raise AssertionError("the join answered before the client gave up")
    except httpx.ReadTimeout:
        gave_up.set()
    assert checking.is_set() and checked.wait(30)
    monkeypatch.setattr(handlers_module.upload_check, "check_upload", real_check)
    # The next request is validated after the abandoned one's check (its client takes longer to set
    # up than the validator's last steps) and queued behind it; once the queue has drained, anything
    # queued has started.
    try:
        client_for(app.url).predict(instruction="Say hi.", seconds=1, api_name="/edit_audio")
    except AppError:
        pass
    _drain(app.demo)
    assert edits == ["Say hi."]


def test_a_full_queue_refuses_gradio_client_with_our_sentence(app, monkeypatch):
    """A full model queue's refusal reaches gradio_client as our sentence, not a bare HTTP 400."""
    from gradio_client import Client
    from gradio_client.exceptions import ValidationError

    monkeypatch.setattr(_handlers(app.demo).admission, "cap", 0)
    client = Client(app.url, verbose=False)
    with pytest.raises(ValidationError, match=r"The server is busy: \d+ runs are already waiting for the model, "
                                              r"the most it queues is 0\. Try again in a minute\."):
        client.predict(instruction="Say hi.", seconds=1, api_name="/edit_audio")
    with pytest.raises(ValidationError, match="the most it queues is 0"):
        client.predict(caption="rain", api_name="/text_to_audio")


def test_the_pages_generate_counts_against_the_cap_like_the_api(app):
    """The page's Generate is a private event of its own name; its waiting edits must count too."""
    from auk_app.ui.app import GPU_QUEUE

    model_events = {fn.api_name for fn in app.demo.fns.values() if fn.concurrency_id in ("auk", GPU_QUEUE) and fn.queue}
    assert model_events == set(_handlers(app.demo).admission.api_names) == {"edit_audio", "_edit_from_ui", "text_to_audio"}
