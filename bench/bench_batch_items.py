"""Items per minute of a batch, its items side by side against one at a time, in one process.

    python -m bench.bench_batch_items [--items 24] [--auk-batch 4] [--out bench/results/DATE-cpu-batch-items.json]

The same held-out demo items (tones: volume, pitch and noise removal, as ``bench_demo`` draws them,
a third each) run twice through :class:`auk_app.batch.BatchRun` on one Studio, into fresh folders:
``--auk-batch`` at once (their DiT steps share the step batcher, one item's conditioning and
decoding overlap another's steps) and one at a time. Both do all the work a batch does (the edit,
its check, the benchmark scores, the files). An untimed pass of the whole set at that concurrency
pays first: loading, the measures' kernels, the step batcher's shapes, which a first timed run
would pay alone. Then ``--rounds`` rounds time one at a
time and side by side in turn, so a drift of the machine's load meets both; the record gives items
per minute of each, summed over the rounds, and their ratio. The device is whatever ``--device``
picks (the CPU here; on a GPU, the demo model's sizes, not the release's).
"""

from __future__ import annotations

import argparse
import datetime
import json
import tempfile
import time
from pathlib import Path

import soundfile as sf

from auk_app.batch import BatchRun, read_manifest
from auk_app.config import SAMPLE_RATE
from auk_app.service import Studio, StudioConfig
from bench.records import publish
from training.data import heldout_cases

FAMILIES = ("volume", "pitch", "denoise")


def write_items(folder: Path, n: int, seed: int = 0) -> Path:
    """``n`` held-out demo items as WAVs and a JSONL manifest beside them."""
    per_family = -(-n // len(FAMILIES))
    cases = [(family, k, case) for family in FAMILIES
             for k, case in enumerate(heldout_cases(family, per_family, seed=seed, material="tone"))][:n]
    lines = []
    for family, k, case in cases:
        name = f"{family}{k:02d}"
        sf.write(str(folder / f"{name}.wav"), case.source, SAMPLE_RATE)
        lines.append(json.dumps({"id": name, "audio": f"{name}.wav", "instruction": case.instruction}))
    (folder / "items.jsonl").write_text("\n".join(lines) + "\n")
    return folder / "items.jsonl"


def timed(studio: Studio, manifest_path: Path, out: Path, workers: int) -> tuple[float, int]:
    """Seconds of one run of the whole manifest into a fresh ``out``, and how many items failed."""
    manifest = read_manifest(manifest_path)
    started = time.perf_counter()
    outcomes = BatchRun(studio, manifest, out, workers=workers).run()
    return time.perf_counter() - started, sum(o.status != "done" for o in outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--auk-batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    studio = Studio(StudioConfig(device=args.device, auk_batch=args.auk_batch))
    with tempfile.TemporaryDirectory(prefix="bench_batch_") as scratch:
        root = Path(scratch)
        (root / "items").mkdir()
        manifest = write_items(root / "items", args.items)
        timed(studio, manifest, root / "warm", args.auk_batch)
        runs = [(workers, *timed(studio, manifest, root / f"r{r}_{workers}", workers))
                for r in range(args.rounds) for workers in (1, args.auk_batch)]
    seconds = {w: sum(s for k, s, _ in runs if k == w) for w in (1, args.auk_batch)}
    failed = {w: sum(f for k, _, f in runs if k == w) for w in (1, args.auk_batch)}
    batched, alone = (60 * args.items * args.rounds / seconds[w] for w in (args.auk_batch, 1))
    publish({
        "bench": "batch_items", "date": datetime.date.today().isoformat(), "device": str(studio.device),
        "model": studio.entry("auto").label, "items": args.items, "families": list(FAMILIES),
        "auk_batch": args.auk_batch, "items_per_min_batched": round(batched, 2),
        "items_per_min_one_at_a_time": round(alone, 2), "ratio": round(batched / alone, 3),
        "rounds": args.rounds, "failed": {"batched": failed[args.auk_batch], "one_at_a_time": failed[1]},
        "gpu": "not measured: no GPU was lent to this run",
    }, args.out)


if __name__ == "__main__":
    main()
