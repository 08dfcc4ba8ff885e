"""Shared test helpers: the reference fixtures and tiny checkpoints in the released layouts."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "reference"


def pytest_configure(config):
    """Before any worker, app or CLI of the run starts, the controller compiles (or loads) every
    librosa kernel the tests and the code they run use, under numba's cache lock: afterwards the
    processes of the run only read the cache (auk_app.jit_cache says why several writers crash)."""
    from auk_app import demo, jit_cache

    demo.register()  # the tests read AuK-Tiny and Audex-Tiny, and checkpoints of their kinds
    jit_cache.use_app_cache()  # in the environment: the workers and every process they start share it
    if hasattr(config, "workerinput"):
        return
    from auk_app.check import measures
    from training import measures as training_measures

    measures.warm_up()
    training_measures.warm_up()
    jit_cache.once("the tests' own librosa calls", _tests_own_kernels)


def _tests_own_kernels() -> None:
    """What tests call librosa for themselves: pitch shifts and time stretches (their inverse STFT),
    of float32 and of float64 clips."""
    from auk_app import jit_cache

    librosa = jit_cache.librosa()
    tone = np.sin(2 * np.pi * 220 * np.arange(12_000) / 24_000)
    for wav in (tone.astype(np.float32), tone):
        librosa.effects.pitch_shift(wav, sr=24_000, n_steps=2)
        librosa.effects.time_stretch(wav, rate=1.5)


@contextlib.contextmanager
def _flock(path: Path, mode: int):
    with open(path, "a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist, a test marked ``alone`` runs while no other test runs: it races a server
    (Stop before the server's stream ends), and the other worker's load can make the server's
    front end lag its engine by a whole stream. Other tests share the machine. The lock spans a
    test's setup and teardown, so a module's fixtures count too. A waiting ``alone`` test holds the
    turnstile, so tests that arrive after it wait for it rather than overtake it."""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # one process: nothing else runs
        return (yield)
    run = Path(item.config.option.basetemp).parent  # the run's folder, shared by its workers
    alone = item.get_closest_marker("alone") is not None
    with contextlib.ExitStack() as held:
        with _flock(run / "machine.turnstile", fcntl.LOCK_EX):
            held.enter_context(_flock(run / "machine.lock", fcntl.LOCK_EX if alone else fcntl.LOCK_SH))
        return (yield)


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


# Checks of what only a GPU runs (graph capture and replay); the logic around them runs on the CPU.
requires_cuda = pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA device")


def load_case(name: str):
    """(meta, tensors) of one reference case."""
    from safetensors.torch import load_file

    meta = json.loads((FIXTURES / f"{name}.json").read_text())
    tensors_file = FIXTURES / f"{name}.safetensors"
    return meta, (load_file(str(tensors_file)) if tensors_file.exists() else {})


def fixture_config(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())["config"]


def assert_matches_reference(got, want, *, atol=1e-5, rtol=1e-5):
    """The fixture README's elementwise bound |ours - ref| <= atol + rtol·|ref|."""
    assert got.shape == want.shape, (got.shape, want.shape)
    excess = (got - want).abs() - (atol + rtol * want.abs())
    assert bool((excess <= 0).all()), f"max excess over tolerance {excess.max().item():.3g}"


@pytest.fixture(scope="session")
def fixture_checkpoint(tmp_path_factory):
    """The reference DiT and VAE weights as an assembled checkpoint directory (real file layout)."""
    import torch
    from safetensors.torch import load_file, save_file

    directory = tmp_path_factory.mktemp("fixture_ckpt")
    dit = load_file(str(FIXTURES / "dit_weights_released.safetensors"))
    dit.update(layer_weights=torch.zeros(36), layer_scale=torch.ones(1))
    save_file(dit, str(directory / "auk.safetensors"))
    (directory / "vae.safetensors").write_bytes((FIXTURES / "vae_weights.safetensors").read_bytes())
    config = {
        "model_type": "auk",
        "dit": fixture_config("dit_config.json"),
        "vae": {"latent_dim": 64, "downsample_rate": 480, "target_sample_rate": 24000,
                "model_init_kwargs": fixture_config("vae_config.json")},
        "variant": "base",
        "defaults": {"nfe": 32, "cfg": 2.0, "sway": -1.0},
    }
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.fixture(scope="session")
def fixture_model(fixture_checkpoint):
    from auk_app.auk.checkpoint import load_auk_checkpoint

    return load_auk_checkpoint(fixture_checkpoint)


@pytest.fixture(scope="session")
def qwen_snapshot(tmp_path_factory):
    """A tiny random Qwen2.5-Omni-3B snapshot in the release's layout (tests/qwen_snapshot.py); read-only."""
    from tests.qwen_snapshot import write_tiny_qwen_snapshot

    return write_tiny_qwen_snapshot(tmp_path_factory.mktemp("qwen") / "Qwen2.5-Omni-3B")


@pytest.fixture(scope="module")
def qwen_conditioner(qwen_snapshot):
    """The snapshot's conditioner, one per module: a transcriber made from it gives it the thinker's head."""
    from auk_app.auk.qwen import QwenConditioner

    return QwenConditioner.from_pretrained(qwen_snapshot)
