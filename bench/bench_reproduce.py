"""What a seed reproduces: the same edits run alone, run alone again, and run together so that they
share DiT steps, compared as the PCM16 samples the app writes.

    python -m bench.bench_reproduce [--edits 6] [--out bench/results/DATE-cpu-reproduce.json]

AuK-Tiny through the app's service on the CPU: ``--edits`` volume and pitch edits of held-out tones
(training.data, never trained on), each its own seed, all of one shape bucket. Each runs alone
twice, then all at once from their own threads, the first holding its first step until every
other has been submitted, so that they share the DiT's steps (each record's ``steps.shared_steps``
says how many it shared). Prints one JSON object: per edit, how many PCM16 samples differ from its
first lone run and by how many LSB at most.
"""

from __future__ import annotations

import argparse
import datetime
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from auk_app.audio_io import PCM16_SCALE
from auk_app.auk.request import EditRequest
from auk_app.config import SAMPLE_RATE as RATE
from auk_app.demo import DEMO_DIR
from auk_app.job import run_request
from auk_app.service import Studio, StudioConfig
from training.data import heldout_cases
from bench.records import publish

GATE_SECONDS = 120


def pcm16(wav: np.ndarray) -> np.ndarray:
    """The samples as the app's WAV holds them (libsndfile's rint(x·32768), clipped)."""
    return np.clip(np.rint(wav * PCM16_SCALE), -PCM16_SCALE, PCM16_SCALE - 1).astype(np.int32)


def requests(n: int) -> list[EditRequest]:
    """``n`` edits of held-out tones of one length bucket (2–3 s: 100–150 frames, the 128 bucket
    mostly), alternating volume and pitch, seeds 0..n-1."""
    cases = [c for family in ("volume", "pitch") for c in heldout_cases(family, n, 0, "tone")]
    cases = [cases[i // 2 + (i % 2) * n] for i in range(n)]
    return [EditRequest(c.instruction, audio=(c.source, RATE), seed=i) for i, c in enumerate(cases)]


def together(studio: Studio, edits: list[EditRequest]) -> list:
    """Every edit from its own thread at once; the first holds its first step until all are live."""
    batcher = studio.pipeline(studio.entry("demo")).batcher  # loaded by the lone runs
    submitted = threading.Barrier(len(edits))

    def run(i: int):
        held = [i == 0]

        def progress(phase, done, total):
            if held[0] and phase == "sample" and done == 1:
                held[0] = False
                deadline = time.monotonic() + GATE_SECONDS
                while batcher.live < len(edits) and time.monotonic() < deadline:
                    time.sleep(0.01)

        submitted.wait()
        return run_request(studio, edits[i], "demo", progress=progress)[0]

    with ThreadPoolExecutor(len(edits)) as pool:
        return list(pool.map(run, range(len(edits))))


def compare(first: np.ndarray, other: np.ndarray) -> dict:
    a, b = pcm16(first), pcm16(other)
    diff = np.abs(a - b)
    return {"samples": int(a.size), "differing": int((diff > 0).sum()), "max_lsb": int(diff.max(initial=0))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=6)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    studio = Studio(StudioConfig(demo_dir=DEMO_DIR))
    edits = requests(args.edits)
    alone = [run_request(studio, e, "demo")[0] for e in edits]
    again = [run_request(studio, e, "demo")[0] for e in edits]
    shared = together(studio, edits)
    rows = [{"instruction": e.instruction, "seed": e.seed, "gen_frames": a.record.gen_frames,
             "alone_again": compare(a.wav, b.wav), "shared": compare(a.wav, s.wav),
             "shared_steps": s.record.steps["shared_steps"], "steps": s.record.recipe.nfe}
            for e, a, b, s in zip(edits, alone, again, shared)]
    result = {"date": datetime.date.today().isoformat(), "device": "cpu", "model": "AuK-Tiny", "edits": rows}
    publish(result, args.out)


if __name__ == "__main__":
    main()
