"""A request that goes away stops its compute: a client's cancel, a killed client (the Stop button is
in test_handlers). Each test starts a long run (30 s target, nfe 64: a minute on two cores), lets
it reach the Euler steps, makes it go away, and then times a short edit from another client: it
must finish long before the abandoned run's remaining steps could have, and no file of the
abandoned run may appear.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from gradio_client import handle_file

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")]
LONG = {"instruction": "Generate a 450 Hz sine tone.", "seconds": 30, "nfe": 64, "seed": 1, "randomize_seed": False,
        "api_name": "/edit_audio"}
STEPS_BEFORE_LEAVING = 3
HERE = Path(__file__).parent


def _sampling_step(job) -> int:
    """The Euler step the job reports, 0 before sampling."""
    for unit in job.status().progress_data or []:
        if (unit.desc or "").startswith("Sampling"):
            return unit.index or 0
    return 0


def _seconds_per_step(job) -> float:
    """Wait for the job's steps and time them from its own progress reports."""
    deadline = time.monotonic() + 120
    while _sampling_step(job) < 1:
        assert time.monotonic() < deadline, "the long run never reached its Euler steps"
        time.sleep(0.05)
    first, started = _sampling_step(job), time.monotonic()
    while _sampling_step(job) < first + STEPS_BEFORE_LEAVING - 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return (time.monotonic() - started) / (_sampling_step(job) - first)


def _short_edit_seconds(client, clips) -> float:
    started = time.monotonic()
    client.predict(audio=handle_file(str(clips.voice)), instruction="Decrease the volume by 10 dB.", nfe=4, seed=2,
                   randomize_seed=False, api_name="/edit_audio")
    return time.monotonic() - started


def _request_folders(gradio_temp) -> set:
    return set((gradio_temp / "auk_studio").glob("req_*"))


def test_a_cancelled_job_frees_the_queue_within_a_step(app, clips, client_for, gradio_temp):
    long_job = client_for(app.url).submit(**LONG)
    per_step = _seconds_per_step(long_job)
    before = _request_folders(gradio_temp)
    long_job.cancel()
    waited = _short_edit_seconds(client_for(app.url), clips)
    remaining = (64 - STEPS_BEFORE_LEAVING) * per_step
    assert waited < remaining / 3, (waited, remaining)
    assert len(_request_folders(gradio_temp) - before) == 1  # the short edit's; nothing of the cancelled run


def test_a_killed_client_frees_the_queue_within_a_step(app, clips, client_for, gradio_temp):
    script = textwrap.dedent(f"""
        import sys, time
        from gradio_client import Client
        sys.path.insert(0, {str(HERE)!r})
        from test_cancel import LONG, _seconds_per_step
        job = Client({app.url!r}, verbose=False).submit(**LONG)
        print(_seconds_per_step(job), flush=True)
        time.sleep(600)
    """)
    client = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        per_step = float(client.stdout.readline())
        before = _request_folders(gradio_temp)
    finally:
        client.kill()
        client.wait()
    waited = _short_edit_seconds(client_for(app.url), clips)
    remaining = (64 - STEPS_BEFORE_LEAVING) * per_step
    assert waited < remaining / 3, (waited, remaining)
    assert len(_request_folders(gradio_temp) - before) == 1
