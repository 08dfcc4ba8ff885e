"""A whole long recording edited in windows: in process vs its windows on Ray Serve with 1 and 2 replicas.

    python -m bench.bench_serve_long [--seconds 30] [--repeats 2] [--out bench/results/DATE-cpu-serve-long.json]

One whole-file noise removal (held-out espeak-ng speech in white noise at 5 dB SNR, ``--seconds``
long, AuK-Tiny's 6 s windows) through a Studio, as the app runs it: in process (its pipeline
batching 4 windows per DiT step), or with ``--auk-server`` on a local deployment of
deploy/serve.yaml started here from ``.venv-ray`` with 1, then 2 CPU replicas (4 per DiT step each;
the app sends replicas × 4 windows at a time and joins and decodes them itself). The machine's
cores are split between the replicas, and the in-process Studio has them all. Each engine runs a
short warm-up edit, then the recording ``--repeats`` times, keeping its fastest run (in process
both before and after the deployments); the ratios are of one run. On one machine two replicas
split the same cores; what the fan-out buys is windows on several devices at once, which a
CPU-only machine cannot show.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

from auk_app.job import EditJob
from auk_app.results import EditOrder
from auk_app.serve.launch import RAY_PYTHON, start_local, stop_local, wait_until_ready
from auk_app.service import Studio, StudioConfig
from tests.ports import free_port
from training.long_recordings import noisy_speech
from bench.records import publish

DENOISE = "Remove only the background noise, preserve everything else, and output audio of the same length."
MAX_BATCH = 4
RATE = 24_000


def timed_edits(studio: Studio, warmup: Path, recording: Path, repeats: int) -> tuple[float, dict]:
    """(the fastest of ``repeats`` whole edits of ``recording``, in seconds; the last one's delivery)."""
    def order(path: Path) -> EditOrder:
        values = {"audio": str(path), "instruction": DENOISE, "model": "demo", "seed": 5, "randomize_seed": False}
        return EditOrder.from_knobs(values, studio.config.limits)

    EditJob(studio, order(warmup)).run()
    fastest, delivered = float("inf"), None
    for _ in range(repeats):
        began = time.perf_counter()
        (delivered,), _ = EditJob(studio, order(recording)).run()
        fastest = min(fastest, time.perf_counter() - began)
    return fastest, delivered


def on_serve(replicas: int, cores: int, *paths: Path, repeats: int) -> tuple[float, object, float]:
    """(fastest seconds, the delivery, start-up seconds) on a local deployment of ``replicas`` CPU replicas."""
    with tempfile.TemporaryDirectory() as root:
        port, log = free_port(), Path(root) / "serve.log"
        began = time.perf_counter()
        process = start_local(port=port, log=log, num_cpus=cores, replicas=replicas, cpu=True,
                              replica_cpus=cores / replicas, threads=max(1, cores // replicas),
                              max_batch=MAX_BATCH, max_ongoing=2 * MAX_BATCH)
        url = f"http://127.0.0.1:{port}/auk"
        try:
            wait_until_ready(url, process, timeout=600, log=log)
            started = time.perf_counter() - began
            studio = Studio(StudioConfig(device="cpu", auk_server=url))
            return (*timed_edits(studio, *paths, repeats=repeats), started)
        finally:
            stop_local(process)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="the recording's length")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the JSON here")
    args = parser.parse_args(argv)
    if not RAY_PYTHON.is_file():
        parser.error(f"no Ray virtualenv at {RAY_PYTHON}: build it with .ci/ray_venv")
    cores, began = os.cpu_count() or 1, time.perf_counter()
    with tempfile.TemporaryDirectory() as root:
        warmup, recording = Path(root) / "warmup.wav", Path(root) / "recording.wav"
        sf.write(warmup, noisy_speech(8, seed=2)[0], RATE, subtype="FLOAT")
        sf.write(recording, noisy_speech(args.seconds, seed=11)[0], RATE, subtype="FLOAT")
        local = Studio(StudioConfig(device="cpu", auk_batch=MAX_BATCH))
        seconds, want = {}, None
        seconds["in_process"], want = timed_edits(local, warmup, recording, args.repeats)
        startup, replicas_ran, differs = {}, {}, {}
        for replicas in (1, 2):
            name = f"serve_{replicas}"
            seconds[name], got, startup[name] = on_serve(replicas, cores, warmup, recording, repeats=args.repeats)
            replicas_ran[name] = sorted(got.record["windows"]["replicas"].values(), reverse=True)
            differs[name] = float(np.abs(got.wav - want.wav).max())
        # In process again, after: a machine shared with other jobs is not equally busy all along.
        seconds["in_process"] = min(seconds["in_process"], timed_edits(local, warmup, recording, args.repeats)[0])
    result = {
        "date": datetime.date.today().isoformat(), "device": "cpu", "cpu_cores": cores,
        "machine": platform.machine(), "torch_threads_in_process": torch.get_num_threads(),
        "model": "AuK-Tiny (demo)", "edit": f"noise removal of {args.seconds:g} s of held-out noisy speech, seed 5",
        "windows": want.record["windows"]["count"], "repeats": args.repeats, "max_batch": MAX_BATCH,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "ratios": {f"{k}/in_process": round(v / seconds["in_process"], 3) for k, v in seconds.items()
                   if k != "in_process"},
        "windows_per_replica": replicas_ran, "max_abs_difference_from_in_process": differs,
        "serve_startup_s": {k: round(v, 1) for k, v in startup.items()},
        "total_seconds": round(time.perf_counter() - began, 1),
    }  # fmt: skip
    publish(result, args.out)


if __name__ == "__main__":
    main()
