"""A batch's report: ``report.csv`` (a row an item), ``report.md`` (a table a task, each task's
error distribution as a figure, the failed rows' sentences) and the summary the CLI prints.

A task's table gives its count, its pass rate (the benchmark's own pass where it has one, else
the edit check's verdict), the edit check's pass rate, joint success where content was measured,
and the median and 90th percentile of its key error (volume RAE, speed RDE, pitch |error| in
semitones, content WER/CER, enhancement the SNR gain). Items kept from a run before count like
new ones: their manifests hold their scores.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from auk_app.batch.runner import DONE, FAILED, SKIPPED, STOPPED, Outcome
from auk_app.batch.speaker import NAME as SPEAKER_MODEL

FIGURES = "figures"
KEY_ERRORS = {  # task → (score, what the table calls it)
    "volume": ("rae", "RAE"), "speed": ("rde", "RDE"), "pitch": ("st_error", "abs. error (semitones)"),
    "content": ("error_rate", "WER/CER"), "enhancement": ("snr_gain_db", "SNR gain (dB)"),
}
COLUMNS = ("id", "row", "status", "task", "instruction", "seed", "check", "check_pass", "target_pass", "joint",
           "problem")
SCORE_COLUMNS = ("change_db", "db_error", "amplitude_src", "amplitude_out", "aae", "rae", "duration_src",
                 "duration_out", "duration_ratio", "ade", "rde", "speed_pass", "f0_src_hz", "f0_out_hz", "shift_st",
                 "st_error", "pitch_pass", "error_rate", "error_unit", "content_kept", "heard", "noise_floor_src",
                 "noise_floor_out", "snr_gain_db", "stoi", "stoi_src", "pesq", "pesq_src", "speaker_sim")


def rows(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """One flat row an item: what it was, what became of it, its check and its scores."""
    table = []
    for outcome in outcomes:
        manifest = outcome.manifest or {}
        scores = (manifest.get("batch") or {}).get("scores") or {}
        check = manifest.get("check") or {}
        table.append({
            "id": outcome.item.id, "row": outcome.item.row, "status": outcome.status,
            "task": scores.get("task") or outcome.item.meta.get("task"),
            "instruction": manifest.get("instruction") or outcome.item.knobs.get("instruction"),
            "seed": manifest.get("seed"), "check": check.get("display"), "check_pass": check.get("pass"),
            "target_pass": scores.get("target_pass"), "joint": scores.get("joint"), "problem": outcome.problem,
            **{name: scores.get(name) for name in SCORE_COLUMNS}, "transcriber": scores.get("transcriber"),
        })
    return table


def write_report(out: str | Path, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """``report.csv``, ``report.md`` and ``figures/<task>.png`` in ``out``; the summary they show."""
    out = Path(out)
    table = rows(outcomes)
    _atomic(out / "report.csv", _csv(table))
    tasks = per_task(table)
    figures = {task: _figure(out / FIGURES / f"{task}.png", task, values) for task, values in _errors(table).items()}
    _atomic(out / "report.md", _markdown(table, tasks, figures))
    return {"counts": counts(table), "tasks": tasks, "figures": {t: str(p) for t, p in figures.items() if p},
            "failed": [r["problem"] for r in table if r["status"] == FAILED]}


def counts(table: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {"items": len(table), **{s: sum(r["status"] == s for r in table) for s in (DONE, SKIPPED, FAILED, STOPPED)}}


def per_task(table: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each task's count, pass rates and key error's median and 90th percentile, over finished items."""
    tasks: dict[str, dict[str, Any]] = {}
    finished = [r for r in table if r["status"] in (DONE, SKIPPED)]
    for task in sorted({str(r["task"]) for r in finished}):
        mine = [r for r in finished if str(r["task"]) == task]
        errors = _errors(mine).get(task, [])
        tasks[task] = {"count": len(mine), "pass_rate": _rate(r["target_pass"] for r in mine),
                       "check_pass_rate": _rate(r["check_pass"] for r in mine),
                       "joint_rate": _rate(r["joint"] for r in mine),
                       "error": KEY_ERRORS.get(task, (None, None))[1],
                       "median": _percentile(errors, 50), "p90": _percentile(errors, 90)}
    return tasks


def _errors(table: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for row in table:
        key = KEY_ERRORS.get(str(row["task"]), (None,))[0]
        value = row.get(key) if key else None
        if row["status"] in (DONE, SKIPPED) and value is not None:
            found.setdefault(str(row["task"]), []).append(abs(value) if key == "st_error" else value)
    return found


def _rate(values) -> float | None:
    known = [v for v in values if v is not None]
    return sum(bool(v) for v in known) / len(known) if known else None


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _csv(table: Sequence[dict[str, Any]]) -> str:
    import io

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=[*COLUMNS, *SCORE_COLUMNS, "transcriber"], lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return text.getvalue()


def summary_text(summary: dict[str, Any]) -> str:
    """The summary as the CLI prints it: the counts, then the per-task table."""
    c = summary["counts"]
    lines = [f"{c['items']} items: {c['done']} done, {c['skipped']} kept from a run before, {c['failed']} failed"
             + (f", {c['stopped']} stopped" if c["stopped"] else "") + ".", "", *_task_table(summary["tasks"])]
    return "\n".join(lines)


def _task_table(tasks: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| task | items | pass rate | check pass | joint | key error | median | p90 |",
             "|---|---:|---:|---:|---:|---|---:|---:|"]
    for task, t in tasks.items():
        rates = [("—" if t[k] is None else f"{100 * t[k]:.0f} %") for k in ("pass_rate", "check_pass_rate", "joint_rate")]
        lines.append(f"| {task} | {t['count']} | {' | '.join(rates)} | {t['error'] or '—'} | "
                     f"{_cell(t['median']) or '—'} | {_cell(t['p90']) or '—'} |")
    return lines


def _markdown(table: Sequence[dict[str, Any]], tasks: dict[str, dict[str, Any]], figures: dict[str, Path | None]) -> str:
    c = counts(table)
    heard = any(r["transcriber"] for r in table)
    lines = ["# Batch report", "", summary_text({"counts": c, "tasks": tasks}), "",
             "Pass rate: the benchmark's own pass where it defines one (speed: out/in ≤ 0.95 or ≥ 1.05; pitch: "
             "a shift of at least 0.3 semitones the asked way), else the edit check's verdict. Joint: the target "
             "passed and the content kept (WER/CER ≤ 0.10).", "",
             f"Speaker similarity: {SPEAKER_MODEL}, a proxy, not comparable to WavLM-based figures.", "",
             "Content: " + ("WER/CER of what the loaded model's thinker heard." if heard else
                            "not measured: the loaded model has no transcriber (the demo's text encoder hears "
                            "nothing, and Serve replicas lend none), so WER/CER and joint success are empty."), ""]
    for task, path in figures.items():
        if path is not None:
            lines += [f"## {task}", "", f"![{task}: {KEY_ERRORS[task][1]}]({FIGURES}/{path.name})", ""]
    failed = [r for r in table if r["status"] == FAILED]
    if failed:
        lines += [f"## Failed rows ({len(failed)})", "", *(f"* {r['problem']}" for r in failed), ""]
    return "\n".join(lines)


def _figure(path: Path, task: str, values: list[float]) -> Path | None:
    """A histogram of one task's key error (median and 90th percentile marked)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5, 2.6), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.hist(finite, bins=min(20, max(5, len(finite))), color="#4a7bd0")
    for q, style in ((50, "-"), (90, "--")):
        axes.axvline(float(np.percentile(finite, q)), color="#c0392b", linestyle=style, label=f"p{q}")
    axes.set(title=f"{task}: {KEY_ERRORS[task][1]} over {len(finite)} items", xlabel=KEY_ERRORS[task][1], ylabel="items")
    axes.legend(loc="upper right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    figure.savefig(part, format="png")
    os.replace(part, path)
    return path


def _atomic(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)
