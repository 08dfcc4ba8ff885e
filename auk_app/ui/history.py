"""This browser session's results: one small entry per edit or text-to-audio run, newest first.

The page keeps the list in the browser (Gradio's BrowserState, so it survives a reload); an entry
holds what restores its run (the settings the manifest recorded, the seed it used) and the paths of
its files, never the audio. Files live in Gradio's temp folder for an hour: an entry whose files
are gone still restores its settings, and says so. What the browser sends back is checked here
before use (:func:`entries`, :func:`kept`), since a client can send anything: only files inside
that folder are ever read or offered.

Plain data and files, no Gradio: the panel that shows the list is :mod:`auk_app.ui.history_panel`.
"""

from __future__ import annotations

import json
import uuid
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from auk_app.knobs import AUDEX, EDIT, replaying

MAX_ENTRIES = 50
KINDS = ("edit", "audex")
_FIELDS = {"id": str, "kind": str, "text": str, "model": str, "seed": int, "verdict": str, "created": str,
           "settings": dict}
_FILES = ("audio", "manifest", "source")  # paths; "audio" is None when nothing decodable came out


def edit_entry(manifest: Mapping[str, Any], *, seed: int, audio: str, manifest_file: str,
               source: str | None) -> dict[str, Any]:
    """An edit's entry from its manifest: ``seed`` is the request's (the lowest of its candidates'), so
    that running it again gives every candidate again; ``source`` the clip it edited (None: none)."""
    settings = replaying({k: manifest["requested"].get(k) for k in EDIT.names if k != "audio"}, seed)
    return _entry("edit", manifest["requested"]["instruction"] or "", manifest["model_label"], seed,
                  manifest["check"]["display"], manifest["created"], settings,
                  audio=audio, manifest=manifest_file, source=source)


def audex_entry(manifest: Mapping[str, Any], *, audio: str | None, manifest_file: str) -> dict[str, Any]:
    """A text-to-audio run's entry from its manifest (which names its knobs as the API does, the
    comparison run as ``unmasked``)."""
    recorded = {k: manifest[k] for k in AUDEX.names if k in manifest}
    settings = replaying({**recorded, "compare_unmasked": manifest["unmasked"] is not None}, manifest["seed"])
    report = manifest["report"]
    verdict = ("RVQ phase valid ✓" if report["phase_valid"]
               else f"{report['mismatch_count']} RVQ phase mismatches ✗")
    if audio is None:
        verdict += " · nothing decodable"
    return _entry("audex", manifest["caption"], manifest["model"], manifest["seed"], verdict, manifest["created"],
                  settings, audio=audio, manifest=manifest_file, source=None)


def _entry(kind, text, model, seed, verdict, created, settings, **files) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex[:12], "kind": kind, "text": text, "model": model, "seed": seed,
            "verdict": verdict, "created": created, "settings": settings, **files}


def added(history: Any, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """``entry`` first, then the history's others, the last :data:`MAX_ENTRIES` in all."""
    return [entry, *entries(history)][:MAX_ENTRIES]


def entries(value: Any) -> list[dict[str, Any]]:
    """The well-formed entries of what the browser sent, at most :data:`MAX_ENTRIES` (anything else,
    such as a list an older page wrote, is dropped)."""
    if not isinstance(value, list):
        return []
    return [entry for entry in value if _well_formed(entry)][:MAX_ENTRIES]


def _well_formed(entry: Any) -> bool:
    return (isinstance(entry, dict) and entry.get("kind") in KINDS
            and all(isinstance(entry.get(name), kind) for name, kind in _FIELDS.items())
            and all(entry.get(name) is None or isinstance(entry.get(name), str) for name in _FILES))


def find(history: Any, entry_id: Any) -> dict[str, Any] | None:
    return next((entry for entry in entries(history) if entry["id"] == entry_id), None)


def kept(path: Any, root: str | Path) -> Path | None:
    """``path`` when it is a file still there inside ``root`` (Gradio's temp folder), else None."""
    if not isinstance(path, str) or not path:
        return None
    found, root = Path(path).resolve(), Path(root).resolve()
    return found if found.is_file() and found.is_relative_to(root) else None


def gone(entry: dict[str, Any], root: str | Path) -> bool:
    """Whether the entry's result is no longer kept (its WAV, or with no WAV its manifest)."""
    return kept(entry["audio"] or entry["manifest"], root) is None


def bundle(history: Any, path: str | Path, root: str | Path) -> Path:
    """One zip at ``path`` of every entry's WAV and manifest still kept, numbered oldest first, and
    ``history.json``: each entry's settings, seed, verdict and the names of its files in the zip."""
    listed = []
    with zipfile.ZipFile(path, "w") as archive:
        for number, entry in enumerate(reversed(entries(history)), 1):
            names = []
            for name in ("audio", "manifest"):
                file = kept(entry[name], root)
                if file is not None:
                    names.append(f"{number:02d}_{file.name}")
                    # WAVs barely compress; the manifests do.
                    archive.write(file, names[-1], zipfile.ZIP_STORED if name == "audio" else zipfile.ZIP_DEFLATED)
            listed.append({"number": number, **{k: entry[k] for k in _FIELDS if k != "id"}, "files": names})
        archive.writestr("history.json", json.dumps(listed, indent=2, ensure_ascii=False) + "\n",
                         zipfile.ZIP_DEFLATED)
    return Path(path)
