"""The app's Serve client without a cluster: a bad URL, a deployment that is down (at start and later)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from auk_app.auk.request import EditRequest
from auk_app.serve.client import ServeError, check_url
from auk_app.service import Studio, StudioConfig
from tests.conftest import REPO


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("url", ["ftp://host:1/auk", "http://host:99999/auk", "http://:8000"])
def test_a_bad_url_is_one_sentence(url):
    with pytest.raises(ServeError, match="is not an http"):
        Studio(StudioConfig(device="cpu", auk_server=url))
    assert check_url("127.0.0.1:8000/auk/") == "http://127.0.0.1:8000/auk"


def test_a_deployment_that_is_down_is_one_sentence_not_a_hang():
    studio = Studio(StudioConfig(device="cpu", auk_server=f"http://127.0.0.1:{_closed_port()}/auk"))
    with pytest.raises(ServeError, match="cannot be reached") as raised:
        studio.auk_server.check()
    began = time.monotonic()
    request = EditRequest(instruction="Increase the volume by 6 dB.", audio=str(REPO / "assets/examples/speech.flac"))
    with pytest.raises(ServeError, match="cannot be reached"):  # gone after start-up: the edit says so
        studio.edit(request, "demo")
    assert time.monotonic() - began < 10
    assert "\n" not in str(raised.value)


@pytest.mark.slow
def test_the_app_does_not_start_against_a_deployment_that_is_down(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/auk"
    done = subprocess.run([sys.executable, str(REPO / "app.py"), "--auk-server", url, "--port", str(_closed_port())],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("AuK Studio cannot start: The AuK Serve deployment at")
    assert len(done.stderr.strip().splitlines()) == 1
