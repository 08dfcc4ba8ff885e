"""``python app.py``: the documented options, and a clean start from an empty directory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.servers import stop, watch

OPTIONS = ("--host", "--port", "--share", "--mcp", "--auk-base", "--auk-flash", "--qwen", "--audex", "--xcodec", "--download",
           "--device", "--dtype", "--preload", "--default-model", "--auk-batch", "--auk-pack", "--no-compile")


def test_help_lists_every_option_and_the_defaults(app_command):
    done = subprocess.run([*app_command, "--help"], capture_output=True, text=True,
                          timeout=60, check=True)
    for option in OPTIONS:
        assert option in done.stdout, option
    for fact in ("127.0.0.1", "7860", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "AUK_BASE_DIR", "AUK_QWEN_DIR",
                 "XCODEC1_PATH", "hf download tencent/AuK", "autocast-bf16", "AUK_BATCH", "GRADIO_MCP_SERVER"):
        assert fact in " ".join(done.stdout.split()), fact


def test_auk_batch_comes_from_the_flag_then_the_environment(monkeypatch, capsys):
    from app import DEFAULT_AUK_BATCH, parse_args
    from auk_app.auk.batching import DEFAULT_MAX_BATCH

    monkeypatch.delenv("AUK_BATCH", raising=False)
    assert parse_args([]).auk_batch == DEFAULT_AUK_BATCH == DEFAULT_MAX_BATCH == 4
    monkeypatch.setenv("AUK_BATCH", "2")
    assert parse_args([]).auk_batch == 2 and parse_args(["--auk-batch", "8"]).auk_batch == 8
    for bad in ("0", "two"):
        with pytest.raises(SystemExit):
            parse_args(["--auk-batch", bad])
        assert "at least 1" in capsys.readouterr().err


def test_packed_shared_steps_are_a_flag_that_reaches_the_step_batcher():
    from app import parse_args
    from auk_app.service import Studio, StudioConfig

    assert parse_args([]).pack is False and parse_args(["--auk-pack"]).pack is True
    studio = Studio(StudioConfig(device="cpu", pack=True))
    pipeline = studio.pipeline(studio.entry("demo"))
    pipeline.load()
    assert pipeline.pack and pipeline.batcher.pack


def test_compiling_the_dit_follows_the_device_unless_the_flag_turns_it_off(tmp_path):
    from app import parse_args
    from auk_app.service import Studio, StudioConfig

    assert parse_args([]).compile is True and parse_args(["--no-compile"]).compile is False
    studio = Studio(StudioConfig(device="cpu"))
    assert studio.pipeline(studio.entry("demo")).compile is False  # the CPU default
    studio = Studio(StudioConfig(device="cpu", compile=True))
    pipeline = studio.pipeline(studio.entry("demo"))
    pipeline.load()
    blocks = [*pipeline._model.dit.transformer_blocks, *pipeline._model.dit.single_transformer_blocks]
    assert all(block._compiled_call_impl is not None for block in blocks)


def test_app_starts_serves_the_demo_warms_it_up_and_writes_nothing_where_it_runs(app_command, port, client_for,
                                                                                  tmp_path):
    """The page answers first; the demo models then load behind it, and the console says when."""
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
           "GRADIO_ANALYTICS_ENABLED": "False", "TMPDIR": str(tmp_path / "tmp")}
    server = subprocess.Popen(app_command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    console, warmed = watch(server)
    try:
        deadline = time.monotonic() + 150
        while True:
            if server.poll() is not None:
                pytest.fail(f"app.py exited with {server.returncode}:\n{''.join(console)}")
            try:
                client = client_for(f"http://127.0.0.1:{port}/")
                info = client.predict(api_name="/model_info")
                break
            except Exception:  # not listening yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        assert info["demo"] is True and info["default_model"] == "demo"
        assert warmed.wait(600), "".join(console)
        assert client.predict(api_name="/model_info")["loaded_model"] == "demo"  # loaded behind the page
    finally:
        stop(server)
    assert list(workdir.iterdir()) == []
    assert "AuK Studio serves AuK-Tiny (demo) (the embedded demo model" in "".join(console)  # says what it serves


def _start_refusal(capsys, monkeypatch, *argv: str) -> str:
    """app.py's main in this process: it must exit with status 2 and one line on stderr, never launch."""
    import gradio as gr

    def launch(*args, **kwargs):
        raise AssertionError("the app launched instead of refusing to start")

    monkeypatch.setattr(gr.Blocks, "launch", launch)
    sys.path.insert(0, str(REPO))
    try:
        from app import main
    finally:
        sys.path.remove(str(REPO))
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    err = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and err.startswith("AuK Studio cannot start: ") and "\n" not in err, err
    return err


@pytest.mark.parametrize("url, words", [
    ("http://127.0.0.1:99999", "Port out of range 0-65535"),
    ("http://[::1", "Invalid IPv6 URL"),
    ("ftp://gpu-host:8000", "is not an http(s) URL with a host and a port from 1 to 65535"),
])
def test_a_bad_audex_server_url_is_one_sentence_and_status_2(capsys, monkeypatch, port, url, words):
    assert words in _start_refusal(capsys, monkeypatch, "--audex-server", url, "--port", str(port))


def test_a_port_out_of_range_is_one_sentence_and_status_2(capsys, monkeypatch):
    message = _start_refusal(capsys, monkeypatch, "--port", "70000")
    assert "The port '70000' is not a port number from 1 to 65535" in message


def test_port_0_is_refused_not_served_on_7860(capsys, monkeypatch):
    message = _start_refusal(capsys, monkeypatch, "--port", "0")
    assert "The port '0' is not a port number from 1 to 65535" in message


@pytest.mark.parametrize("value, argv, words", [
    ("abc", [], "GRADIO_SERVER_PORT is 'abc', not a port number"),
    ("abc", ["--port", "7861"], "GRADIO_SERVER_PORT is 'abc', not a port number"),  # Gradio's import reads it anyway
    ("0", [], "The port '0' is not a port number from 1 to 65535"),
])
def test_a_bad_gradio_server_port_is_one_sentence_not_a_traceback_from_gradio(app_command, value, argv, words):
    """A fresh process: Gradio reads GRADIO_SERVER_PORT as it is imported, and died there (exit 1)."""
    done = subprocess.run([*app_command, *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GRADIO_SERVER_PORT": value})
    err = done.stderr.strip()
    assert done.returncode == 2 and "\n" not in err and err.startswith("AuK Studio cannot start: "), err
    assert words in err and done.stdout == ""


def test_a_port_in_use_is_one_sentence_and_status_2(capsys, monkeypatch, port):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        message = _start_refusal(capsys, monkeypatch, "--host", "127.0.0.1", "--port", str(port))
    assert f"Cannot serve on 127.0.0.1:{port}" in message and "choose another --port" in message


def test_a_port_our_last_server_left_in_time_wait_is_free(port):
    """Restarting the app right after it served: its port lingers in TIME_WAIT, which uvicorn's
    SO_REUSEADDR binds through; the start-up check must not call that port taken."""
    from app import parse_args, server_address

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server side closes first: its end of the pair enters TIME_WAIT
        client.close()
    assert server_address(parse_args(["--host", "127.0.0.1", "--port", str(port)])) == ("127.0.0.1", port)
