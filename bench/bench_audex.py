"""CPU tokens/s of the Audex-Tiny demo LM: with and without CFG, and with many users at once.

Prints one JSON line. Both CFG settings run the same phase-masked sampler over the same snapshot,
so their ratio is the cost of the second (unconditional) row. With ``--server URL`` (a vLLM server
with the Audex plugin serving the demo snapshot, e.g. ``python -m auk_app.audex_vllm.launch
--demo --dtype float32 --enforce-eager``), 1, 4 and 8 concurrent guided users are also run
against the in-process sampler and against the server, in the same run: tokens/s per user (the
median user's tokens over its own wall time) and aggregate (all tokens over the wall time of the
round). The tiny LM measures loop, sampler and serving overhead, not the 2B model's speed.

    python -m bench.bench_audex [--tokens 400] [--repeats 3] [--threads 1] [--server URL]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a plain script from anywhere

import torch  # noqa: E402

from auk_app.audex.params import AudexSampling  # noqa: E402
from auk_app.audex.pipeline import AudexPipeline  # noqa: E402
from auk_app.audex.remote import RemoteSampler  # noqa: E402
from auk_app.config import Limits  # noqa: E402
from auk_app.demo.audex_snapshot import shared_demo_snapshot  # noqa: E402

CAPTION = "Rain falling on a tin roof."
USERS = (1, 4, 8)


def _run(**knobs) -> AudexSampling:
    return AudexSampling(caption=CAPTION, limits=Limits(), **knobs)


def _tokens_per_second(pipeline: AudexPipeline, *, cfg_scale: float, tokens: int, repeats: int) -> float:
    rates = [
        pipeline.generate(_run(cfg_scale=cfg_scale, max_tokens=tokens, seed=seed), decode=False).tokens_per_second
        for seed in range(repeats)
    ]
    return statistics.median(rates)


def _concurrent(pipeline: AudexPipeline, *, users: int, tokens: int) -> dict[str, float]:
    """``users`` guided runs at once, each on its own thread, as the app's queue would run them."""
    def one(seed: int) -> tuple[int, float]:
        started = perf_counter()
        result = pipeline.generate(_run(cfg_scale=3.0, max_tokens=tokens, seed=seed), decode=False)
        return len(result.token_ids), perf_counter() - started

    started = perf_counter()
    with ThreadPoolExecutor(users) as pool:
        runs = list(pool.map(one, range(users)))
    wall = perf_counter() - started
    return {
        "per_user_tokens_per_second": round(statistics.median(n / s for n, s in runs), 1),
        "aggregate_tokens_per_second": round(sum(n for n, _ in runs) / wall, 1),
    }


def _users(local: AudexPipeline, remote: AudexPipeline, tokens: int) -> dict[str, dict[str, float]]:
    remote.generate(_run(codec_cap=40), decode=False)  # warm-up: connection, model card
    table = {}
    for users in USERS:
        table[str(users)] = {"in_process": _concurrent(local, users=users, tokens=tokens),
                             "server": _concurrent(remote, users=users, tokens=tokens)}
    last = table[str(USERS[-1])]
    table["server_over_in_process_at_8"] = round(
        last["server"]["aggregate_tokens_per_second"] / last["in_process"]["aggregate_tokens_per_second"], 2)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=400, help="max tokens per run (default 400)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting; the median is reported")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 suits the tiny LM)")
    parser.add_argument("--server", metavar="URL", help="also compare 1/4/8 users with this Audex vLLM server")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    snapshot = shared_demo_snapshot()  # Audex-Tiny, what the server's --demo serves too
    pipeline = AudexPipeline.from_paths(snapshot.audex_root, snapshot.xcodec_dir, device="cpu").load()
    pipeline.generate(_run(codec_cap=40), decode=False)  # warm-up
    guided = _tokens_per_second(pipeline, cfg_scale=3.0, tokens=args.tokens, repeats=args.repeats)
    unguided = _tokens_per_second(pipeline, cfg_scale=1.0, tokens=args.tokens, repeats=args.repeats)
    users = None
    if args.server:
        remote = AudexPipeline.from_paths(snapshot.audex_root, snapshot.xcodec_dir, device="cpu",
                                          sampler=RemoteSampler(args.server)).load()
        users = _users(pipeline, remote, args.tokens)
    print(json.dumps({
        "bench": "audex_tiny_lm_tokens_per_second",
        "device": "cpu",
        "threads": args.threads,
        "max_tokens": args.tokens,
        "repeats": args.repeats,
        "cfg3_tokens_per_second": round(guided, 1),
        "cfg1_tokens_per_second": round(unguided, 1),
        "cfg3_over_cfg1": round(guided / unguided, 3),
        **({"concurrent_users_cfg3": users} if users else {}),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
