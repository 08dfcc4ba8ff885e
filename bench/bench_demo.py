"""Score the embedded demo model on held-out clips and print every measure as a table.

    python -m bench.bench_demo [--clips 20] [--checkpoint assets/AuK-Tiny] [--seed 0] [--materials tone speech]

The same measures and bars as the test suite (training/evaluation.py), on freshly generated
held-out tones and espeak-ng speech, through the service with the checkpoint's default knobs;
one row per family × material × bar (a bar may cover one condition, e.g. ±12 dB) with the
median, the bar, the spread and whether it passes, then one JSON line with the same figures.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from auk_app.auk.configs import SAMPLE_RATE
from auk_app.auk.request import EditRequest
from auk_app.service import DEMO_DIR, Studio, StudioConfig
from training.data import heldout_cases
from training.evaluation import FAMILIES, evaluate_family


def demo_edit(studio: Studio):
    """The app's /edit_audio semantics: default knobs, automatic duration fitted to the source."""

    def edit(source, instruction, seconds):
        audio = None if source is None else (source, SAMPLE_RATE)
        request = EditRequest(instruction, audio=audio, seconds=None if source is not None else seconds,
                              seed=0, fit_to_source=True)
        return studio.edit(request, "demo")[0].wav

    return edit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", type=Path, default=DEMO_DIR)
    parser.add_argument("--materials", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--families", nargs="+", default=list(FAMILIES["tone"]), choices=FAMILIES["tone"])
    args = parser.parse_args()
    studio = Studio(StudioConfig(demo_dir=args.checkpoint))
    edit = demo_edit(studio)
    rows = []
    print(f"{'family':<8} {'material':<7} {'condition':<15} {'measure':<18} {'median':>9} {'bar':>12} "
          f"{'p10':>8} {'p90':>8} {'n':>3} {'passed':>6} {'s/clip':>6}")
    for material in args.materials:
        for family in (f for f in FAMILIES[material] if f in args.families):
            started = time.perf_counter()
            score = evaluate_family(edit, heldout_cases(family, args.clips, args.seed, material))
            per_clip = (time.perf_counter() - started) / args.clips
            valid = all(clip.valid for clip in score.clips)
            for result in score.bars:
                bar = result.bar
                values = [clip.measured[bar.measure] for clip in score.clips if bar.condition in (None, clip.condition)]
                p10, p90 = np.nanpercentile(values, [10, 90]) if np.any(np.isfinite(values)) else (np.nan, np.nan)
                passed = result.met and valid
                print(f"{family:<8} {material:<7} {bar.condition or 'all':<15} {bar.measure:<18} {result.median:>9.3f} "
                      f"{bar.rule + ' ' + format(bar.limit, 'g'):>12} {p10:>8.3f} {p90:>8.3f} {result.n_clips:>3} "
                      f"{str(passed):>6} {per_clip:>6.2f}")
                rows.append({"family": family, "material": material, "condition": bar.condition or "all",
                             "measure": bar.measure, "median": result.median, "rule": bar.rule, "limit": bar.limit,
                             "unit": bar.unit, "valid": valid, "passed": passed})
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
