"""numba's cache shared by processes that compile librosa's kernels at once (auk_app.jit_cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

# A process of the app (the edit check's float32 pYIN) beside one of training (float64 pYIN and
# YIN), as the test suite's workers and the CLIs and apps they start are: each calls pYIN for the
# first time once every process of its round has started, in the order it is given.
FIRST_CALLS = """
import json, pathlib, sys, threading, time
import numpy as np
from auk_app.check.measures import Clip
from training.measures import f0_track

rate = 16000
tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)


def check():
    # two checks at once, as two edits' are: one clip's pitch beside another's level contour
    noise = np.random.default_rng(0).standard_normal(rate).astype(np.float32)
    other = threading.Thread(target=lambda: Clip(noise, rate).contour)
    other.start()
    pitch = Clip(tone.astype(np.float32), rate).median_f0
    other.join()
    return pitch


calls = {"check": check, "training": lambda: np.nanmedian(f0_track(tone, rate))}
gate = pathlib.Path(sys.argv[2])
(gate / sys.argv[3]).touch()
while not (gate / "go").exists():
    time.sleep(0.01)
print(json.dumps({name: round(float(calls[name]()), 3) for name in sys.argv[1].split(",")}))
"""

# A later process: the same numbers, then other clips (lengths, a strided view, float64, silence),
# which must find every kernel in memory: the cache's files are listed before and after.
AGAIN = """
import json, os, sys
from pathlib import Path
import numpy as np
from auk_app.check.measures import Clip
from training.measures import f0_track

def files():
    root = Path(os.environ["NUMBA_CACHE_DIR"])
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*.nb*"))

rate = 16000
tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)
found = {"check": round(float(Clip(tone.astype(np.float32), rate).median_f0), 3),
         "training": round(float(np.nanmedian(f0_track(tone, rate))), 3)}
before = files()
noise = np.random.default_rng(0).standard_normal(3 * 24000)
for clip in (noise, noise[::2], noise.astype(np.float32), np.zeros(8000), tone[:5000]):
    Clip(clip, 24000).measure_all()
    f0_track(clip, 24000)
print(json.dumps({"found": found, "cache_files": len(before), "written_after_ready": files() != before}))
"""


ROUND_SECONDS = 480  # a round takes about a minute on two busy cores: one process compiles, three load


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}


def _round(cache: Path, gate: Path, orders: list[str]) -> list[subprocess.CompletedProcess]:
    """The processes of one round, started together and released at once."""
    gate.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_CALLS, order, str(gate), f"ready-{i}"], cwd=REPO,
                              env=_env(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, order in enumerate(orders)]
    deadline = time.monotonic() + ROUND_SECONDS
    while len(list(gate.glob("ready-*"))) < len(orders) and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.05)
    (gate / "go").touch()
    try:
        outputs = [proc.communicate(timeout=max(1.0, deadline - time.monotonic())) for proc in procs]
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.kill()
        raise AssertionError(f"a round of first calls did not end within {ROUND_SECONDS} s: a deadlock") from None
    return [subprocess.CompletedProcess(proc.args, proc.returncode, *out) for proc, out in zip(procs, outputs)]


@pytest.mark.slow
@pytest.mark.alone  # four processes compiling at once take both cores: a server beside them would starve
def test_processes_compiling_pyin_at_once_leave_a_cache_every_later_process_loads(tmp_path):
    """On a fresh cache, four processes call pYIN for the first time at once, two the check's
    first and two training's first (the order in which each numbers its kernels' files), each
    check two measures in two threads; a process started afterwards gets the same numbers without
    a crash, and writes nothing to the cache. Without a lock, one round in three or so left an
    index naming the other signature's machine code, and every later process died with signal 11:
    three rounds make the race likely. Two threads of one process met the lock while holding a
    measure's own (functools.cached_property's lock is one for every instance) and waited on each
    other for ever: the rounds have a deadline."""
    for trial in range(3):
        cache = tmp_path / f"numba-{trial}"
        procs = _round(cache, tmp_path / f"gate-{trial}", ["check,training", "training,check"] * 2)
        assert [p.returncode for p in procs] == [0] * 4, [p.stderr[-2000:] for p in procs if p.returncode]
        first = [json.loads(p.stdout) for p in procs]
        assert all(f == first[0] for f in first), first
        again = subprocess.run([sys.executable, "-c", AGAIN], cwd=REPO, env=_env(cache), capture_output=True,
                               text=True, timeout=600)
        assert again.returncode == 0, (trial, again.returncode, again.stderr[-2000:])
        later = json.loads(again.stdout)
        assert later["found"] == first[0]
        assert later["cache_files"] > 0  # the cache was used, not bypassed
        assert not later["written_after_ready"]


def test_a_warm_up_runs_once_a_process_even_when_it_asks_for_itself(tmp_path, monkeypatch):
    from auk_app import jit_cache

    monkeypatch.setenv(jit_cache.CACHE_ENV, str(tmp_path))
    calls = []

    def warm():
        calls.append(1)
        jit_cache.once("test: itself", warm)  # a warm-up through code that asks for it again goes on

    jit_cache.once("test: itself", warm)
    jit_cache.once("test: itself", warm)
    assert calls == [1]
    assert (tmp_path / jit_cache.LOCK_NAME).exists()


def test_a_failed_warm_up_is_tried_again(tmp_path, monkeypatch):
    from auk_app import jit_cache

    monkeypatch.setenv(jit_cache.CACHE_ENV, str(tmp_path))
    attempts = []

    def warm():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first try")

    with pytest.raises(RuntimeError):
        jit_cache.once("test: fails first", warm)
    jit_cache.once("test: fails first", warm)
    assert len(attempts) == 2


def test_the_cache_is_the_apps_own_folder_unless_numba_is_told_otherwise(tmp_path, monkeypatch):
    from auk_app import jit_cache

    monkeypatch.delenv(jit_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert jit_cache.cache_dir() == tmp_path / "cache" / "auk-studio" / "numba"
    monkeypatch.setenv(jit_cache.CACHE_ENV, str(tmp_path / "mine"))
    assert jit_cache.cache_dir() == tmp_path / "mine"
