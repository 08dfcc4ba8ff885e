"""The task recogniser (``auk_app.recognise``) on held-out wordings: accuracy per task, and the misses.

    python -m bench.bench_recogniser [--data bench/data/recogniser_heldout.tsv] [--out bench/results/DATE-recogniser.json]

Each wording names the task it asks for (its template variant too: "enhance:Remove noise"), or
"none", and the fields that must come out of it. Three scores per task: the task recognised (for
"none": no task); the task and every listed field; and whether the app warns before running it on
the demo model exactly when it should: when the demo lacks the task, reads no Chinese, or the
request is of no task (``recognise.untrained`` and ``recognise.unmatched`` with the demo's
declared capabilities). Prints a Markdown table and every miss; ``--out`` writes them as JSON.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from auk_app import demo
from auk_app.auk.checkpoint import Capabilities, read_auk_checkpoint
from auk_app.instructions import ZH, supports
from auk_app.recognise import language_of, recognise, unmatched, untrained

HELDOUT = Path(__file__).resolve().parent / "data" / "recogniser_heldout.tsv"
NONE = "none"
ANY = "*"  # a field that must be found, whatever its words


@dataclass(frozen=True)
class Case:
    expected: str  # a template key, a task key, or NONE
    fields: dict[str, str]
    wording: str

    @property
    def task(self) -> str:
        return self.expected.partition(":")[0]


@dataclass(frozen=True)
class Scored:
    case: Case
    found: str  # the recognised template key, or NONE
    found_fields: dict[str, str]
    task_right: bool
    fields_right: bool
    warned: bool
    warning_right: bool


def load(path: Path) -> list[Case]:
    """The wordings of a held-out file: tab-separated ``expected``, ``fields`` (name=value;…), ``wording``."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    cases = []
    for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE):
        fields = dict(pair.split("=", 1) for pair in row["fields"].split(";") if pair)
        cases.append(Case(row["expected"], fields, row["wording"]))
    return cases


def score(case: Case, capabilities: Capabilities, label: str = "the demo") -> Scored:
    found = recognise(case.wording)
    key = NONE if found is None else found.key
    fields = {} if found is None else dict(found.fields)
    fields_right = all(fields.get(name) and (value == ANY or fields[name] == value)
                       for name, value in case.fields.items())
    language = language_of(case.wording)
    warned = bool(untrained(found, language, capabilities.tasks, capabilities.languages)
                  or unmatched(found, capabilities.tasks, label))
    should_warn = (case.expected == NONE or not supports(capabilities.tasks, case.expected)
                   or (ZH not in capabilities.languages and language == ZH))
    return Scored(case, key, fields, key == case.expected, key == case.expected and fields_right, warned,
                  warned == should_warn)


def summarize(scored: list[Scored]) -> dict[str, dict]:
    """Per task (in the file's order) and over all: wordings, and the share right by each score."""
    summary: dict[str, dict] = {}
    for task in [*dict.fromkeys(s.case.task for s in scored), "all"]:
        rows = [s for s in scored if task in ("all", s.case.task)]
        summary[task] = {"wordings": len(rows), **{name: sum(getattr(s, name) for s in rows) / len(rows)
                                                   for name in ("task_right", "fields_right", "warning_right")}}
    return summary


def misses(scored: list[Scored]) -> list[dict]:
    return [{"wording": s.case.wording, "expected": s.case.expected, "fields": s.case.fields, "found": s.found,
             "found_fields": s.found_fields, "warned": s.warned}
            for s in scored if not (s.fields_right and s.warning_right)]


def table(summary: dict[str, dict]) -> str:
    lines = ["| task | wordings | task right | task and fields right | demo warns when it should |",
             "|---|---|---|---|---|"]
    for task, row in summary.items():
        name = "**all**" if task == "all" else "no task" if task == NONE else f"`{task}`"
        lines.append(f"| {name} | {row['wordings']} | {row['task_right']:.0%} | {row['fields_right']:.0%} | "
                     f"{row['warning_right']:.0%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=HELDOUT)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    demo.register()
    tiny = read_auk_checkpoint(demo.DEMO_DIR)
    scored = [score(case, tiny.capabilities, tiny.name) for case in load(args.data)]
    summary = summarize(scored)
    print(table(summary))
    missed = misses(scored)
    print(f"\n{len(missed)} misses:")
    for miss in missed:
        print(f"  {miss['wording']!r}: expected {miss['expected']} {miss['fields'] or ''}, "
              f"got {miss['found']} {miss['found_fields'] or ''}{'' if miss['warned'] else ', no warning'}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        record = {"date": datetime.date.today().isoformat(), "data": args.data.name,
                  "capabilities": asdict(demo.capabilities), "summary": summary, "misses": missed}
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
