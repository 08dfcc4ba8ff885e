"""Whole long recordings edited in windows by the demo model on the CPU: speed, batching, memory, seams.

    python -m bench.bench_long [--minutes 1] [--repeats 2] [--memory-minutes 1 2 4] [--out FILE.json]

Prints one JSON object:

* ``seconds_per_minute``: wall seconds per minute of audio of a whole-file noise removal (held-out
  espeak-ng speech in white noise at 5 dB SNR) and volume edit (sustained tones under a slow
  swell), ``--minutes`` long, with the windows solved together through the step batcher
  (``batched``: the pipeline's max_batch at once) and one at a time (``one_at_a_time``), in one
  process after a warm-up, the modes taking turns and each keeping its fastest run;
  ``batched_speedup`` is one_at_a_time / batched from that run.
* ``memory``: for each of ``--memory-minutes``, in a fresh process, the volume edit's peak resident
  memory above what the process held before it (model loaded, recording made, one short edit run),
  and ``beyond_result_mb``: that peak less the result's own samples. It should not grow with the
  length: the source is held before, the result is counted, and the rest is a few windows.
* ``seams``: the largest seam-measure excess at the seams and at the control points between them
  (``training.seams``) of each batched result, against the clean speech and the tones.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from auk_app import demo
from auk_app.auk.pipeline import AuKPipeline
from auk_app.config import Limits
from auk_app.whole_file import edit_whole
from training.long_recordings import noisy_speech, slow_tones
from training.seams import control_points, seam_measures, seam_points
from bench.records import publish

REPO = Path(__file__).resolve().parents[1]
RATE = 24_000
TASKS = {
    "denoise": "Remove only the background noise, preserve everything else, and output audio of the same length.",
    "volume": "Decrease the volume by 6 dB.",
}
SEED = 5


def recording(task: str, seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """(the recording to edit, the reference its seams are judged against)."""
    if task == "denoise":
        return noisy_speech(seconds, seed=11)
    tones = slow_tones(seconds, seed=4)
    return tones, tones


def speed(pipeline: AuKPipeline, minutes: float, repeats: int) -> tuple[dict, dict]:
    """Seconds per minute of audio, batched and one at a time (each mode's fastest of ``repeats``
    runs, the modes taking turns so that a change in the machine's load meets both), and the
    batched results' seams."""
    edit_whole(pipeline, slow_tones(15, seed=1), RATE, TASKS["volume"], seed=SEED)  # warm-up
    modes = {"batched": pipeline.max_batch, "one_at_a_time": 1}
    per_minute, seams = {}, {}
    for task, instruction in TASKS.items():
        audio, reference = recording(task, minutes * 60)
        times = {mode: [] for mode in modes}
        for _ in range(repeats):
            for mode, concurrent in modes.items():
                began = time.perf_counter()
                result = edit_whole(pipeline, audio, RATE, instruction, seed=SEED, concurrent=concurrent)
                times[mode].append((time.perf_counter() - began) / minutes)
                if mode == "batched":
                    seams[task] = seam_summary(result, reference)
        fastest = {mode: round(min(runs), 2) for mode, runs in times.items()}
        per_minute[task] = {**fastest, "batched_speedup": round(fastest["one_at_a_time"] / fastest["batched"], 3)}
    return per_minute, seams


def seam_summary(result, reference: np.ndarray) -> dict:
    """Each measure's largest excess over the reference at the seams and at the control points."""
    windows = result.windows
    points = seam_points(windows.seams, windows.crossfade, windows.hop)
    controls = control_points(windows.seams, windows.crossfade, windows.hop)
    measured = seam_measures(result.wav, reference, points, controls)
    worst = lambda values: round(float(values.max()), 2)  # noqa: E731
    return {name: {"seams": worst(m.excess_at_seams), "controls": worst(m.excess_at_controls)}
            for name, m in measured.items()}


def _rss_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (the peak since the last reset) of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def memory_child(seconds: float) -> dict:
    """In this process: the volume edit's peak memory above what it held before (see the module docstring)."""
    demo.register()
    pipeline = AuKPipeline(demo.DEMO_DIR, limits=Limits(), device="cpu")
    audio, _ = recording("volume", seconds)
    edit_whole(pipeline, slow_tones(15, seed=1), RATE, TASKS["volume"], seed=SEED)  # loads and warms up
    before = _rss_mb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from now
    result = edit_whole(pipeline, audio, RATE, TASKS["volume"], seed=SEED)
    peak = _rss_mb("VmHWM") - before
    return {"minutes": round(seconds / 60, 2), "source_mb": round(audio.nbytes / 2**20, 1),
            "result_mb": round(result.wav.nbytes / 2**20, 1), "peak_above_before_mb": round(peak, 1),
            "beyond_result_mb": round(peak - result.wav.nbytes / 2**20, 1)}


def memory(minutes: list[float]) -> list[dict]:
    """:func:`memory_child` for each length, each in a fresh process."""
    rows = []
    for length in minutes:
        command = [sys.executable, "-m", "bench.bench_long", "--memory-child", str(length * 60)]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=1.0, help="length of the timed recordings")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each mode")
    parser.add_argument("--memory-minutes", type=float, nargs="*", default=[1.0, 2.0, 4.0])
    parser.add_argument("--memory-child", type=float, help=argparse.SUPPRESS)  # seconds: one memory run, here
    parser.add_argument("--out", type=Path, help="write the JSON here")
    args = parser.parse_args(argv)
    if args.memory_child is not None:
        print(json.dumps(memory_child(args.memory_child)))
        return
    began = time.perf_counter()
    demo.register()
    pipeline = AuKPipeline(demo.DEMO_DIR, limits=Limits(), device="cpu")
    per_minute, seams = speed(pipeline, args.minutes, args.repeats)
    result = {
        "date": datetime.date.today().isoformat(), "device": "cpu", "cpu_cores": os.cpu_count(),
        "machine": platform.machine(), "torch_threads": torch.get_num_threads(), "model": pipeline.checkpoint.name,
        "window_seconds": pipeline.checkpoint.capabilities.max_clip_seconds, "max_batch": pipeline.max_batch,
        "minutes": args.minutes, "repeats": args.repeats, "seconds_per_minute": per_minute, "seams": seams,
        "memory": memory(args.memory_minutes), "seconds": round(time.perf_counter() - began, 1),
    }  # fmt: skip
    publish(result, args.out)


if __name__ == "__main__":
    main()
