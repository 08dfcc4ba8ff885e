"""How long the app takes to answer, to finish warming up, and to run each tab the first and the
second time, as ratios against ``import torch, gradio`` timed in a fresh process in the same round.

    python -m bench.bench_startup [--rounds 3] [--cold] [--runs-from ready|answer] [--out FILE]
    python -m bench.bench_startup --table    # docs/running.md's table, from the newest records

Each round times the baseline (``python -c "import torch, gradio"``), then starts ``python app.py``
on a free port in the same environment and times, from its start:

* answer: its page answers (HTTP 200 on ``/``);
* ready: it prints that its background warm-up is done (the page's "Still loading" line is gone);
* each tab's first and second run through gradio_client, started at ``--runs-from`` (ready, as a
  person who waits for the page's line; answer, as one who clicks at once and waits for the
  warm-up inside the run): the Edit tab's example clip edited by two instructions, two captions
  the Audex-Tiny demo makes (Text to audio tab) and ``/inspect_audio`` of the clip (API tab).

``--cold`` gives both processes of each round empty folders for numba's cache, matplotlib's,
Gradio's and Python's temp files and Python's bytecode (``PYTHONPYCACHEPREFIX``): nothing compiled
by a previous start is reused, as on a fresh install; the baseline then compiles its bytecode too.
Without it they use the environment's caches, after one unmeasured start. Medians over rounds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[1]
CLIP = REPO / "assets" / "examples" / "speech.flac"
BASELINE = "import torch, gradio"
READY_LINE = "Warm-up done"
START_TIMEOUT_S = 600
# (tab, endpoint, the first run's inputs, the second run's): two requests, not one twice, so no cache
# of the first (the instruction's encoding) serves the second.
RUNS = (
    ("edit", "/edit_audio", {"instruction": "Decrease the volume by 10 dB.", "seed": 1},
     {"instruction": "Increase the volume by 4 dB.", "seed": 2}),
    ("text_to_audio", "/text_to_audio", {"caption": "A 440 Hz beep lasting 0.5 seconds", "seed": 1},
     {"caption": "A 1000 Hz beep lasting 0.5 seconds", "seed": 2}),
    ("inspect_audio", "/inspect_audio", {}, {}),
)


def environment(root: Path | None) -> dict[str, str]:
    """The processes' environment: with ``root``, every cache a start could reuse in a fresh folder under it."""
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    if root is not None:
        for name in ("NUMBA_CACHE_DIR", "MPLCONFIGDIR", "GRADIO_TEMP_DIR", "TMPDIR", "PYTHONPYCACHEPREFIX"):
            folder = Path(tempfile.mkdtemp(prefix=name.lower() + "_", dir=root))
            env[name] = str(folder)
    return env


def time_baseline(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", BASELINE], env=env, check=True, cwd=REPO)
    return time.perf_counter() - started


class App:
    """``python app.py`` on a free port; ``answer`` and ``ready`` are seconds from its start."""

    def __init__(self, env: dict[str, str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self._ready = threading.Event()
        self.ready: float | None = None
        self.log: list[str] = []
        self.started = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "app.py", "--port", str(self.port)], cwd=REPO, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.answer = self._wait_for_page()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.log.append(line.rstrip())
            if READY_LINE in line and self.ready is None:
                self.ready = time.perf_counter() - self.started
                self._ready.set()

    def _wait_for_page(self) -> float:
        while time.perf_counter() - self.started < START_TIMEOUT_S:
            if self.process.poll() is not None:
                raise RuntimeError("the app exited:\n" + "\n".join(self.log[-20:]))
            try:
                with urllib.request.urlopen(self.url, timeout=5) as reply:
                    if reply.status == 200:
                        return time.perf_counter() - self.started
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"the page did not answer within {START_TIMEOUT_S} s")

    def wait_until_ready(self) -> float:
        if not self._ready.wait(START_TIMEOUT_S):
            raise TimeoutError("the warm-up did not finish:\n" + "\n".join(self.log[-20:]))
        return self.ready

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def time_runs(url: str, downloads: Path) -> dict[str, list[float]]:
    """Each tab's first and second run, in seconds, in the order of RUNS."""
    from gradio_client import Client, handle_file

    client = Client(url, verbose=False, download_files=str(downloads))
    times = {}
    for tab, endpoint, *inputs in RUNS:
        times[tab] = []
        for given in inputs:
            extra = {"randomize_seed": False} if "seed" in given else {}
            audio = {"audio": handle_file(str(CLIP))} if tab != "text_to_audio" else {}
            started = time.perf_counter()
            client.predict(**audio, **given, **extra, api_name=endpoint)
            times[tab].append(round(time.perf_counter() - started, 3))
    return times


def one_round(cold: bool, runs_from: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as scratch:
        root = Path(scratch)
        baseline = time_baseline(environment(root if cold else None))
        app = App(environment(root if cold else None))
        try:
            ready = app.wait_until_ready() if runs_from == "ready" else None
            runs = time_runs(app.url, root / "downloads")
            ready = app.wait_until_ready()
        finally:
            app.stop()
    return {"baseline_s": round(baseline, 3), "answer_s": round(app.answer, 3), "ready_s": round(ready, 3),
            "runs_s": runs}


def summary(rounds: list[dict]) -> dict:
    """Medians over rounds of each time and of each ratio, the ratios taken round by round."""
    def median(values):
        return round(statistics.median(values), 3)

    tabs = rounds[0]["runs_s"]
    return {
        "baseline_s": median([r["baseline_s"] for r in rounds]),
        "answer_s": median([r["answer_s"] for r in rounds]),
        "ready_s": median([r["ready_s"] for r in rounds]),
        "answer_vs_baseline": median([r["answer_s"] / r["baseline_s"] for r in rounds]),
        "ready_vs_baseline": median([r["ready_s"] / r["baseline_s"] for r in rounds]),
        "first_s": {tab: median([r["runs_s"][tab][0] for r in rounds]) for tab in tabs},
        "second_s": {tab: median([r["runs_s"][tab][1] for r in rounds]) for tab in tabs},
        "first_vs_second": {tab: median([r["runs_s"][tab][0] / r["runs_s"][tab][1] for r in rounds]) for tab in tabs},
    }


RESULTS = REPO / "bench" / "results"
# The records the table shows, by what names them, in its columns' order.
COLUMNS = (("cold", "cold, runs once warmed up"), ("warm", "warm, runs once warmed up"),
           ("cold-at-once", "cold, runs as soon as the page answers"))
TABS = (("edit", "edit (Edit tab)"), ("text_to_audio", "text to audio"), ("inspect_audio", "/inspect_audio (API tab)"))


def newest_records() -> dict[str, dict]:
    """The newest record of each column: ``DATE-cpu-startup-<column>.json`` in bench/results."""
    found = {}
    for column, _ in COLUMNS:
        paths = sorted(RESULTS.glob(f"*-cpu-startup-{column}.json"))
        if paths:
            found[column] = {"file": paths[-1].name, **json.loads(paths[-1].read_text())}
    return found


def table(records: dict[str, dict]) -> str:
    """Medians of each record as a Markdown table: times, and ratios in parentheses."""
    shown = [(column, title) for column, title in COLUMNS if column in records]

    def row(label: str, cell) -> str:
        cells = (cell(records[column]["median"], records[column]) for column, _ in shown)
        return f"| {label} | " + " | ".join(cells) + " |"

    def runs(tab: str):
        return lambda m, _: f"{m['first_s'][tab]:.2f} · {m['second_s'][tab]:.2f} s ({m['first_vs_second'][tab]:.2f}×)"

    return "\n".join([
        "| | " + " | ".join(title for _, title in shown) + " |", "|---|" + "---|" * len(shown),
        row("rounds (medians below)", lambda m, record: str(len(record["rounds"]))),
        row(f"`{BASELINE}` in a fresh process", lambda m, _: f"{m['baseline_s']:.1f} s"),
        row("the page answers", lambda m, _: f"{m['answer_s']:.1f} s ({m['answer_vs_baseline']:.2f}×)"),
        row("the warm-up is done", lambda m, _: f"{m['ready_s']:.1f} s ({m['ready_vs_baseline']:.2f}×)"),
        *(row(f"{label}: first · second run", runs(tab)) for tab, label in TABS),
    ])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="no caches: fresh numba, matplotlib, Gradio, temp "
                                                            "and bytecode folders for every process")
    parser.add_argument("--runs-from", choices=("ready", "answer"), default="ready",
                        help="start the first runs once the warm-up is done (ready) or as soon as the page answers")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--table", action="store_true", help="print docs/running.md's table from the newest records")
    args = parser.parse_args(argv)
    if args.table:
        print(table(newest_records()))
        return {}
    if not args.cold:
        one_round(cold=False, runs_from="ready")  # fills the environment's caches; not counted
    rounds = []
    for number in range(args.rounds):
        rounds.append(one_round(args.cold, args.runs_from))
        print(f"round {number + 1}: {json.dumps(rounds[-1])}", flush=True)
    record = {
        "bench": "startup", "date": datetime.date.today().isoformat(), "cold": args.cold, "runs_from": args.runs_from,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "baseline": BASELINE,
        "rounds": rounds, "median": summary(rounds),
    }
    print(json.dumps(record["median"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(record, indent=2) + "\n")
    return record


if __name__ == "__main__":
    main()
