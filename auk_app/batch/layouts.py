"""The public editing benchmarks' own manifest layouts, mapped onto a batch row's fields.

A row of ours has ``id``, ``audio``, ``instruction``, any knob, and what the scores need:
``expected_text`` (what the result should say), ``transcript`` (what the source says), ``clean``
(a clean reference), ``task``, ``language``, ``amount`` (the number the benchmark asks: a gain
factor for volume, a speed factor, semitones) and ``direction`` (faster, slower, higher, lower).
Each benchmark names these its own way; the tables below are the whole mapping, so a field that a
release renames is corrected here. A dotted name reads inside an object (``anchor.direction``);
of several names the first present wins.

* SpeechEditBench: ``data/<task>/samples.jsonl``, one JSON object a line; audio paths are relative to
  the samples file's folder or else to the release's root (the folder that holds ``data/``).
* Ming-Freeform-Audio-Edit: ``meta/<task>/meta_<lang>_<task>.csv``, ``|``-separated, with the header
  ``file_name|path|instruction|original_text|edited_text`` (the acoustic tasks' rows carry the same
  five fields, the last one a call such as ``vol(1.5)``); the clip is ``wavs/<basename of path>``
  under the release's root, and the task is the meta folder's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OURS = "rows"
SPEECHEDITBENCH = "SpeechEditBench"
MING = "Ming-Freeform-Audio-Edit"
MING_COLUMNS = ("file_name", "path", "instruction", "original_text", "edited_text")


@dataclass(frozen=True)
class Layout:
    """A benchmark's layout: the columns that identify it and where each field of ours is."""

    name: str
    identified_by: frozenset[str]
    fields: dict[str, tuple[str, ...]]
    ignored: bool = True  # its other columns are the benchmark's metadata, not unknown knobs
    audio_dirs: tuple[str, ...] = field(default=())  # folders under an ancestor where its clips may lie

    def read(self, row: dict[str, Any]) -> dict[str, Any]:
        """Our fields of ``row``, those it has."""
        found = {}
        for ours, theirs in self.fields.items():
            for name in theirs:
                value = _dotted(row, name)
                if value not in (None, ""):
                    found[ours] = value
                    break
        return found


def _dotted(row: dict[str, Any], name: str) -> Any:
    value: Any = row
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


LAYOUTS = (
    Layout(SPEECHEDITBENCH, frozenset({"sample_id", "audio_path"}), {
        "id": ("sample_id",), "audio": ("audio_path",), "instruction": ("instruction",),
        "transcript": ("transcript",), "expected_text": ("anchor.transcript_target",),
        "clean": ("anchor.target_reference_path",), "language": ("language",),
        "task": ("anchor.prosody_type", "anchor.subtask", "task"), "direction": ("anchor.direction",),
    }),
    Layout(MING, frozenset({"file_name", "path", "original_text"}), {
        "id": ("file_name",), "audio": ("path",), "instruction": ("instruction",),
        "transcript": ("original_text",), "expected_text": ("edited_text",),
    }, audio_dirs=("wavs",)),
)

# A benchmark's task names, as the scores take them; a name not here keeps its own (checked, not scored).
TASKS = {
    "vol": "volume", "volume": "volume",
    "time_stretch": "speed", "speed": "speed",
    "pitch_shift": "pitch", "pitch": "pitch",
    "del": "content", "ins": "content", "sub": "content", "deletion": "content", "insertion": "content",
    "substitution": "content", "content_editing": "content", "content": "content",
    "enhancement": "enhancement", "denoise": "enhancement",
}

_CALL = re.compile(r"^\s*\w+\(\s*(-?\d+(?:\.\d+)?)\s*\)\s*$")  # Ming's "vol(1.5)", "time_stretch(0.8)"
_LAST_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?)\s*\.?\s*$")  # "... adjusts the volume to 1.5"


def layout_of(columns: set[str]) -> Layout | None:
    """The benchmark layout whose identifying columns ``columns`` holds; None for our own rows."""
    return next((layout for layout in LAYOUTS if layout.identified_by <= columns), None)


def ming_fields(fields: dict[str, Any], manifest: Path) -> dict[str, Any]:
    """Ming's acoustic rows: the task from the meta folder's name, the amount from the call in the
    last column (which then is no expected text) or else from the instruction's last number."""
    fields = {**fields, "task": manifest.parent.name}
    called = _CALL.match(str(fields.get("expected_text", "")))
    if called:
        fields.pop("expected_text")
        fields["amount"] = float(called.group(1))
    elif TASKS.get(fields["task"]) in ("volume", "speed", "pitch"):
        last = _LAST_NUMBER.search(str(fields.get("instruction", "")))
        if last:
            fields["amount"] = float(last.group(1))
    return fields
