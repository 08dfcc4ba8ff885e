"""Whole sets of clips: a manifest read once, every item an edit job, the benchmarks' scores, a report.

    from auk_app.batch import read_manifest, BatchRun, write_report
    manifest = read_manifest("set.jsonl")            # rows, a folder of clips, or a benchmark's own files
    outcomes = BatchRun(studio, manifest, out_dir).run()  # items side by side through the step batcher
    write_report(out_dir, outcomes)                   # report.csv, report.md, a figure per task

``manifest`` reads the rows (and the public benchmarks' layouts, mapped in ``layouts``), ``runner``
runs them as :class:`~auk_app.job.EditJob` orders and writes each whole or not at all, ``scores``
measures them the way the benchmarks do (``speaker`` lends the speaker model), ``report`` sums
them up. Nothing here knows a page or a terminal: the CLI and the Batch tab draw the progress.
"""

from auk_app.batch.manifest import Item, Manifest, ManifestError, read_manifest
from auk_app.batch.report import summary_text, write_report
from auk_app.batch.runner import BatchRun, Outcome, Tally

__all__ = ["BatchRun", "Item", "Manifest", "ManifestError", "Outcome", "Tally", "read_manifest", "summary_text",
           "write_report"]
