"""A real local Ray with Serve, started per test module: two CPU replicas of the demo model.

Ray runs from the separate virtualenv that ``.ci/run`` builds (``.venv-ray``, or the interpreter
named by ``AUK_RAY_PYTHON``), through ``auk_app.serve.launch``: deploy/serve.yaml's application
with two fixed replicas on the CPU, each with this process's torch thread count (so a replica
sums in the same order as an in-process run) and a journal the tests read. Without the
virtualenv these tests skip with the reason, except under CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from auk_app.serve import launch
from auk_app.serve.launch import start_local, stop_local, wait_until_ready
from tests.ports import free_port

RAY_PYTHON = Path(os.environ.get("AUK_RAY_PYTHON", launch.RAY_PYTHON))
START_TIMEOUT_S = 300  # ~35 s on two idle cores


@pytest.fixture(scope="module")
def serve_cluster(tmp_path_factory):
    """``.url`` (the auk route), ``.journal`` (a dir of one JSON line per finished run per replica)."""
    if not RAY_PYTHON.is_file():
        reason = f"no Ray virtualenv at {RAY_PYTHON}; build it with `.ci/ray_venv` (or set AUK_RAY_PYTHON)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    import torch

    root = tmp_path_factory.mktemp("serve")
    journal = root / "journal"
    journal.mkdir()
    port, log = free_port(), root / "serve.log"
    # A replica admits two edits at once, so edits or windows sent together reach both replicas (the
    # proxy routes by queue lengths it saw last, and below that cap may send them all to one).
    process = start_local(port=port, log=log, python=RAY_PYTHON, num_cpus=4, replicas=2, cpu=True, replica_cpus=1,
                          threads=torch.get_num_threads(), max_batch=4, max_ongoing=2, journal=str(journal))
    url = f"http://127.0.0.1:{port}/auk"
    try:
        wait_until_ready(url, process, timeout=START_TIMEOUT_S, log=log)
        yield SimpleNamespace(url=url, journal=journal, log=log)
    finally:
        stop_local(process)
