"""A batch's manifest, read once: JSONL or CSV rows, a folder of clips, or a benchmark's own files.

One row is one item: ``id``, ``audio`` (a path relative to the manifest; absent to generate),
``instruction``, any knob of :data:`auk_app.knobs.EDIT` (``seconds``, ``seed``, …) and what the
scores read (``expected_text``, ``transcript``, ``clean``, ``task``, ``language``, ``amount``,
``direction``; :mod:`auk_app.batch.layouts`). A row that cannot run (no such file, an unknown
column, an id that is no file name, an id seen before) carries its one sentence in
``Item.problem`` and the others still run; the knobs' own values are checked by the runner, with
the edit's validator. A manifest that cannot be read at all raises :class:`ManifestError`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auk_app.batch.layouts import MING, MING_COLUMNS, OURS, Layout, layout_of, ming_fields
from auk_app.errors import InputError
from auk_app.knobs import EDIT, Knob
from auk_app.validate import shown

SCORE_FIELDS = ("expected_text", "transcript", "clean", "task", "language", "amount", "direction")
COLUMNS = ("id", *EDIT.names, *SCORE_FIELDS)
CLIP_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".aiff", ".aif")
_ID = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,127}")
_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


class ManifestError(InputError):
    """The manifest as a whole cannot be read; nothing runs."""


@dataclass(frozen=True)
class Item:
    """One item: the knobs of its edit (the API's names; ``audio`` a resolved path), what its scores
    read, its row's number (1 is the first item), and why it cannot run, if it cannot."""

    id: str
    knobs: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    row: int = 0
    problem: str | None = None


@dataclass(frozen=True)
class Manifest:
    path: Path
    layout: str
    items: tuple[Item, ...]


def read_manifest(path: str | Path, *, instruction: str | None = None) -> Manifest:
    """The items of ``path``: a JSONL or CSV file (ours or a benchmark's), or a folder of clips, each
    edited by ``instruction``; ``instruction`` also fills rows that have none."""
    path = Path(path)
    if path.is_dir():
        return _folder(path, instruction)
    if not path.is_file():
        raise ManifestError(f"The manifest {path.name} does not exist; give a JSONL or CSV file, or a folder of clips.")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"The manifest {path.name} cannot be read as UTF-8 text ({type(exc).__name__}); give "
                            "a JSONL or CSV file.") from exc
    rows = rows_in(text, path)
    if not rows:
        raise ManifestError(f"The manifest {path.name} has no rows; write one item a line (id, audio, instruction).")
    columns = set().union(*(row for row in rows if isinstance(row, dict)))
    layout = layout_of(columns)
    items = [_item(k + 1, row, path, layout, instruction) for k, row in enumerate(rows)]
    return Manifest(path, OURS if layout is None else layout.name, tuple(_unique(items)))


def rows_in(text: str, path: Path) -> list[Any]:
    """The raw rows of a manifest's ``text`` (JSONL by ``path``'s suffix, else CSV); a row that cannot
    be read is None."""
    return _jsonl(text, path) if path.suffix.lower() in (".jsonl", ".json") else _csv(text, path)


def _jsonl(text: str, path: Path) -> list[Any]:
    rows = []
    for line in text.splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                rows.append(None)  # that row fails, with its sentence
    if rows and all(row is None for row in rows):
        raise ManifestError(f"The manifest {path.name} is not JSON Lines: no line is a JSON object. Write one "
                            'object a line, e.g. {"id": "a", "audio": "a.wav", "instruction": "…"}.')
    return rows


def _csv(text: str, path: Path) -> list[Any]:
    """CSV rows by their header; ``|``-separated with Ming's five columns, with or without a header."""
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    delimiter = max(",|\t;", key=first.count)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    lines = [line for line in reader if any(cell.strip() for cell in line)]
    if not lines:
        return []
    header = [cell.strip() for cell in lines[0]]
    if delimiter == "|" and not {"file_name", "id", "instruction"} & set(header) and len(header) == len(MING_COLUMNS):
        header, lines = list(MING_COLUMNS), [list(MING_COLUMNS), *lines]
    if not {"instruction", "audio", "id"} & set(header) and layout_of(set(header)) is None:
        raise ManifestError(f"The manifest {path.name} has no header row naming its columns (id, audio, "
                            f"instruction); its first line is {shown(first)}.")
    return [dict(zip(header, line)) if len(line) == len(header) else None for line in lines[1:]]


def _folder(folder: Path, instruction: str | None) -> Manifest:
    clips = sorted(p for p in folder.iterdir() if p.suffix.lower() in CLIP_SUFFIXES and p.is_file())
    if not clips:
        raise ManifestError(f"The folder {folder.name} holds no clips ({', '.join(CLIP_SUFFIXES)}); put the clips "
                            "there, or give a manifest file.")
    if not (instruction or "").strip():
        raise ManifestError(f"A folder of clips is edited by one instruction: give it with --instruction, e.g. "
                            f'--instruction "Decrease the volume by 6 dB." for the {len(clips)} clips in {folder.name}.')
    items = [_item(k + 1, {"id": p.stem, "audio": p.name}, folder / "manifest", None, instruction)
             for k, p in enumerate(clips)]
    return Manifest(folder, "folder", tuple(_unique(items)))


def _item(row: int, raw: Any, path: Path, layout: Layout | None, instruction: str | None) -> Item:
    """One row as an item; a problem makes it a failed one, named by its row and id."""
    if not isinstance(raw, dict):
        return Item(f"row{row}", {}, row=row, problem=f"Row {row} is not a record with the manifest's columns; "
                                                       "write it as the header (or a JSON object) says.")
    fields = _ours(raw, path, layout)
    ident = str(fields.pop("id", "") or _default_id(fields, row)).strip()
    problem = _problem(raw, fields, ident, layout)
    knobs = {name: _cell(EDIT[name], fields[name]) for name in EDIT.names if name in fields}
    knobs = {name: value for name, value in knobs.items() if value is not _ABSENT}
    if not knobs.get("instruction") and instruction:
        knobs["instruction"] = instruction
    if "audio" in knobs:
        knobs["audio"], missing = _resolve(str(knobs["audio"]), path, layout)
        problem = problem or missing
    meta = {name: fields[name] for name in SCORE_FIELDS if fields.get(name) not in (None, "")}
    if "clean" in meta:
        meta["clean"], missing = _resolve(str(meta["clean"]), path, layout)
        problem = problem or (missing and missing.replace("audio file", "clean reference"))
    return Item(ident, knobs, meta, row, problem and f"Row {row} ({ident}): {problem}")


def _ours(raw: dict, path: Path, layout: Layout | None) -> dict[str, Any]:
    if layout is None:
        return dict(raw)
    fields = layout.read(raw)
    return ming_fields(fields, path) if layout.name == MING else fields


def _default_id(fields: dict[str, Any], row: int) -> str:
    audio = fields.get("audio")
    return Path(str(audio)).stem if audio else f"row{row}"


def _problem(raw: dict, fields: dict, ident: str, layout: Layout | None) -> str | None:
    unknown = [] if layout is not None else [name for name in raw if name not in COLUMNS]
    if unknown:
        return (f"the column {shown(unknown[0])} is no knob or field of a batch row; the columns are id, audio, "
                "instruction, the knobs of /edit_audio and expected_text, transcript, clean, task, language.")
    if not _ID.fullmatch(ident) or ident in (".", ".."):
        return f"the id {shown(ident)} is not a file name; use letters, digits, '-', '_' and '.' (128 at most)."
    return None


_ABSENT = object()


def _cell(knob: Knob, value: Any) -> Any:
    """A CSV cell as the knob's check takes it: a number for a number, a flag for a switch; an empty
    cell is left out (the default). What does not parse stays as written, for the check to refuse."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return _ABSENT
    if knob.widget == "checkbox":
        return True if text.lower() in _TRUE else False if text.lower() in _FALSE else text
    if knob.widget in ("number", "slider"):
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() and abs(number) < 2**63 else number
    return text if knob.widget != "text" else value


def _resolve(value: str, manifest: Path, layout: Layout | None) -> tuple[str, str | None]:
    """Where ``value`` lies: beside the manifest, else under one of its ancestors (a benchmark's root),
    in the layout's clip folder there; the problem when it is nowhere."""
    given = Path(value)
    if given.is_absolute() and given.is_file():
        return str(given), None
    bases = [manifest.parent, *manifest.parent.parents][:4]
    places = [(base, "") for base in bases if not given.is_absolute()]
    places += [(base, sub) for base in bases for sub in (layout.audio_dirs if layout else ())]
    for base, sub in places:
        candidate = base / sub / given.name if sub else base / given
        if candidate.is_file():
            return str(candidate), None
    return str(manifest.parent / given), f"the audio file {value} does not exist beside the manifest."


def _unique(items: list[Item]) -> list[Item]:
    """The second of two items with one id fails: their files would overwrite each other."""
    seen: set[str] = set()
    kept = []
    for item in items:
        if item.id in seen and item.problem is None:
            item = Item(item.id, item.knobs, item.meta, item.row,
                        f"Row {item.row} ({item.id}): the id {item.id} is used by a row above it; give each row its own.")
        seen.add(item.id)
        kept.append(item)
    return kept
