"""Score the embedded demo model on held-out clips and print every measure as a table.

    python -m bench.bench_demo [--clips 20] [--checkpoint assets/AuK-Tiny] [--seed 0]

The same measures and bars as the test suite (training/evaluation.py), on freshly generated
held-out clips, through the service with the checkpoint's default knobs; one row per family
with the median, the bar and the spread, then one JSON line with the raw medians.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from auk_app.auk.request import EditRequest
from auk_app.service import DEMO_DIR, Studio, StudioConfig
from training.data import heldout_cases
from training.evaluation import BARS, evaluate_family

FAMILIES = ("volume", "pitch", "denoise", "tone")


def demo_edit(studio: Studio):
    """The app's /edit_audio semantics: default knobs, automatic duration fitted to the source."""

    def edit(source, instruction, seconds):
        audio = None if source is None else (source, 24000)
        request = EditRequest(instruction, audio=audio, seconds=None if source is not None else seconds,
                              seed=0, fit_to_source=True)
        return studio.edit(request, "demo")[0].wav

    return edit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", type=Path, default=DEMO_DIR)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    args = parser.parse_args()
    studio = Studio(StudioConfig(demo_dir=args.checkpoint))
    edit = demo_edit(studio)
    medians = {}
    print(f"{'family':<8} {'median':>9} {'bar':>12} {'p10':>8} {'p90':>8} {'passed':>7} {'s/clip':>7}")
    for family in args.families:
        started = time.perf_counter()
        score = evaluate_family(edit, heldout_cases(family, args.clips, args.seed))
        per_clip = (time.perf_counter() - started) / args.clips
        values = np.array([clip.value for clip in score.clips])
        bar = BARS[family]
        bar_text = f"{'|x| <=' if bar.absolute else 'x >='} {bar.limit:g} {bar.unit}"
        p10, p90 = np.nanpercentile(values, [10, 90])
        print(f"{family:<8} {score.median:>9.3f} {bar_text:>12} {p10:>8.3f} {p90:>8.3f} {str(score.passed):>7} {per_clip:>7.2f}")
        medians[family] = {"median": score.median, "passed": score.passed, "unit": bar.unit}
    print(json.dumps(medians))


if __name__ == "__main__":
    main()
