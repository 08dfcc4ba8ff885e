"""Items per minute of a batch, its items side by side against one at a time, in one process.

    python -m bench.bench_batch_items [--items 24] [--auk-batch 4] [--out bench/results/DATE-cpu-batch-items.json]

The same held-out demo items (tones: volume, pitch and noise removal, as ``bench_demo`` draws them,
a third each) run twice through :class:`auk_app.batch.BatchRun` on one Studio, into fresh folders:
``--auk-batch`` at once (their DiT steps share the step batcher, one item's conditioning and
decoding overlap another's steps) and one at a time. Both runs do all the work a batch does (the
edit, its check, the benchmark scores, the files); a few untimed items load the model and the
measures first. The record gives items per minute for both and their ratio; the device is
whatever ``--device`` picks (the CPU here; on a GPU, the demo model's sizes, not the release's).
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
WARMUP_ITEMS = 2


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


def items_per_minute(studio: Studio, manifest_path: Path, out: Path, workers: int) -> tuple[float, int]:
    """Items per minute of one run of the whole manifest, and how many items failed."""
    manifest = read_manifest(manifest_path)
    started = time.perf_counter()
    outcomes = BatchRun(studio, manifest, out, workers=workers).run()
    seconds = time.perf_counter() - started
    return 60 * len(outcomes) / seconds, sum(o.status != "done" for o in outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--auk-batch", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    studio = Studio(StudioConfig(device=args.device, auk_batch=args.auk_batch))
    with tempfile.TemporaryDirectory(prefix="bench_batch_") as scratch:
        root = Path(scratch)
        (root / "items").mkdir()
        manifest = write_items(root / "items", args.items)
        warm = root / "items" / "warm.jsonl"  # beside the clips it names
        warm.write_text("".join(manifest.read_text().splitlines(keepends=True)[:WARMUP_ITEMS]))
        BatchRun(studio, read_manifest(warm), root / "warm", workers=WARMUP_ITEMS).run()
        batched, failed_batched = items_per_minute(studio, manifest, root / "batched", args.auk_batch)
        alone, failed_alone = items_per_minute(studio, manifest, root / "alone", 1)
    publish({
        "bench": "batch_items", "date": datetime.date.today().isoformat(), "device": str(studio.device),
        "model": studio.entry("auto").label, "items": args.items, "families": list(FAMILIES),
        "auk_batch": args.auk_batch, "items_per_min_batched": round(batched, 2),
        "items_per_min_one_at_a_time": round(alone, 2), "ratio": round(batched / alone, 3),
        "failed": {"batched": failed_batched, "one_at_a_time": failed_alone},
        "gpu": "not measured: no GPU was lent to this run",
    }, args.out)


if __name__ == "__main__":
    main()
