"""Edits per second at 1, 4 and 8 concurrent users: in process vs Ray Serve with 1 and 2 replicas.

    python -m bench.bench_serve [--quick] [--out bench/results/DATE-cpu-serve.json]

Each user is a thread that runs whole demo edits back to back through a Studio (planning in the
Studio, as the app does): the in-process one, or one whose ``--auk-server`` is a local Serve
deployment of deploy/serve.yaml started here from ``.venv-ray`` (``auk_app.serve.launch``) with
1, then 2 replicas. The machine's cores are split between the replicas (torch threads and Ray
CPUs), and the in-process Studio has them all; every engine batches up to 8 edits per DiT step.
The ratios are of the same run: ``serve_N / in_process`` at each user count. On one machine Serve
can only add overhead (HTTP, the proxy, a copy of the audio each way); what it buys is replicas
on more devices, which a CPU-only machine cannot show.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

import torch

from auk_app.auk.request import EditRequest
from auk_app.job import run_request
from auk_app.serve.launch import RAY_PYTHON, start_local, stop_local, wait_until_ready
from auk_app.service import Studio, StudioConfig
from bench.bench_batch import edits_per_s
from bench.records import publish
from tests.ports import free_port

REPO = Path(__file__).resolve().parents[1]
CLIP = str(REPO / "assets" / "examples" / "speech.flac")
USERS = (1, 4, 8)
MAX_BATCH = 8


class StudioEditor:
    """``edit(seed)``: one whole demo edit through ``studio`` (planning, the run, a region-less result)."""

    def __init__(self, studio: Studio):
        self.studio = studio

    def edit(self, seed: int):
        request = EditRequest(instruction="Increase the volume by 6 dB.", audio=CLIP, seed=seed)
        return run_request(self.studio, request, "demo")[0]


def measure(editor, *, edits_per_user: int, warmup_rounds: int) -> dict[str, float]:
    return {str(users): round(edits_per_s(editor, users, edits_per_user=edits_per_user, warmup_rounds=warmup_rounds), 3)
            for users in USERS}


def serve_rates(replicas: int, cores: int, **timing) -> tuple[dict[str, float], float]:
    """(edits/s per user count, start-up seconds) of a local deployment with ``replicas`` CPU replicas."""
    with tempfile.TemporaryDirectory() as root:
        port, log = free_port(), Path(root) / "serve.log"
        began = time.perf_counter()
        process = start_local(port=port, log=log, num_cpus=cores, replicas=replicas, cpu=True,
                              replica_cpus=cores / replicas, threads=max(1, cores // replicas),
                              max_batch=MAX_BATCH, max_ongoing=MAX_BATCH)
        url = f"http://127.0.0.1:{port}/auk"
        try:
            wait_until_ready(url, process, timeout=600, log=log)
            started = time.perf_counter() - began
            studio = Studio(StudioConfig(device="cpu", auk_server=url))
            return measure(StudioEditor(studio), **timing), started
        finally:
            stop_local(process)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 warm-up round and 2 timed edits per user")
    parser.add_argument("--out", type=Path, help="write the JSON here")
    args = parser.parse_args(argv)
    if not RAY_PYTHON.is_file():
        parser.error(f"no Ray virtualenv at {RAY_PYTHON}: build it with .ci/ray_venv")
    timing = dict(edits_per_user=2, warmup_rounds=1) if args.quick else dict(edits_per_user=4, warmup_rounds=2)
    cores = os.cpu_count() or 1
    began = time.perf_counter()
    rates = {"in_process": measure(StudioEditor(Studio(StudioConfig(device="cpu", auk_batch=MAX_BATCH))), **timing)}
    startup = {}
    for replicas in (1, 2):
        rates[f"serve_{replicas}"], startup[f"serve_{replicas}"] = serve_rates(replicas, cores, **timing)
    ratios = {f"{engine}/in_process": {users: round(rate / rates["in_process"][users], 3)
                                       for users, rate in rates[engine].items()}
              for engine in ("serve_1", "serve_2")}
    ratios["serve_2/serve_1"] = {users: round(rates["serve_2"][users] / rates["serve_1"][users], 3)
                                 for users in rates["serve_1"]}
    result = {
        "date": datetime.date.today().isoformat(), "device": "cpu", "cpu_cores": cores,
        "machine": platform.machine(), "torch_threads_in_process": torch.get_num_threads(),
        "model": "AuK-Tiny (demo)", "edit": "speech.flac, 'Increase the volume by 6 dB.', default recipe",
        "quick": args.quick, **timing, "max_batch": MAX_BATCH, "users": list(USERS),
        "edits_per_s": rates, "ratios": ratios, "serve_startup_s": {k: round(v, 1) for k, v in startup.items()},
        "seconds": round(time.perf_counter() - began, 1),
    }  # fmt: skip
    publish(result, args.out)


if __name__ == "__main__":
    main()
