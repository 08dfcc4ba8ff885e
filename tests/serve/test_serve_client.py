"""The app's Serve client without a cluster: a bad URL, a deployment that is down (at start and
later), a replica that goes silent."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from auk_app.auk.request import EditRequest
from auk_app.serve.client import ServeError, ServeRunner, check_url
from auk_app.service import Studio, StudioConfig
from tests.conftest import REPO
from tests.ports import free_port

VOLUME_EDIT = EditRequest(instruction="Increase the volume by 6 dB.", audio=str(REPO / "assets/examples/speech.flac"))


@pytest.mark.parametrize("url", ["ftp://host:1/auk", "http://host:99999/auk", "http://:8000"])
def test_a_bad_url_is_one_sentence(url):
    with pytest.raises(ServeError, match="cannot be used: it"):
        Studio(StudioConfig(device="cpu", auk_server=url))
    assert check_url("127.0.0.1:8000/auk/") == "http://127.0.0.1:8000/auk"


def test_a_refused_url_is_named_by_its_host_never_its_credentials():
    with pytest.raises(ServeError) as refused:
        check_url("http://user:secret@gpu-host:99999/auk?key=x")
    assert "(gpu-host)" in str(refused.value) and "secret" not in str(refused.value)


def test_a_deployment_that_is_down_is_one_sentence_not_a_hang():
    studio = Studio(StudioConfig(device="cpu", auk_server=f"http://127.0.0.1:{free_port()}/auk"))
    with pytest.raises(ServeError, match="cannot be reached") as raised:
        studio.auk_server.check()
    began = time.monotonic()
    with pytest.raises(ServeError, match="cannot be reached"):  # gone after start-up: the edit says so
        studio.edit(VOLUME_EDIT, "demo")
    assert time.monotonic() - began < 10
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("down", [True, False], ids=["deployment-down", "bad-url"])
def test_the_app_does_not_start_without_its_deployment(capsys, monkeypatch, down):
    """app.py's main in this process (as tests/app/test_cli.py runs it): status 2 and one line, never a launch."""
    import gradio as gr

    def launch(*args, **kwargs):
        raise AssertionError("the app launched instead of refusing to start")

    monkeypatch.setattr(gr.Blocks, "launch", launch)
    monkeypatch.syspath_prepend(str(REPO))
    from app import main

    url = f"http://127.0.0.1:{free_port()}/auk" if down else "http://127.0.0.1:99999/auk"
    monkeypatch.setenv("AUK_SERVER_URL", url)  # the environment variable, as the flag's default
    with pytest.raises(SystemExit) as exited:
        main(["--port", str(free_port())])
    err = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and "\n" not in err, err
    assert err.startswith("AuK Studio cannot start: The AuK Serve")
    assert ("cannot be reached" if down else "cannot be used: its host or port") in err


class _SilentReplica(BaseHTTPRequestHandler):
    """Answers an edit with its start line, then says nothing until the test ends."""

    posts = 0
    release = threading.Event()

    def do_POST(self):  # noqa: N802 (http.server's name)
        type(self).posts += 1
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/x-ndjson")
        self.end_headers()
        self.wfile.write(b'{"event": "start", "replica": "silent"}\n')
        self.wfile.flush()
        self.release.wait(30)

    def log_message(self, *args):
        pass


def test_a_silent_replica_is_given_up_with_its_sentence_and_not_sent_again():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SilentReplica)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/auk"
        studio = Studio(StudioConfig(device="cpu", auk_server=url))
        studio.auk_server = ServeRunner(url, idle_timeout=1.0, retry_pause=0.1)
        began = time.monotonic()
        with pytest.raises(ServeError, match="sent nothing for 1 s, so the edit was given up"):
            studio.edit(VOLUME_EDIT, "demo")
        assert time.monotonic() - began < 10 and _SilentReplica.posts == 1
    finally:
        _SilentReplica.release.set()
        server.shutdown()
