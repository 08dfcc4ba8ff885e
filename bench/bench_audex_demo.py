"""Audex-Tiny against its bars, on held-out captions, through the app's defaults.

Each held-out caption is drawn from the held-out *templates* (word orders training never uses,
often with words it never saw) with held-out values (``training/audex_captions.py``,
``training/audex_sounds.py``), every third in Chinese; it is run through
:meth:`Studio.text_to_audio` as the Text-to-audio tab runs it (the phase mask on, CFG 3,
temperature 1, top-k 80, the demo's 3 s), for several seeds, and the decoded clip is measured
(``training/audex_measures.py``). The first seed of every caption also samples the comparison
run without the mask (not decoded): its phase validity shows what the mask prevents.

    python -m bench.bench_audex_demo [--captions 8] [--seeds 2] [--json out.json]

Bars: tone frequency within 3 % and length within 10 % (medians), glide start and end and a
siren's low and high within 5 % (medians), click counts exact, noise fading out falling by
≥ 10 dB and steady white noise spectrally flat (flatness ≥ 0.5) in ≥ 80 % of runs; every masked
stream phase-valid. Each family's record also gives its share of runs within the bar per
language.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from auk_app.knobs import audex_request  # noqa: E402
from auk_app.service import Studio, StudioConfig  # noqa: E402
from training import audex_measures as measures  # noqa: E402
from training.audex_sounds import draw  # noqa: E402

FAMILIES = ("tone", "sweep", "siren", "clicks", "fade", "flat")
HELDOUT_SEED = 10_000  # caption draws; training draws from generators seeded (seed, step group)


def heldout_scenes(family: str, count: int, seed: int = HELDOUT_SEED):
    """``count`` held-out scenes of ``family``, every third in Chinese."""
    rng = np.random.default_rng([seed, FAMILIES.index(family) if family in FAMILIES else 99])
    return [draw(rng, held=True, family=family, lang="zh" if i % 3 == 2 else "en") for i in range(count)]


def run(studio: Studio, caption: str, seed: int, *, compare: bool = False):
    knobs = dict(caption=caption, seed=seed, randomize_seed=False, compare_unmasked=compare)
    request = audex_request(knobs, studio.config.limits, seconds=studio.audex_seconds)
    return studio.text_to_audio(request)


def summarise(family: str, scores: list[measures.Score]) -> dict:
    out = {"runs": len(scores), "ok_share": float(np.mean([s.ok for s in scores]))}
    if family == "tone":
        out["median_freq_err"] = float(np.median([s.values["freq_err"] for s in scores]))
        out["median_length_err"] = float(np.median([s.values["length_err"] for s in scores]))
        out["bar"] = out["median_freq_err"] <= measures.TONE_FREQ_BAR and out["median_length_err"] <= measures.TONE_LENGTH_BAR
    elif family in ("sweep", "siren"):
        out["median_start_err"] = float(np.median([s.values["start_err"] for s in scores]))
        out["median_end_err"] = float(np.median([s.values["end_err"] for s in scores]))
        out["bar"] = max(out["median_start_err"], out["median_end_err"]) <= measures.SWEEP_BAR
    else:
        out["bar"] = out["ok_share"] >= measures.SHARE_BAR
    for lang in sorted({s.lang for s in scores}):
        out[f"ok_share_{lang}"] = float(np.mean([s.ok for s in scores if s.lang == lang]))
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", type=int, default=8, help="held-out captions per family")
    parser.add_argument("--seeds", type=int, default=2, help="sampling seeds per caption")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    studio = Studio(StudioConfig(device="cpu"))
    assert studio.audex_demo, "the benchmark measures the demo: unset the Audex weights"
    started = time.perf_counter()
    results, valid, unmasked_valid, unmasked_runs = {}, [], [], 0
    for family in FAMILIES:
        scores = []
        for scene in heldout_scenes(family, args.captions):
            for seed in range(args.seeds):
                made = run(studio, scene.caption, seed, compare=seed == 0)
                valid.append(made.result.report["phase_valid"])
                if made.unmasked is not None:
                    unmasked_runs += 1
                    unmasked_valid.append(made.unmasked.report["phase_valid"])
                scores.append(measures.score(scene, made.result.waveform))
        results[family] = summarise(family, scores)
        results[family]["examples"] = [dict(caption=s.caption, lang=s.lang, ok=s.ok, **s.values)
                                       for s in scores[: 2 * args.seeds]]
        print(family, json.dumps({k: v for k, v in results[family].items() if k != "examples"}), flush=True)
    summary = {
        "bench": "audex_tiny_heldout", "captions_per_family": args.captions, "seeds": args.seeds,
        "families": results, "masked_phase_valid_share": float(np.mean(valid)), "masked_runs": len(valid),
        "unmasked_phase_valid_share": float(np.mean(unmasked_valid)) if unmasked_valid else None,
        "unmasked_runs": unmasked_runs, "seconds": time.perf_counter() - started,
    }
    summary["all_bars"] = all(r["bar"] for r in results.values()) and summary["masked_phase_valid_share"] == 1.0
    print(json.dumps({k: v for k, v in summary.items() if k != "families"}))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, default=float) + "\n", encoding="utf-8")
    return summary


if __name__ == "__main__":
    main()
