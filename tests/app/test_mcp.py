"""``python app.py --mcp``: the public endpoints as MCP tools, called with the mcp SDK's own client.

The app runs as a real server process (the demo models, CPU) and the tests talk Streamable HTTP to
``/gradio_api/mcp/`` as an agent's MCP client does: list the tools, upload a clip the way Gradio's
upload tool does and edit it by its URL, generate a sound, fetch the results by their URLs, and get
the validators' sentences for bad values. Calls go both ways Gradio handles them: without a
progress token and with one.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from auk_app.config import Limits
from auk_app.knobs import AUDEX, EDIT, SUGGEST
from tests.conftest import REPO
from tests.ports import free_port
from tests.servers import stop, watch

pytestmark = pytest.mark.slow
TOOLS = {"edit_audio", "text_to_audio", "suggest_instruction", "inspect_audio", "model_info", "edit_batch"}
SR = 24_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``python app.py --mcp`` on a free port, once its warm-up is done (as the CLI's own test waits:
    a first run during the warm-up pays for loading, which is not what these tests time or test)."""
    root = tmp_path_factory.mktemp("mcp_app")
    (root / "tmp").mkdir()
    port = free_port()
    env = {**os.environ, "GRADIO_TEMP_DIR": str(root / "gradio"), "GRADIO_ANALYTICS_ENABLED": "False",
           "TMPDIR": str(root / "tmp")}
    env.pop("GRADIO_MCP_SERVER", None)  # the flag alone turns it on
    process = subprocess.Popen([sys.executable, str(REPO / "app.py"), "--mcp", "--port", str(port)], cwd=root,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    console, warmed = watch(process)
    try:
        deadline = time.monotonic() + 600
        while not warmed.wait(1):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"app.py --mcp did not warm up (status {process.poll()}):\n{''.join(console)}")
        url = f"http://127.0.0.1:{port}/"
        assert f"Streamable HTTP URL: {url}gradio_api/mcp/" in "".join(console)
        yield url
    finally:
        stop(process)


def _with_session(url: str, work):
    """``work(session)`` in an initialised MCP client session with the app's server."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run():
        async with streamable_http_client(url + "gradio_api/mcp/") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)

    return asyncio.run(run())


def _call(url: str, tool: str, arguments: dict, *, progress: list | None = None):
    """One tool call; with ``progress`` it sends a progress token, and the messages land there."""

    async def record(done, total, message):
        progress.append(message)

    return _with_session(url, lambda session: session.call_tool(
        tool, arguments, progress_callback=None if progress is None else record))


def _texts(result) -> list[str]:
    return [part.text for part in result.content if part.type == "text"]


def _upload(url: str, path: Path) -> str:
    """The clip uploaded as Gradio's upload tool does it, and the URL it hands an agent back."""
    with open(path, "rb") as handle:
        reply = httpx.post(url + "gradio_api/upload", files={"files": handle}, timeout=60)
    reply.raise_for_status()
    return f"{url}gradio_api/file={reply.json()[0]}"


def _wav(url: str, tmp_path: Path) -> tuple[np.ndarray, int]:
    reply = httpx.get(url, timeout=60)
    reply.raise_for_status()
    (tmp_path / "fetched.wav").write_bytes(reply.content)
    return sf.read(tmp_path / "fetched.wav")


@pytest.fixture(scope="module")
def voice(tmp_path_factory) -> Path:
    """0.6 s of a voice-like tone at 24 kHz."""
    t = np.arange(int(0.6 * SR)) / SR
    wav = 0.4 * np.sin(2 * np.pi * 180 * t) * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t))
    path = tmp_path_factory.mktemp("mcp_clips") / "voice.wav"
    sf.write(path, wav.astype(np.float32), SR, subtype="PCM_16")
    return path


def test_the_tools_are_the_public_endpoints_documented_from_the_knob_schema(server):
    tools = {tool.name: tool for tool in _with_session(server, lambda session: session.list_tools()).tools}
    assert set(tools) == TOOLS
    limits = Limits()
    for name, knobs in (("edit_audio", EDIT), ("text_to_audio", AUDEX), ("suggest_instruction", SUGGEST)):
        properties = tools[name].inputSchema["properties"]
        assert list(properties) == list(knobs.names), name
        for knob in knobs:
            assert properties[knob.name]["description"] == knob.describe(limits), (name, knob.name)
    assert tools["edit_audio"].description.startswith("Edit a clip, or generate speech/audio from the instruction")
    assert "RVQ-phase validity report" in tools["text_to_audio"].description
    assert "upload check" in tools["inspect_audio"].description
    assert tools["inspect_audio"].inputSchema["properties"]["audio"]["description"].startswith("The clip to check")
    # Files go in as URLs, and the description says how to get one for a local file.
    assert "url" in tools["edit_audio"].inputSchema["properties"]["audio"]["format"]
    assert "upload_file_to_gradio" in tools["edit_audio"].description


def test_text_to_audio_gives_the_wav_the_figure_the_report_and_the_manifest(server, tmp_path):
    """Without a progress token (Gradio 6.31 would pack the outputs into one repr and fail on the
    endpoint's gr.State): each output is its own content, JSON as JSON, files as URLs."""
    result = _call(server, "text_to_audio", {"caption": "A 440 Hz beep lasting one second", "max_seconds": 1,
                                             "seed": 3, "randomize_seed": False})
    assert not result.isError, _texts(result)
    assert [part.type for part in result.content] == ["text", "image", "text", "text", "text"]
    wav_url, figure_url, report, manifest = _texts(result)
    assert wav_url.startswith(server) and wav_url.endswith("_seed3.wav")
    assert figure_url.startswith(f"Image URL: {server}") and figure_url.endswith(".png")
    assert result.content[1].mimeType == "image/png"
    samples, rate = _wav(wav_url, tmp_path)
    assert rate == 16_000 and abs(len(samples) / rate - 1.0) < 0.05
    report, manifest = json.loads(report), json.loads(manifest)
    assert report["phase_valid"] is True and report["seconds"] == pytest.approx(1.0)
    assert manifest["caption"] == "A 440 Hz beep lasting one second" and manifest["seed"] == 3
    assert manifest["kind"] == "audex_text_to_audio" and manifest["report"] == report


def test_edit_audio_edits_an_uploaded_clip_by_its_url_and_reports_progress(server, voice, tmp_path):
    """The URL Gradio's upload tool hands back from an app on this machine (127.0.0.1, which Gradio's
    SSRF guard refuses to fetch) reaches the edit as the uploaded file; with a progress token the
    queue's and the steps' progress arrive as notifications."""
    progress: list[str] = []
    result = _call(server, "edit_audio", {"audio": _upload(server, voice), "instruction": "Decrease the volume by "
                                          "10 dB.", "nfe": 4, "seed": 7, "randomize_seed": False}, progress=progress)
    assert not result.isError, _texts(result)
    wav_url, figure_url, manifest, check_line, table, wavs = _texts(result)
    samples, rate = _wav(wav_url, tmp_path)
    assert rate == SR and len(samples) == sf.info(voice).frames  # an edit keeps the source's length
    manifest = json.loads(manifest)
    assert manifest["seed"] == 7 and manifest["requested"]["instruction"] == "Decrease the volume by 10 dB."
    assert manifest["source"]["file"] == "voice.wav" and manifest["check"]["display"] == check_line
    assert check_line.startswith("asked −10 dB · got ")
    assert json.loads(table)[0]["seed"] == 7 and json.loads(wavs) == [wav_url]
    assert figure_url.endswith(".png")
    assert any("Sampling: step 2 of 4" in (message or "") for message in progress), progress


def test_a_bad_value_is_refused_with_the_validators_sentence(server, voice):
    for tool, arguments, words in [
        ("edit_audio", {"instruction": "Decrease the volume by 10 dB.", "seconds": 1, "nfe": 100},
         "nfe (Euler steps) must be a whole number from 1 to 64; got 100."),
        ("text_to_audio", {"caption": "A beep", "top_k": 0}, "top_k must be a whole number from 1 to 8192"),
        ("edit_audio", {"instruction": "Decrease the volume by 10 dB."},
         "Without a source clip the model cannot infer a duration"),
    ]:
        result = _call(server, tool, arguments)
        assert result.isError and words in " ".join(_texts(result)), (tool, _texts(result))


def test_a_url_of_a_file_the_app_does_not_serve_is_not_read(server, voice):
    """Only files the file route serves (Gradio's upload folder) are read in place; a URL of any other
    file of this machine goes to Gradio's fetch, whose SSRF guard refuses it, so the call fails
    rather than reads it (an unreadable file would have been checked and given a verdict)."""
    for path in (voice, REPO / "app.py"):
        result = _call(server, "inspect_audio", {"audio": f"{server}gradio_api/file={path}"})
        assert result.isError, (path, _texts(result))


def test_the_helpers_answer_as_tools(server, voice):
    info = json.loads(_texts(_call(server, "model_info", {}))[0])
    assert info["demo"] is True and "demo" in info["available_models"]
    found = json.loads(_texts(_call(server, "inspect_audio", {"audio": _upload(server, voice)}))[0])
    assert found["verdict"] == "ok" and found["duration_s"] == pytest.approx(0.6)


def test_the_environment_variable_gradio_reads_turns_it_on_too(demo_dir, gradio_temp, monkeypatch):
    """GRADIO_MCP_SERVER=true without the flag: Gradio's server, which serve_tools then sets right."""
    from auk_app.service import Studio, StudioConfig
    from auk_app.ui.mcp_tools import serve_tools
    from tests.app.conftest import launched

    monkeypatch.setenv("GRADIO_MCP_SERVER", "true")
    with launched(Studio(StudioConfig(demo_dir=demo_dir, device="cpu"))) as running:
        assert serve_tools(running.demo)
        tools = _with_session(running.url, lambda session: session.list_tools()).tools
    assert {tool.name for tool in tools} == TOOLS
    monkeypatch.delenv("GRADIO_MCP_SERVER")
    with launched(Studio(StudioConfig(demo_dir=demo_dir, device="cpu"))) as running:
        assert not serve_tools(running.demo)  # no server, nothing to set right
        assert httpx.get(running.url + "gradio_api/mcp/", timeout=30).status_code == 404

