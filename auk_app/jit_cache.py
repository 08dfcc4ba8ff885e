"""librosa's numba kernels, compiled or loaded by one process at a time.

numba keeps what it compiles on disk (per function, an index and numbered data files) and takes
no lock between processes. Two processes that compile different signatures of one function at
once (the edit check's float32 pYIN, training's float64 one) can both take number 1, and the
index one writes then names the other's machine code: every later process that loads it dies
with signal 11, and keeps dying until the files are removed. So:

* the app keeps a cache folder of its own (:func:`cache_dir`: ``NUMBA_CACHE_DIR`` when set, else
  ``auk-studio/numba`` under the user's cache folder), put in the environment before librosa is
  imported (:func:`librosa`), so that the processes the app starts (CLIs, Serve replicas) share
  it and no program that knows nothing of its lock writes there;
* each user of librosa's lazily compiled kernels (pYIN's Viterbi, the inverse STFT's overlap-add)
  runs a short call of them once per process (:func:`once`), under one lock on that folder: the
  first process compiles and writes, the others wait, then only read. After that a process finds
  those kernels in memory and writes nothing.

Kernels with declared signatures need no lock: they compile when their librosa module is first
used, in the order declared, so every process numbers their files alike. A lock rather than a
cache folder per process: a fresh cache costs a minute of compiling on two busy cores, which every
process would pay again.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

CACHE_ENV = "NUMBA_CACHE_DIR"
LOCK_NAME = "compile.lock"

_ready: set[str] = set()  # the warm-ups this process has run
_guard = threading.RLock()  # reentrant: a caller's warm-up may go through code that asks for it again


def cache_dir() -> Path:
    """Where numba's cache lives for the app: ``NUMBA_CACHE_DIR`` when set, else the user's cache
    folder, else (a read-only home) the temporary folder."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for root in (home, Path(tempfile.gettempdir())):
        folder = root / "auk-studio" / "numba"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    raise OSError(f"No writable folder for numba's cache; set {CACHE_ENV} to one.")


def use_app_cache() -> Path:
    """Point numba (and every process started from here) at :func:`cache_dir`; its path."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[CACHE_ENV] = str(folder)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba read the environment when it was imported
        config.CACHE_DIR = str(folder)
    return folder


def once(name: str, warm: Callable[[], object]) -> None:
    """Run ``warm`` (a short call of the librosa kernels a caller uses, with the types it uses them
    with) under the cache's lock, the first time this process asks for ``name``."""
    with _guard:
        if name in _ready:
            return
        from filelock import FileLock

        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        _ready.add(name)  # before ``warm``: a warm-up through code that asks for ``name`` again goes on
        try:
            with FileLock(str(folder / LOCK_NAME)):
                warm()
        except BaseException:
            _ready.discard(name)
            raise


def librosa() -> ModuleType:
    """librosa, with numba's cache in the app's folder (:func:`use_app_cache`)."""
    use_app_cache()
    import librosa as module

    return module
