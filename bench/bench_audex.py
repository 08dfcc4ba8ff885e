"""CPU tokens/s of the tiny random Audex demo LM, with and without CFG, in one process.

Prints one JSON line. Both settings run the same phase-masked sampler over the same snapshot,
so their ratio is the cost of the second (unconditional) row. The tiny LM measures loop and
sampler overhead, not the 2B model's speed.

    python -m bench.bench_audex [--tokens 400] [--repeats 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a plain script from anywhere

import torch  # noqa: E402

from auk_app.audex_demo import write_demo_snapshot  # noqa: E402
from auk_app.audex.pipeline import AudexPipeline  # noqa: E402

CAPTION = "Rain falling on a tin roof."


def _tokens_per_second(pipeline: AudexPipeline, *, cfg_scale: float, tokens: int, repeats: int) -> float:
    rates = [
        pipeline.generate(CAPTION, cfg_scale=cfg_scale, max_tokens=tokens, seed=seed, decode=False).tokens_per_second
        for seed in range(repeats)
    ]
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=400, help="max tokens per run (default 400)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting; the median is reported")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 suits the tiny LM)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = write_demo_snapshot(tmp)
        pipeline = AudexPipeline.from_paths(snapshot.audex_root, snapshot.xcodec_dir, device="cpu").load()
        pipeline.generate(CAPTION, codec_cap=40, decode=False)  # warm-up
        guided = _tokens_per_second(pipeline, cfg_scale=3.0, tokens=args.tokens, repeats=args.repeats)
        unguided = _tokens_per_second(pipeline, cfg_scale=1.0, tokens=args.tokens, repeats=args.repeats)
    print(json.dumps({
        "bench": "audex_tiny_lm_tokens_per_second",
        "device": "cpu",
        "threads": args.threads,
        "max_tokens": args.tokens,
        "repeats": args.repeats,
        "cfg3_tokens_per_second": round(guided, 1),
        "cfg1_tokens_per_second": round(unguided, 1),
        "cfg3_over_cfg1": round(guided / unguided, 3),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
