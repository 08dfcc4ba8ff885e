"""Stop says that it stopped: once the run's thread has ended at its next step, not before, and
not at all where nothing was running (auk_app.ui.runs.Runs.stopped)."""

from __future__ import annotations

import asyncio
import threading
import time

from auk_app.ui import text as ui_text
from auk_app.ui.runs import Runs


def test_stop_reports_stopped_only_once_the_run_has_ended():
    runs, started, release = Runs(), threading.Event(), threading.Event()

    def handler(request=None):
        started.set()
        while not runs.flag(request).is_set():
            time.sleep(0.01)
        release.wait(5)  # the step it was on still runs after Stop
        return "ended"

    async def scenario():
        run = asyncio.create_task(runs.stoppable(handler)(request=None))
        await asyncio.to_thread(started.wait, 5)
        runs.stop(None)
        assert not await asyncio.to_thread(runs.stopped, None, 0.3)  # its step has not ended yet
        release.set()
        assert await asyncio.to_thread(runs.stopped, None, 5)
        assert await run == "ended"

    asyncio.run(scenario())


def test_stop_with_nothing_running_reports_nothing():
    runs = Runs()
    runs.stop(None)
    assert not runs.stopped(None, 0.1)


def test_the_stopped_line_says_it_stopped_and_when():
    assert ui_text.stopped_done("12:00:03") == "■ Stopped: the run ended at 12:00:03, at its next step, and wrote nothing."
