"""The model queue's cap holds however requests arrive, and cheap endpoints answer meanwhile."""

from __future__ import annotations

import threading
import time
import uuid

import httpx

from auk_app.errors import Cancelled

ARRIVALS = 40


def _edit_fn_index(demo) -> int:
    return next(fn_id for fn_id, fn in demo.fns.items() if fn.api_name == "edit_audio")


def _join(url: str, fn_index: int) -> httpx.Response:
    """One raw arrival at the queue, as any client can make it: a text-only edit of 1 s (all 14 inputs)."""
    data = [None, "Say hi.", "auto", 1, None, None, None, "", 0, True, True, None, None, False]
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

    monkeypatch.setattr(app.studio, "edit", held)
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
        assert all(f"the most it queues is {QUEUE_MAX_SIZE}. Try again in a minute." in r.json()["detail"]
                   for r in refused)
        started = time.monotonic()
        info = client_for(app.url).predict(api_name="/model_info")
        assert info["default_model"] == "demo" and time.monotonic() - started < 30
    finally:
        release.set()
        deadline = time.monotonic() + 60  # let the admitted ones end before the next test
        while (len(app.demo._queue) or any(app.demo._queue.active_jobs)) and time.monotonic() < deadline:
            time.sleep(0.1)
