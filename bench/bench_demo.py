"""Score the embedded demo model on held-out clips and print every measure as a table.

    python -m bench.bench_demo [--clips 20] [--checkpoint assets/AuK-Tiny] [--seed 0] [--materials tone speech]
    python -m bench.bench_demo --check [--quick] [--out bench/results/DATE-cpu-edit-check.json]

The same measures and bars as the test suite (training/evaluation.py), on freshly generated
held-out tones and espeak-ng speech, through the service with the checkpoint's default knobs;
one row per family × material × bar (a bar may cover one condition, e.g. ±12 dB) with the
median, the bar, the spread and whether it passes, then one JSON line with the same figures.

``--check`` measures the edit check (``auk_app.check``) instead, on the same held-out
clips of volume, pitch and text to tone: whether its numbers agree with this bench's own,
independent measures (RMS level, YIN per-frame intervals) within the check's tolerance; whether
the Chinese instructions the demo gets wrong (it was trained in English only) come out ✗; and
best-of-4 seeds, ranked by ``auk_app.check.rank``, against seed 0 alone. ``--quick`` takes 4 clips
per family and material (every condition once each way) instead of 20.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from auk_app import instructions
from auk_app.config import SAMPLE_RATE as RATE
from auk_app.auk.request import EditRequest
from auk_app.check import Clip, EditCheck, check, rank
from auk_app.config import Limits
from auk_app.demo import DEMO_DIR
from auk_app.job import run_request
from auk_app.service import Studio, StudioConfig
from training.data import Example, heldout_cases
from training.evaluation import FAMILIES, LEVEL, PITCH, TONE_F0, evaluate_family, score_clip

SeededEdit = Callable[[np.ndarray | None, str, float, int], np.ndarray]


def demo_edit(studio: Studio, seed: int = 0):
    """The app's /edit_audio semantics: default knobs, automatic duration fitted to the source."""
    seeded = seeded_demo_edit(studio)
    return lambda source, instruction, seconds: seeded(source, instruction, seconds, seed)


def seeded_demo_edit(studio: Studio, **knobs) -> SeededEdit:
    """``demo_edit`` with the seed as an argument; concurrent calls share the DiT's steps. ``knobs``
    (the request's, e.g. ``step_cache=0.1``) go into every request."""

    def edit(source, instruction, seconds, seed):
        return demo_result(studio, source, instruction, seconds, seed, **knobs).wav

    return edit


def demo_result(studio: Studio, source: np.ndarray | None, instruction: str, seconds: float, seed: int, **knobs):
    """One demo edit's result (its record too): the source's own length when there is a source."""
    audio = None if source is None else (source, RATE)
    request = EditRequest(instruction, audio=audio, seconds=None if source is not None else seconds, seed=seed, **knobs)
    return run_request(studio, request, "demo")[0]


# ----------------------------------------------------------------------------- the edit check (--check)

CHECK_FAMILIES = ("volume", "pitch")  # best-of-N and agreement; text to tone adds agreement only
# The instructions the demo gets wrong: Chinese, which it was not trained on.
CHINESE_WRONG = (
    ("volume", {"mode": "Decrease", "amount": "6"}),
    ("pitch", {"mode": "Lower", "amount": "2"}),
)


def _bench_got(case: Example, output: np.ndarray) -> float:
    """The bench's own measurement of what the edit did, in the check's unit: the RMS change in dB,
    the median per-frame interval in cents (YIN), or the tone's F0 in Hz."""
    measured = score_clip(case, output).measured
    if case.task == "volume":
        return measured[LEVEL] + case.params["gain_db"]
    if case.task == "pitch":
        return measured[PITCH] + 100 * case.params["semitones"]
    return (measured[TONE_F0] + 1) * case.params["f0_hz"]


def _row(case: Example, seed: int, result: EditCheck, bench: float) -> dict:
    gap = abs(result.got - bench) if result.got is not None and math.isfinite(bench) else None
    return {"task": case.task, "material": case.params["material"], "condition": case.params["condition"],
            "instruction": case.instruction, "seed": seed, "check": result.display(), "asked": result.asked,
            "check_got": result.got, "bench_got": bench, "tolerance": result.tolerance, "unit": result.unit,
            "gap": gap, "agree": gap is not None and gap <= result.tolerance, "passed": result.passed, "error": result.error,
            "kept": result.kept}


def _seeded_outputs(edit: SeededEdit, case: Example, seeds: int) -> list[np.ndarray]:
    with ThreadPoolExecutor(seeds) as pool:
        return list(pool.map(lambda s: edit(case.source, case.instruction, case.seconds, s), range(seeds)))


def check_study(edit: SeededEdit, clips: int, seed: int = 0, materials=("tone", "speech"), seeds: int = 4) -> dict:
    """The check against the bench on held-out clips: agreement rows (every output), the Chinese
    cases, and best-of-``seeds`` against seed 0 for volume and pitch."""
    rows, best = [], []
    for material in materials:
        for family in CHECK_FAMILIES:
            for case in heldout_cases(family, clips, seed, material):
                source = Clip(case.source, RATE)
                outputs = _seeded_outputs(edit, case, seeds)
                checks = [check(case.instruction, source, out, RATE) for out in outputs]
                bench = [_bench_got(case, out) for out in outputs]
                rows += [_row(case, s, c, b) for s, (c, b) in enumerate(zip(checks, bench))]
                top = rank(checks)[0]
                pick = next(i for i, c in enumerate(checks) if c is top)
                asked = checks[0].asked
                best.append({
                    "task": family, "material": material, "condition": case.params["condition"], "best_seed": pick,
                    "error_1": abs(checks[0].got - asked), "error_best": abs(top.got - asked),
                    "bench_error_1": abs(bench[0] - asked), "bench_error_best": abs(bench[pick] - asked),
                    "passed_1": checks[0].passed, "passed_best": top.passed, "unit": top.unit,
                })
    if "tone" in materials:  # text to tone: no source, seed 0
        for case in heldout_cases("tone", clips, seed, "tone"):
            out = edit(None, case.instruction, case.seconds, 0)
            rows.append(_row(case, 0, check(case.instruction, None, out, RATE), _bench_got(case, out)))
    chinese = []
    for key, fields in CHINESE_WRONG:
        instruction = instructions.build(key, fields, source_seconds=3.0, limits=Limits(), language=instructions.ZH).instruction
        for material in materials:
            case = heldout_cases(key, 1, seed, material)[0]
            out = edit(case.source, instruction, case.seconds, 0)
            result = check(instruction, Clip(case.source, RATE), out, RATE)
            chinese.append({"instruction": instruction, "material": material, "check": result.display(),
                            "asked": result.asked, "got": result.got, "unit": result.unit, "passed": result.passed})
    return {"agreement": rows, "best_of": best, "chinese": chinese, "seeds": seeds, "clips": clips}


def summarize(study: dict) -> dict:
    """Agreement rate and largest gap per task, Chinese verdicts, best-of-N medians and means."""
    summary = {"agreement": {}, "best_of": {}, "chinese": [(c["check"], c["passed"]) for c in study["chinese"]]}
    for task in sorted({r["task"] for r in study["agreement"]}):
        rows = [r for r in study["agreement"] if r["task"] == task]
        worst = max(rows, key=lambda r: math.inf if r["gap"] is None else r["gap"] / r["tolerance"])
        summary["agreement"][task] = {
            "outputs": len(rows), "agree": sum(r["agree"] for r in rows), "rate": sum(r["agree"] for r in rows) / len(rows),
            "largest_gap": math.inf if worst["gap"] is None else worst["gap"], "tolerance": worst["tolerance"], "unit": worst["unit"],
            "largest_gap_case": f"{worst['material']} {worst['condition']}: {worst['check']}, bench {worst['bench_got']:.2f}",
        }
    for key in sorted({(b["task"], b["material"]) for b in study["best_of"]}):
        rows = [b for b in study["best_of"] if (b["task"], b["material"]) == key]
        stats = {name: float(np.median([r[name] for r in rows])) for name in
                 ("error_1", "error_best", "bench_error_1", "bench_error_best")}
        stats |= {f"mean_{name}": float(np.mean([r[name] for r in rows])) for name in ("error_1", "error_best")}
        stats |= {"clips": len(rows), "passed_1": sum(bool(r["passed_1"]) for r in rows),
                  "passed_best": sum(bool(r["passed_best"]) for r in rows), "unit": rows[0]["unit"],
                  "best_is_seed_0": sum(r["best_seed"] == 0 for r in rows)}
        summary["best_of"]["/".join(key)] = stats
    return summary


def print_summary(summary: dict, seeds: int) -> None:
    print(f"{'agreement':<10} {'outputs':>7} {'agree':>6} {'rate':>6} {'largest gap':>12} {'tolerance':>10}")
    for task, a in summary["agreement"].items():
        print(f"{task:<10} {a['outputs']:>7} {a['agree']:>6} {a['rate']:>6.0%} {a['largest_gap']:>9.2f} {a['unit']:<3}"
              f"{a['tolerance']:>8.2f}   ({a['largest_gap_case']})")
    print(f"\n{'best of':<14} {'clips':>5} {'|err| seed 0':>13} {f'best of {seeds}':>10} {'bench: seed 0':>14} "
          f"{'best':>7} {'pass 1':>7} {f'pass {seeds}':>7}")
    for key, b in summary["best_of"].items():
        print(f"{key:<14} {b['clips']:>5} {b['error_1']:>9.2f} {b['unit']:<3} {b['error_best']:>10.2f} "
              f"{b['bench_error_1']:>14.2f} {b['bench_error_best']:>7.2f} {b['passed_1']:>7} {b['passed_best']:>7}")
    print("\nChinese instructions (the demo is English-only):")
    for display, passed in summary["chinese"]:
        print(f"  {display}  → {'✗' if passed is False else 'not ✗'}")


def check_record(checkpoint: Path, clips: int, seeds: int, seconds: float, summary: dict, study: dict) -> dict:
    """The study as a committed record: the checkpoint by its folder's name, since a path names
    the machine it ran on."""
    return {"date": datetime.date.today().isoformat(), "device": "cpu", "checkpoint": checkpoint.resolve().name,
            "clips_per_family": clips, "seeds": seeds, "seconds": round(seconds, 1), "summary": summary, **study}


def run_check(args) -> None:
    studio = Studio(StudioConfig(demo_dir=args.checkpoint))
    clips = 4 if args.quick else args.clips
    started = time.perf_counter()
    study = check_study(seeded_demo_edit(studio), clips, args.seed, tuple(args.materials), args.seeds)
    summary = summarize(study)
    print_summary(summary, args.seeds)
    result = check_record(args.checkpoint, clips, args.seeds, time.perf_counter() - started, summary, study)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False, default=_json_default) + "\n")
        print(f"wrote {args.out}")


def _json_default(value):
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    raise TypeError(type(value))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", type=Path, default=DEMO_DIR)
    parser.add_argument("--materials", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--families", nargs="+", default=list(FAMILIES["tone"]), choices=FAMILIES["tone"])
    parser.add_argument("--check", action="store_true", help="measure the edit check instead")
    parser.add_argument("--quick", action="store_true", help="with --check: 4 clips per family and material")
    parser.add_argument("--seeds", type=int, default=4, help="with --check: candidates per clip")
    parser.add_argument("--out", type=Path, help="with --check: write the JSON here")
    args = parser.parse_args()
    if args.check:
        run_check(args)
        return
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
