"""``python app.py``: the documented options, and a clean start from an empty directory."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

OPTIONS = ("--host", "--port", "--share", "--auk-base", "--auk-flash", "--qwen", "--audex", "--xcodec", "--download",
           "--device", "--dtype", "--preload", "--default-model", "--auk-batch", "--no-compile")


def test_help_lists_every_option_and_the_defaults(app_command):
    done = subprocess.run([*app_command, "--help"], capture_output=True, text=True,
                          timeout=60, check=True)
    for option in OPTIONS:
        assert option in done.stdout, option
    for fact in ("127.0.0.1", "7860", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "AUK_BASE_DIR", "AUK_QWEN_DIR",
                 "XCODEC1_PATH", "hf download tencent/AuK", "autocast-bf16", "AUK_BATCH"):
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


def test_app_starts_serves_the_demo_and_writes_nothing_where_it_runs(app_command, port, client_for, tmp_path):
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
           "GRADIO_ANALYTICS_ENABLED": "False", "TMPDIR": str(tmp_path / "tmp")}
    server = subprocess.Popen(app_command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        deadline = time.monotonic() + 150
        while True:
            if server.poll() is not None:
                pytest.fail(f"app.py exited with {server.returncode}:\n{server.stdout.read()}")
            try:
                info = client_for(f"http://127.0.0.1:{port}/").predict(api_name="/model_info")
                break
            except Exception:  # not listening yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        assert info["demo"] is True and info["default_model"] == "demo"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    console = server.stdout.read()
    assert list(workdir.iterdir()) == []
    assert "AuK Studio serves AuK-Tiny (demo) (the embedded demo model" in console  # says what it serves
