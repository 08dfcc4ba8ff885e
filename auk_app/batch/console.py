"""``python -m auk_app batch``'s run in a terminal: the progress bar, the report, the summary, the status.

Exit status: 0 when every item was done or kept, 1 when some rows failed (each with its sentence,
in the report and on stderr), 2 when the manifest or the options are refused before anything
runs, 130 when Ctrl-C stopped the batch (what was done is kept and a rerun resumes).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from auk_app.batch.manifest import read_manifest
from auk_app.batch.report import summary_text, write_report
from auk_app.batch.runner import STOPPED, BatchRun, Outcome, Tally

BAR_WIDTH = 24


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "time left unknown"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{rest:02d} left" if minutes >= 60 else f"{minutes}:{rest:02d} left"


def progress_line(tally: Tally) -> str:
    """``[██████░░░░] 6/24 · 1 failed · 2 kept · 3:10 left``."""
    filled = round(BAR_WIDTH * tally.finished / max(tally.total, 1))
    kept = f" · {tally.skipped} kept" if tally.skipped else ""
    return (f"[{'█' * filled}{'░' * (BAR_WIDTH - filled)}] {tally.finished}/{tally.total} · {tally.failed} failed"
            f"{kept} · {clock(tally.seconds_left)}")


class ProgressBar:
    """The bar, redrawn in place on a terminal; a line an item elsewhere (a log, a test's pipe)."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.live = stream.isatty()

    def __call__(self, outcome: Outcome, tally: Tally) -> None:
        end = "\r" if self.live and tally.finished < tally.total else "\n"
        print(progress_line(tally), end=end, file=self.stream, flush=True)


def run_batch(studio_of, manifest: Path, out: Path, *, instruction: str | None, defaults: Mapping[str, Any],
              submission: bool) -> int:
    """Read ``manifest`` (refused in one sentence before anything loads), make the Studio with
    ``studio_of()``, run every item into ``out``, write the report and print its summary."""
    items = read_manifest(manifest, instruction=instruction)
    studio = studio_of()
    print(f"{len(items.items)} items ({items.layout}) into {out}; up to {studio.config.auk_batch} at once.",
          file=sys.stderr)
    run = BatchRun(studio, items, out, defaults=defaults, submission=submission, on_item=ProgressBar())
    outcomes = run.run()
    summary = write_report(out, outcomes)
    print(summary_text(summary))
    print(f"Report: {out / 'report.md'} and {out / 'report.csv'}", file=sys.stderr)
    if summary["counts"][STOPPED]:
        print("Stopped: the finished items are kept; run the same command again to resume.", file=sys.stderr)
        return 130
    for problem in summary["failed"]:
        print(problem, file=sys.stderr)
    return 1 if summary["failed"] else 0
