"""Shared Audex test fixtures: one tiny demo snapshot and its pipeline per session."""

import pytest
import torch

from auk_app.demo.audex_snapshot import write_demo_snapshot
from auk_app.audex.pipeline import AudexPipeline


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Run each Audex test module on one intra-op thread, then restore the setting.

    The tiny models do microseconds of work per op, so a second thread only adds hand-offs; on a
    shared 2-core machine it makes the sampling tests ~10x slower (1 s -> 10 s).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def demo_snapshot(tmp_path_factory):
    return write_demo_snapshot(tmp_path_factory.mktemp("audex_demo"))


@pytest.fixture(scope="session")
def pipeline(demo_snapshot) -> AudexPipeline:
    """The demo pipeline on CPU (float32), both models loaded; shared read-only by the tests."""
    return AudexPipeline.from_paths(demo_snapshot.audex_root, demo_snapshot.xcodec_dir, device="cpu").load()
