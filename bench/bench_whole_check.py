"""What the edit check of a whole long recording costs beside its edit, on the demo model on the CPU.

    python -m bench.bench_whole_check [--minutes 59] [--out FILE.json]

A ``--minutes`` long recording of sustained tones (a 16 kHz mono WAV, the kind of file an hour fits
the upload cap as) is edited whole by "Decrease the volume by 6 dB." through the edit job, as the
app runs it, twice in one process:

* ``full``: the edit's own seconds (its record's windows and decode), the check's seconds, their
  ratio (``check_share``; the bar is 0.25), the peak resident memory the check adds above the
  memory held when it starts (its "check" phase; sampled every 50 ms; the bar is 1 GB), and beside
  it what the rest after the decode adds (joining the windows' result, writing it), the process's
  memory at rest before the edit and its peak over the whole run;
* ``stopped``: Stop pressed 0.5 s into the check (the run's last decode step reported): the seconds
  until the job gave up (the bar is 5 s), and that nothing was delivered.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from auk_app import dsp
from auk_app.errors import Cancelled
from auk_app.job import EditJob
from auk_app.results import EditOrder
from auk_app.service import Studio, StudioConfig
from bench.records import publish
from training.long_recordings import slow_tones

INSTRUCTION = "Decrease the volume by 6 dB."


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _Watch:
    """The phases the job reports, and the process's memory sampled every 50 ms: its peak over the
    run, from the moment the edit is decoded, and during the check."""

    def __init__(self) -> None:
        self.decoded_at: float | None = None
        self.rest_mb = self.peak_mb = _rss_mb()
        self.rss_at_decode = self.peak_after_decode = 0.0
        self.rss_at_check = self.peak_in_check = 0.0
        self._checking = False
        self._done = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def progress(self, phase: str, done: int, total: int) -> None:
        if phase == "decode" and done == total and self.decoded_at is None:
            self.decoded_at = time.perf_counter()
            self.rss_at_decode = self.peak_after_decode = _rss_mb()
        if phase == "check":
            self._checking = done < total
            if self._checking:
                self.rss_at_check = self.peak_in_check = _rss_mb()

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            rss = _rss_mb()
            self.peak_mb = max(self.peak_mb, rss)
            if self.decoded_at is not None:
                self.peak_after_decode = max(self.peak_after_decode, rss)
            if self._checking:
                self.peak_in_check = max(self.peak_in_check, rss)

    def stop(self) -> None:
        self._done.set()


def full_run(studio: Studio, order: EditOrder) -> dict:
    watch = _Watch()
    (delivered,), _ = EditJob(studio, order, progress=watch.progress).run()
    ended = time.perf_counter()
    watch.stop()
    edit_seconds = delivered.record["timings"]["total"]
    check_seconds = delivered.record["check"]["seconds"]
    return {"edit_seconds": round(edit_seconds, 1), "check_seconds": round(check_seconds, 2),
            "check_share": round(check_seconds / edit_seconds, 4),
            "check_memory_mb": round(watch.peak_in_check - watch.rss_at_check, 1),
            "after_decode_memory_mb": round(watch.peak_after_decode - watch.rss_at_decode, 1),
            "rest_rss_mb": round(watch.rest_mb, 1), "peak_rss_mb": round(watch.peak_mb, 1),
            "after_decode_to_end_seconds": round(ended - watch.decoded_at, 2),
            "check": delivered.record["check"]["display"], "note": delivered.record["check"]["note"]}


def stopped_run(studio: Studio, order: EditOrder) -> dict:
    watch, stop = _Watch(), threading.Event()

    def should_stop() -> bool:
        if watch.decoded_at is not None and time.perf_counter() - watch.decoded_at > 0.5:
            stop.set()
        return stop.is_set()

    outcome = "delivered"
    try:
        EditJob(studio, order, progress=watch.progress, should_stop=should_stop).run()
    except Cancelled:
        outcome = "cancelled"
    ended = time.perf_counter()
    watch.stop()
    return {"outcome": outcome, "stop_to_end_seconds": round(ended - watch.decoded_at - 0.5, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=59.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    studio = Studio(StudioConfig(device="cpu"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recording.wav"
        tones = slow_tones(args.minutes * 60, seed=4).astype(np.float32)
        sf.write(path, dsp.resample(tones, 24_000, 16_000), 16_000)
        del tones
        values = {"audio": str(path), "instruction": INSTRUCTION, "model": "demo", "seed": 5, "randomize_seed": False}
        order = EditOrder.from_knobs(values, studio.config.limits)
        full = full_run(studio, order)
        stopped = stopped_run(studio, order)
    publish({"bench": "whole_check", "date": datetime.date.today().isoformat(), "machine": platform.machine(),
             "minutes": args.minutes, "instruction": INSTRUCTION, "full": full, "stopped": stopped,
             "bars": {"check_share": 0.25, "check_memory_mb": 1024, "stop_to_end_seconds": 5}}, args.out)


if __name__ == "__main__":
    main()
