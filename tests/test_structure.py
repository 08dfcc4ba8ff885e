"""The code's shape: short functions, each knob declared once, no history or outside references in
the words, no machine paths in the committed records."""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from auk_app.knobs import EDIT

ROOT = Path(__file__).resolve().parent.parent
CODE = [*sorted((ROOT / "auk_app").rglob("*.py")), *sorted((ROOT / "bench").rglob("*.py")),
        *sorted((ROOT / "training").rglob("*.py")), ROOT / "app.py"]
LONGEST_FUNCTION = 60
# The edit's knobs whose names mean nothing else in the package ("seed", "audio", "cfg", "candidates"
# … name other things too): each lives in its schema and where the model or the app uses it.
DISTINCT_KNOBS = ("nfe", "sway", "t_grid", "vae_sample", "randomize_seed", "region_start", "region_end", "headroom",
                  "step_cache", "cfg_interval")
MOST_FILES_PER_KNOB = 4


def test_no_function_is_longer_than_sixty_lines():
    long = []
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LONGEST_FUNCTION:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({lines} lines)")
    assert not long, long


def _code_names(path: Path) -> set[str]:
    """The names and plain string constants a file's code uses (comments and docstrings aside)."""
    names = set()
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.NAME:
            names.add(token.string)
        elif token.type == tokenize.STRING and re.fullmatch(r"[\"'][\w]+[\"']", token.string):
            names.add(token.string[1:-1])
    return names


@pytest.mark.parametrize("knob", DISTINCT_KNOBS)
def test_a_knob_is_named_in_at_most_four_files(knob):
    assert knob in EDIT
    files = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "auk_app").rglob("*.py")) if knob in _code_names(p)]
    assert "auk_app/knobs.py" in files and len(files) <= MOST_FILES_PER_KNOB, files


OUTSIDE_OR_HISTORY = re.compile(r"[Ii]ssue \d+|[Ii]tem \d+ of|spec §|§\d|peer_apps|style\.md|\bused to\b|an earlier ")


def test_comments_say_why_in_the_present_without_outside_references():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in [*CODE, *sorted((ROOT / "tests").rglob("*.py"))] if path != Path(__file__)
             for number, line in enumerate(path.read_text().splitlines(), 1) if OUTSIDE_OR_HISTORY.search(line)]
    assert not found, found


OUTSIDE_DOCUMENTS = re.compile(r"[Ii]ssue \d+|design card|seed document|shared/|style\.md|peer_apps|spec §")


def test_the_docs_name_no_issues_or_outside_documents():
    """A reader of the repository has its docs, not the team's issues or the documents it was made from."""
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for number, line in enumerate(path.read_text().splitlines(), 1) if OUTSIDE_DOCUMENTS.search(line)]
    assert not found, found


def _strings(value):
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_committed_records_carry_no_machine_paths():
    records = sorted((ROOT / "bench" / "results").glob("*.json"))
    assert records
    for record in records:
        paths = [s for s in _strings(json.loads(record.read_text())) if re.match(r"/(work|root|tmp|home|opt|usr|mnt)/", s)]
        assert not paths, (record.name, paths)


def test_the_request_and_the_order_hold_exactly_the_schemas_knobs():
    """EditRequest (written out, for readers and type checkers) holds the knobs the run reads, the
    instruction first and the others in the schema's order; EditOrder holds the app's own; together
    every knob of the edit, each once."""
    from dataclasses import fields

    from auk_app.auk.request import EditRequest
    from auk_app.results import EditOrder

    run = [k.name for k in EDIT if k.run]
    assert [f.name for f in fields(EditRequest) if f.name != "limits"] == ["instruction"] + [
        name for name in run if name != "instruction"]
    own = {f.name for f in fields(EditOrder)} & set(EDIT.names)
    assert own == {k.name for k in EDIT if not k.run}
