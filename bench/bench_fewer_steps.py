"""What the step cache and the guidance interval cost: how far they move a solve from the full one,
and what the edit check says of the demo's results with and without them.

    python -m bench.bench_fewer_steps [--seeds 8] [--clips 4] [--out bench/results/DATE-cpu-fewer-steps.json]

Two studies, one JSON object (and a table on stderr):

* ``fixtures``: the reference fixtures' DiT weights (seeded random, tests/fixtures/reference) and
  their sampler inputs, on the Base recipe (32 steps, CFG 2, sway −1), ``--seeds`` noise seeds:
  per setting, the DiT steps and DiT rows (two a guided step, one an unguided one) against the
  full solve's, and the latents' relative L2 distance from the full solve's (median and largest).
* ``demo``: AuK-Tiny through the app's service on the edit check's held-out clips (volume and pitch
  of tones and speech, text to tone; ``--clips`` per family and material, seed 0, built by
  training.data, never trained on): per setting, the check's pass rate and median error per task,
  the waveform's relative RMS distance from the same edit without the knob, the steps that ran the
  DiT, and the sampling time over the baseline's, the settings of one clip run in turn so that all
  see the same machine load (a ratio of medians from one run). AuK-Tiny samples at cfg 0 (guidance
  overshoots its parametric edits), so its guidance settings are compared with cfg 1 on every step.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

from auk_app.auk.dit import AuKTransformer
from auk_app.auk.sampler import SolveSpec, solve
from auk_app.auk.step_reuse import StepTally
from auk_app.check import Clip, check
from auk_app.config import SAMPLE_RATE as RATE
from auk_app.demo import DEMO_DIR
from auk_app.service import Studio, StudioConfig
from bench.bench_demo import CHECK_FAMILIES, demo_result
from training.data import heldout_cases

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "reference"
BASE = dict(nfe=32, cfg_strength=2.0, sway_sampling_coef=-1.0)
# Knobs as the request names them. Thresholds: the trained demo's probe moves 0.04–0.10 a step, the
# fixtures' random weights 0.07–0.37, so each study sweeps its own range.
FIXTURE_SETTINGS = {
    "full": {}, "step_cache 0.2": dict(step_cache=0.2), "step_cache 0.3": dict(step_cache=0.3),
    "cfg_interval 0.1–0.8": dict(cfg_interval=(0.1, 0.8)), "cfg_interval 0.1–1": dict(cfg_interval=(0.1, 1.0)),
    "cfg_interval 0–0.8": dict(cfg_interval=(0.0, 0.8)),
}
DEMO_SETTINGS = {
    "default": {}, "step_cache 0.05": dict(step_cache=0.05), "step_cache 0.08": dict(step_cache=0.08),
    "cfg 1": dict(cfg=1.0), "cfg 1, cfg_interval 0.1–0.8": dict(cfg=1.0, cfg_interval=(0.1, 0.8)),
    "cfg 1, cfg_interval 0.1–1": dict(cfg=1.0, cfg_interval=(0.1, 1.0)),
}
BASELINE_OF = {"step_cache": "default", "cfg": "cfg 1"}  # what each demo setting is compared with


def fixture_dit() -> AuKTransformer:
    config = json.loads((FIXTURES / "dit_config.json").read_text())["config"]
    dit = AuKTransformer(**config).eval()
    dit.load_state_dict(load_file(str(FIXTURES / "dit_weights.safetensors")))
    return dit


def fixture_study(seeds: int) -> dict:
    """Per setting: DiT steps and rows over the full solve's, and the relative L2 distance from it."""
    dit, inputs = fixture_dit(), load_file(str(FIXTURES / "sampler_h_sway.safetensors"))
    conditioning = dict(text=inputs["input.text"], c_mask=inputs["input.c_mask"], ref=inputs["input.ref"],
                        ref_mask=inputs["input.ref_mask"], gen_frames=9)  # fmt: skip
    found = {}
    for name, knobs in FIXTURE_SETTINGS.items():
        distances, tallies = [], []
        for seed in range(seeds):
            full = solve(dit, SolveSpec(**conditioning, **BASE, seed=seed))
            tally = StepTally()
            got = solve(dit, SolveSpec(**conditioning, **BASE, seed=seed, tally=tally, **knobs))
            distances.append(float((got - full).norm() / full.norm()))
            tallies.append(tally)
        found[name] = {"dit_steps": _mean(t.dit_steps / 32 for t in tallies),
                       "dit_rows": _mean((t.dit_steps + t.guided_steps) / 64 for t in tallies),
                       "relative_l2_median": float(np.median(distances)), "relative_l2_max": max(distances)}
    return found


def _mean(values) -> float:
    return float(np.mean(list(values)))


def demo_cases(clips: int) -> list[tuple]:
    """The edit check's held-out clips as (case, source): volume and pitch of tones and speech, and
    text to tone (no source)."""
    cases = [(case, case.source) for material in ("tone", "speech") for family in CHECK_FAMILIES
             for case in heldout_cases(family, clips, 0, material)]
    return cases + [(case, None) for case in heldout_cases("tone", clips, 0, "tone")]


def demo_runs(studio: Studio, clips: int) -> list[dict]:
    """One row per clip and setting: the check's verdict and error, the waveform, steps and timing."""
    rows = []
    for index, (case, source) in enumerate(demo_cases(clips)):
        for name, knobs in DEMO_SETTINGS.items():
            result = demo_result(studio, source, case.instruction, case.seconds, 0, **knobs)
            verdict = check(case.instruction, None if source is None else Clip(source, RATE), result.wav, RATE)
            error = abs(verdict.got - verdict.asked) if verdict.got is not None else math.inf
            rows.append({"case": index, "task": case.task, "material": case.params["material"], "setting": name,
                         "passed": bool(verdict.passed), "error": error, "unit": verdict.unit, "wav": result.wav,
                         "steps": result.record.steps, "sample_s": result.record.timings["sample"]})
        print(f"clip {index + 1} done", file=sys.stderr, flush=True)
    return rows


def demo_summary(rows: list[dict]) -> dict:
    """Per setting: pass rate, median error per task, distance from its baseline, steps, time ratio."""
    by = {(r["case"], r["setting"]): r for r in rows}
    found = {}
    for name in DEMO_SETTINGS:
        mine = [r for r in rows if r["setting"] == name]
        base_name = next((b for prefix, b in BASELINE_OF.items() if name.startswith(prefix)), "default")
        base = [by[r["case"], base_name] for r in mine]
        tasks = sorted({r["task"] for r in mine})
        found[name] = {
            "compared_with": base_name,
            "pass_rate": _mean(r["passed"] for r in mine),
            "median_error": {t: float(np.median([r["error"] for r in mine if r["task"] == t])) for t in tasks},
            "units": {t: next(r["unit"] for r in mine if r["task"] == t) for t in tasks},
            "wav_relative_rms_median": float(np.median([_distance(r["wav"], b["wav"]) for r, b in zip(mine, base)])),
            "wav_relative_rms_max": max(_distance(r["wav"], b["wav"]) for r, b in zip(mine, base)),
            "dit_steps": _mean(r["steps"]["dit_steps"] for r in mine),
            "guided_steps": _mean(r["steps"]["guided_steps"] for r in mine),
            "sample_time_ratio": float(np.median([r["sample_s"] for r in mine])
                                       / np.median([b["sample_s"] for b in base])),
            "edits": len(mine),
        }
    return found


def _distance(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.sqrt(np.mean((got - want) ** 2) / max(np.mean(want**2), 1e-20)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=8, help="noise seeds of the fixture study")
    parser.add_argument("--clips", type=int, default=4, help="held-out clips per family and material (demo study)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    result = {"date": datetime.date.today().isoformat(), "device": "cpu", "torch": torch.__version__,
              "threads": torch.get_num_threads(), "fixtures": fixture_study(args.seeds), "fixture_seeds": args.seeds}
    print(json.dumps(result["fixtures"], indent=1), file=sys.stderr, flush=True)
    studio = Studio(StudioConfig(demo_dir=DEMO_DIR))
    result["demo"] = demo_summary(demo_runs(studio, args.clips))
    result["demo_clips_per_family"] = args.clips
    result["seconds"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
