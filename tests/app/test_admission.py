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


def _inputs(**values) -> list:
    """/edit_audio's inputs in order, as a raw client sends them: the schema's defaults and ``values``."""
    from auk_app.knobs import EDIT

    return [values.get(knob.name, knob.default) for knob in EDIT]


def _join(url: str, fn_index: int, candidates: int = 1) -> httpx.Response:
    """One raw arrival at the queue, as any client can make it: a text-only edit of 1 s."""
    data = _inputs(instruction="Say hi.", seconds=1, candidates=candidates)
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

    monkeypatch.setattr(app.studio.engine, "run", held)
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
        assert len(admitted) == QUEUE_MAX_SIZE, {_refusal(r) for r in refused}  # waiting and running alike
        assert all(r.status_code == 422 and f"the most it takes is {QUEUE_MAX_SIZE}. Try again in a minute."
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
    monkeypatch.setattr(app.studio.engine, "run", recorded)
    data = _inputs(audio=_upload(app.url, clips.voice), instruction="Abandoned.", seconds=1)
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
    with pytest.raises(ValidationError, match=r"The server is busy: \d+ runs are waiting for the model or running, "
                                              r"the most it takes is 0\. Try again in a minute\."):
        client.predict(instruction="Say hi.", seconds=1, api_name="/edit_audio")
    with pytest.raises(ValidationError, match="the most it takes is 0"):
        client.predict(caption="rain", api_name="/text_to_audio")


def test_the_pages_generate_counts_against_the_cap_like_the_api(app):
    """The page's Generate and Suggest are private events of their own names; their waiting runs must
    count too, and every event in a model's queue passes a validator (admission)."""
    from auk_app.ui.app import GPU_QUEUE

    model = [fn for fn in app.demo.fns.values() if fn.concurrency_id in ("auk", GPU_QUEUE) and fn.queue]
    assert {fn.api_name for fn in model} == set(_handlers(app.demo).admission.api_names) == {
        "edit_audio", "_edit_from_ui", "text_to_audio", "suggest_instruction", "suggest_on_page", "edit_batch"}
    assert all(fn.validator is not None for fn in model)


def _holding(app, monkeypatch) -> threading.Event:
    """Runs that hold the model until the returned event is set (or their request is stopped)."""
    release = threading.Event()

    def held(*args, should_stop=None, **kwargs):
        while not release.wait(0.05) and not (should_stop and should_stop()):
            pass
        raise Cancelled("released")

    monkeypatch.setattr(app.studio.engine, "run", held)
    return release


def test_candidates_count_as_runs_whether_they_wait_or_run(app, monkeypatch):
    """Two requests of eight candidates fill the sixteen places, running or not; a third is refused
    at once, with what it asked for."""
    from auk_app.ui.app import QUEUE_MAX_SIZE

    release = _holding(app, monkeypatch)
    fn_index, replies = _edit_fn_index(app.demo), []
    try:
        for _ in range(2):
            replies.append(_join(app.url, fn_index, candidates=QUEUE_MAX_SIZE // 2))
        time.sleep(1.0)  # both are running now (the edit queue runs four at once)
        started = time.monotonic()
        third = _join(app.url, fn_index, candidates=QUEUE_MAX_SIZE // 2)
        assert [r.status_code for r in replies] == [200, 200] and third.status_code == 422, [
            _refusal(r) for r in replies if r.status_code != 200]
        assert f"{QUEUE_MAX_SIZE} runs are waiting for the model or running" in _refusal(third)
        assert f"(this request asks for {QUEUE_MAX_SIZE // 2})" in _refusal(third)
        assert time.monotonic() - started < 5  # refused at once, not after waiting
    finally:
        release.set()
        _drain(app.demo)


@pytest.mark.parametrize("api_name", ["edit_audio", "text_to_audio"])
def test_no_model_endpoint_runs_past_the_queue(app, api_name):
    """The direct POST routes skip validators and the queue: closed for every model endpoint."""
    reply = httpx.post(f"{app.url.rstrip('/')}/gradio_api/run/{api_name}", json={"data": []}, timeout=30)
    assert reply.status_code == 404 and "join the queue" in reply.text
    info = httpx.post(f"{app.url.rstrip('/')}/gradio_api/run/model_info", json={"data": []}, timeout=30)
    assert info.status_code == 200 and info.json()["data"][0]["default_model"] == "demo"


def test_a_burst_of_clients_each_gets_a_result_or_the_busy_sentence(app, client_for, monkeypatch):
    """gradio_client gives up on a join after 5 s: a burst must be answered well within that, every
    client with a result or the busy sentence, none with a timeout."""
    from gradio_client.exceptions import AppError, ValidationError

    release = _holding(app, monkeypatch)
    clients = [client_for(app.url) for _ in range(ARRIVALS)]
    outcomes, gate = [], threading.Barrier(ARRIVALS)

    def call(client):
        gate.wait()
        try:
            client.predict(instruction="Say hi.", seconds=1, api_name="/edit_audio")
            outcomes.append("result")
        except ValidationError as exc:
            outcomes.append("busy" if "The server is busy" in str(exc) else repr(exc))
        except AppError as exc:
            outcomes.append("result" if "released" in str(exc) else repr(exc))
        except Exception as exc:  # noqa: BLE001: what a client must never meet
            outcomes.append(repr(exc))

    threads = [threading.Thread(target=call, args=(client,)) for client in clients]
    try:
        for thread in threads:
            thread.start()
        time.sleep(3)
        release.set()
        for thread in threads:
            thread.join(120)
    finally:
        release.set()
        _drain(app.demo)
    assert set(outcomes) == {"result", "busy"} and len(outcomes) == ARRIVALS, outcomes
