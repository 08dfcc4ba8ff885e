"""The background warm-up: the page answers while it runs and says what is still loading; once it
is done, the first runs find everything loaded."""

from __future__ import annotations

import threading
import urllib.request

from auk_app.ui import text as ui_text
from auk_app.ui.warming import Warming, startup_steps


def test_the_steps_run_in_order_and_a_failing_one_is_skipped():
    ran, finished = [], []
    release = threading.Event()

    def fail():
        raise RuntimeError("no such model")

    warming = Warming([("held", lambda: (release.wait(30), ran.append("held"))), ("broken", fail),
                       ("last", lambda: ran.append("last"))], on_done=finished.append)
    assert warming.pending() == ["held", "broken", "last"]
    warming.start()
    assert not warming.wait(0.3) and warming.pending() == ["held", "broken", "last"]
    release.set()
    assert warming.wait(30) and warming.pending() == [] and ran == ["held", "last"] and len(finished) == 1


def test_the_loading_line_names_what_is_left_and_is_empty_when_done():
    assert "Still loading:** AuK-Tiny (demo), the edit check." in ui_text.loading_line(
        ["AuK-Tiny (demo)", "the edit check"])
    assert ui_text.loading_line([]) == ""


def test_after_the_warm_up_the_demo_models_are_loaded(demo_dir, gradio_temp):
    from auk_app.service import Studio, StudioConfig

    studio = Studio(StudioConfig(demo_dir=demo_dir, device="cpu"))
    steps = startup_steps(studio)
    assert [name for name, _ in steps] == ["the figures", "AuK-Tiny (demo)", "Audex-Tiny (demo)", "the edit check"]
    warming = Warming(steps)
    warming.start()
    assert warming.wait(600)
    assert studio.info()["loaded_model"] == "demo" and studio.audex().sampler._thinker is not None


def test_the_page_answers_while_the_warm_up_runs(demo_dir, gradio_temp):
    from auk_app.service import Studio, StudioConfig
    from tests.app.conftest import launched

    release = threading.Event()
    warming = Warming([("a slow model", lambda: release.wait(60))])
    studio = Studio(StudioConfig(demo_dir=demo_dir, device="cpu"))
    with launched(studio, warming) as running:
        warming.start()
        try:
            with urllib.request.urlopen(running.url, timeout=30) as page:
                assert page.status == 200 and warming.pending() == ["a slow model"]
        finally:
            release.set()
    assert warming.wait(30)
