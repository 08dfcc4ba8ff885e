"""A real vLLM server (CPU) with the Audex plugin, serving the app's demo snapshot, per session.

The server runs from the separate virtualenv that ``.ci/run`` builds (``.venv-vllm``, or the
interpreter named by ``AUDEX_VLLM_PYTHON``): vLLM pins another transformers than the app. Without
it these tests skip with the reason, except under CI (``CI`` set), where a missing engine fails.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from auk_app.demo.audex_snapshot import shared_demo_snapshot
from auk_app.audex_vllm.launch import start_server, wait_until_ready
from auk_app.audex_vllm.served_model import write_served_model
from tests.conftest import REPO
from tests.ports import free_port

VLLM_PYTHON = Path(os.environ.get("AUDEX_VLLM_PYTHON", REPO / ".venv-vllm" / "bin" / "python"))
START_TIMEOUT_S = 600  # ~100 s on two idle cores; the shared CI machine can be several times slower


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """``(url, process)`` of a server on the Studio's own demo snapshot, in float32 (the in-process
    sampler's dtype on CPU)."""
    if not VLLM_PYTHON.is_file():
        reason = (f"no vLLM virtualenv at {VLLM_PYTHON}; build it with `.ci/vllm_venv` "
                  "(or set AUDEX_VLLM_PYTHON)")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("audex_vllm")
    served = write_served_model(shared_demo_snapshot().audex_root, root / "served")
    port, log = free_port(), root / "server.log"
    process = start_server(VLLM_PYTHON, served, port=port, log=log,
                           extra=("--dtype", "float32", "--max-model-len", "8192", "--enforce-eager",
                                  "--gpu-memory-utilization", "0.1"))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(url, process, timeout=START_TIMEOUT_S, log=log)
        yield url, process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except Exception:
                os.killpg(process.pid, signal.SIGKILL)
