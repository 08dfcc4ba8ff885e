"""The start-up bench's arithmetic, its idea of "cold", and docs/running.md's table of its records."""

import os
from pathlib import Path

from bench.bench_startup import environment, newest_records, summary, table

ROOT = Path(__file__).resolve().parents[2]


def test_ratios_are_taken_round_by_round_and_their_median_reported():
    rounds = [{"baseline_s": b, "answer_s": a, "ready_s": 2 * a, "runs_s": {"edit": [f, 1.0]}}
              for b, a, f in ((10, 12, 3.0), (20, 22, 1.0), (5, 10, 2.0))]
    medians = summary(rounds)
    assert medians["answer_vs_baseline"] == 1.2 and medians["answer_s"] == 12  # ratios 1.2, 1.1, 2.0
    assert medians["first_vs_second"] == {"edit": 2.0} and medians["ready_vs_baseline"] == 2.4


def test_cold_gives_every_cache_a_fresh_empty_folder(tmp_path):
    cold, warm = environment(tmp_path), environment(None)
    for name in ("NUMBA_CACHE_DIR", "MPLCONFIGDIR", "GRADIO_TEMP_DIR", "TMPDIR", "PYTHONPYCACHEPREFIX"):
        folder = Path(cold[name])
        assert folder.parent == tmp_path and folder.is_dir() and not any(folder.iterdir())
        assert warm.get(name) == os.environ.get(name)


def test_the_docs_show_the_newest_records():
    records = newest_records()
    assert set(records) == {"cold", "warm", "cold-at-once"}
    assert all(record["bench"] == "startup" for record in records.values())
    assert table(records) in (ROOT / "docs" / "running.md").read_text()
