"""The names ``auk_app.ui.gradio_queue`` reads inside Gradio's queue, held against the installed Gradio:
an upgrade that moves one fails here, not in a user's request."""

from __future__ import annotations

import threading
import time

import gradio as gr
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")


def test_events_sees_what_waits_and_what_runs_with_its_inputs(client_for):
    from auk_app.ui.gradio_queue import events

    release = threading.Event()

    def slow(text, count):
        release.wait(30)
        return text

    with gr.Blocks() as blocks:
        text, count, out = gr.Textbox(), gr.Number(), gr.Textbox()
        gr.Button().click(slow, [text, count], out, api_name="slow", concurrency_limit=1)
    blocks.queue()
    _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        client = client_for(url)
        jobs = []
        for i, wanted in enumerate([(0, 1), (1, 1)]):  # the second is sent once the first runs: a known order
            jobs.append(client.submit(f"job {i}", i, api_name="/slow"))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                waiting, running = events(blocks)
                if (len(waiting), len(running)) == wanted:
                    break
                time.sleep(0.05)
        assert [(e.api_name, e.data, e.gone) for e in running] == [("slow", ["job 0", 0], False)]
        assert [(e.api_name, e.data) for e in waiting] == [("slow", ["job 1", 1])]
        assert running[0].id != waiting[0].id and running[0].session and waiting[0].session
        release.set()
        assert [job.result(timeout=30) for job in jobs] == ["job 0", "job 1"]
    finally:
        release.set()
        blocks.close()
