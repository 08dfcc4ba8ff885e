"""The GPU speed figures of ``docs/speed.md``, rendered from the newest record in ``bench/results/``.

    python -m bench.speed_table          # rewrite docs/speed.md's section from the record
    python -m bench.speed_table --print  # print it instead

The section sits between two markers in docs/speed.md; ``tests/test_readme.py`` holds it equal to
what this renders, so a speed figure in the docs always has a record (and code) behind it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SPEED_DOC = ROOT / "docs" / "speed.md"
BEGIN, END = "<!-- speed-table:begin -->", "<!-- speed-table:end -->"

# (key, label, unit, goal, higher is better)
FIGURES = (
    ("auk_base_dit_ms", "Base DiT sampling, 32 CFG steps", "ms", 200, False),
    ("auk_flash_dit_ms", "Flash DiT sampling, 4 steps", "ms", 15, False),
    ("vae_decode_10s_ms", "VAE decode, 10 s", "ms", 25, False),
    ("auk_base_edit_ms", "whole Base edit, 10 s", "ms", 350, False),
    ("audex_tokens_per_s", "Audex tokens/s, CFG pair", "tok/s", 400, True),
    ("peak_gpu_memory_gb", "AuK stack's peak memory", "GB", 16, False),
)
LEVERS = (
    ("step_ms_eager", "eager"),
    ("step_ms_graphs", "CUDA graphs"),
    ("step_ms_compiled", "compiled blocks"),
    ("step_ms_compiled_graphs", "compiled blocks in CUDA graphs"),
)


def newest_record(results: Path = RESULTS) -> Path | None:
    """The newest GPU speed record (not a profile, not a CPU run): by its ``recorded`` time, then by
    its name's date."""
    records = [p for p in results.glob("*.json") if not p.stem.endswith("-profile")
               and json.loads(p.read_text()).get("gpu")]
    return max(records, key=lambda p: (json.loads(p.read_text()).get("recorded", ""), p.name), default=None)


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}" if value >= 10 else f"{value:,.2f}"


def _figures(record: dict) -> list[str]:
    lines = ["| figure | optimised | eager | speedup | goal | met |", "| --- | --- | --- | --- | --- | --- |"]
    for key, label, unit, goal, higher in FIGURES:
        if key not in record:
            continue
        value, eager = record[key], record.get(f"eager_{key}")
        ratio = record.get(f"speedup_{key}")
        met = value >= goal if higher else value <= goal
        lines.append(
            f"| {label} | {_number(value)} {unit} | {'' if eager is None else f'{_number(eager)} {unit}'} | "
            f"{'' if ratio is None else f'{ratio:.2f}×'} | {'≥' if higher else '≤'} {goal} {unit} | {'yes' if met else 'no'} |"
        )
    return lines


def _levers(record: dict) -> list[str]:
    levers = record.get("levers")
    if not levers:
        return []
    lines = ["", "One CFG DiT step (ms), lever by lever:", "", "| path | ms per step |", "| --- | --- |"]
    lines += [f"| {label} | {levers[key]:.2f} |" for key, label in LEVERS if key in levers]
    if "step_ms_full_bucket" in levers:
        masks = "no masks" if levers.get("full_bucket_unmasked") else "masked"
        lines.append(f"| compiled + graphs, a {levers['full_bucket_frames']}-frame target filling its bucket "
                     f"({masks}) | {levers['step_ms_full_bucket']:.2f} |")  # fmt: skip
    return lines


def _batching(record: dict) -> list[str]:
    one, eight = record.get("auk_edits_per_s_1"), record.get("auk_edits_per_s_8")
    if one is None or eight is None:
        return []
    packed = record.get("auk_edits_per_s_8_packed")
    packed = "" if packed is None else f" Packed attention in the shared steps: {packed:.2f} edits/s with 8 users."
    return ["", f"Concurrent Base edits (10 s): {one:.2f} edits/s one at a time, {eight:.2f} edits/s with 8 "
                f"users batched: {eight / one:.2f}× (goal ≥ 3×).{packed}"]  # fmt: skip


def _peer(record: dict) -> list[str]:
    """vLLM-Omni's own transformer beside ours, each path timed in turn with our optimised one."""
    paths = [(path, label) for path, label in (("peer_eager", "eager"), ("peer_compiled", "compiled (full)"))
             if f"{path}_auk_base_dit_ms" in record]
    if not paths:
        return []
    lines = ["", f"Beside {record['peer']}'s own AuK transformer (same shapes, weights and device; its "
                 "time over ours, from the same run):", "",
             "| peer path | figure | peer | ours | peer / ours |", "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for path, label in paths:
        for key, figure in (("auk_base_dit_ms", "Base, 32 CFG steps"), ("auk_flash_dit_ms", "Flash, 4 steps")):
            lines.append(f"| {label} | {figure} | {_number(record[f'{path}_{key}'])} ms | "
                         f"{_number(record[f'{path}_ours_{key}'])} ms | {record[f'vs_{path}_{key}']:.2f}× |")
    return lines


def _fewer_steps(record: dict) -> list[str]:
    """The opt-in knobs that run fewer DiT rows, against the full Base solve of the same run."""
    names = [name for name in ("step_cache_most", "cfg_interval") if f"auk_base_dit_ms_{name}" in record]
    if not names:
        return []
    lines = ["", "Base sampling with fewer DiT rows (random weights: the speed, not the quality; see below):", "",
             "| knob | DiT steps · guided | ms | full solve ms | speedup | latents moved (rel. L2) |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for name in names:
        steps, ms = record[f"auk_base_{name}_steps"], f"auk_base_dit_ms_{name}"
        lines.append(f"| {name} | {steps['dit_steps']} · {steps['guided_steps']} | {_number(record[ms])} | "
                     f"{_number(record[f'{ms}_full'])} | {record[f'speedup_{ms}']:.2f}× | "
                     f"{record[f'auk_base_{name}_relative_l2']:.3f} |")
    return lines


def _profile(profile: dict | None) -> list[str]:
    if not profile:
        return []
    lines = ["", "Where the time goes (`bench.profile_speed`, kernel ms per call by kind):", "",
             "| call | wall ms | kernels ms | by kind | GFLOP |", "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for name in ("dit_cfg_step_eager", "dit_cfg_step", "vae_decode_10s", "audex_token"):
        if name not in profile:
            continue
        entry = profile[name]
        kernels = entry["kernels_ms"]
        kinds = ", ".join(f"{kind} {ms:.2f}" for kind, ms in kernels.items() if kind != "total")
        flops = entry.get("gflop", entry.get("gflop_without_cache", ""))
        lines.append(f"| {name} | {entry['wall_ms']:.2f} | {kernels['total']:.2f} | {kinds} | {flops} |")
    return lines


def render(record_path: Path) -> str:
    """The section's text for one record (and its ``-profile`` twin, when there is one)."""
    record = json.loads(record_path.read_text())
    profile_path = record_path.with_name(f"{record_path.stem}-profile.json")
    profile = json.loads(profile_path.read_text()) if profile_path.exists() else None
    head = (f"From `bench/results/{record_path.name}` ({record['gpu']}, torch {record['torch']}, "
            f"medians of {record['repeats']}; DiT compiled: {'yes' if record.get('dit_compiled') else 'no'}):")  # fmt: skip
    lines = [head, "", *_figures(record), *_levers(record), *_peer(record), *_fewer_steps(record), *_batching(record),
             *_profile(profile)]
    return "\n".join(lines)


def section(text: str) -> str:
    """The text between the markers."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--print", action="store_true", help="print the section instead of rewriting docs/speed.md")
    args = parser.parse_args()
    record = newest_record()
    if record is None:
        sys.exit(f"No speed record in {RESULTS}; run `bash bench/gpu_record.sh OUT` on a GPU and copy its JSON there.")
    table = render(record)
    if args.print:
        print(table)
        return
    text = SPEED_DOC.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"docs/speed.md lacks the speed section's markers {BEGIN} and {END}; put them back around it.")
    SPEED_DOC.write_text(text.replace(section(text), table, 1))


if __name__ == "__main__":
    main()
