"""transformers' classes imported by several threads at once (auk_app.transformers_import)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

# In a fresh process, three threads each reach transformers at once: the Audex thinker's module, the
# Qwen conditioner's, and the demo text encoder's reader (its tokenizer and config), as the warm-up,
# a validator and a first request do. transformers' lazy module is not safe for threads: without the
# lock one of them got "cannot import name 'AutoModel' from 'transformers'" on every try here.
PROBE = """
import threading
errors = []

def run(work):
    try:
        work()
    except Exception as exc:
        errors.append(repr(exc))

def thinker():
    import auk_app.audex.thinker

def qwen():
    import auk_app.auk.qwen

def reader():
    from auk_app.demo.minilm import MiniLMConditioner
    MiniLMConditioner.instruction_reader()

threads = [threading.Thread(target=run, args=(work,)) for work in (thinker, qwen, reader)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(errors)
"""


def test_threads_that_reach_transformers_at_once_all_get_its_classes():
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == "[]"
