"""The reproducibility record of one result: every knob, the seed, the model, versions, timings.

A manifest is a plain JSON-serialisable dict, returned to API clients and offered as a download
beside the audio. It says what was asked for and what actually ran (Flash ignores nfe, cfg,
sway and custom grids; ``ignored`` lists them), so a result can be re-run exactly.
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import asdict
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import auk_app
from auk_app.audex.request import TextToAudioResult
from auk_app.auk.request import EditRecord

_VERSIONED = ("gradio", "gradio_client", "torch", "transformers", "numpy")


def versions() -> dict[str, str]:
    """Versions of the app and the libraries that decide the numbers (read without importing them)."""
    found = {"auk_app": auk_app.__version__, "python": platform.python_version()}
    for name in _VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def edit_manifest(
    record: EditRecord,
    *,
    model: dict[str, Any],
    requested: dict[str, Any],
    source: dict[str, Any] | None,
    output: dict[str, Any],
    level_change: dict[str, Any],
    region_level_change: dict[str, Any] | None,
    randomized_seed: bool,
    warnings: list[str],
    check: dict[str, Any] | None = None,
    candidate: dict[str, Any] | None = None,
    builder: dict[str, Any] | None = None,
    enhanced: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An AuK manifest: every field of the pipeline's record plus what only the app knows, and the
    warnings a reader of the file alone must see (clipping, a task the model was not trained for).
    ``check`` is the edit check's entry (task, asked, got, unit, tolerance, pass, and its line as
    ``display``); ``candidate`` this result's place among the request's seeds (rank, of, seeds)."""
    return {
        "kind": "auk_edit",
        "created": _now(),
        "model": model["key"],
        "model_label": model["label"],
        "demo_model": model["demo"],
        **_flat(record),
        "randomized_seed": randomized_seed,
        "requested": requested,
        "source": source,
        "output": output,
        "level_change": level_change,
        "region_level_change": region_level_change,  # the edited region's own; None without a region
        "warnings": warnings,
        "check": check,
        "candidate": candidate,
        "builder": builder,  # the builder's task and the speaker's pace, when it wrote the instruction
        "enhance": enhanced,  # the request as asked and as rewritten into the cookbook's wording
        "versions": versions(),
    }


def _flat(record: EditRecord) -> dict[str, Any]:
    """The record as a client reads it back (tuples as lists), its recipe's fields at the top (all but
    ``fixed``: the variant says that)."""
    fields = json.loads(json.dumps(asdict(record)))
    recipe = fields.pop("recipe")
    recipe.pop("fixed")
    return {**recipe, **fields}


def audex_manifest(made: TextToAudioResult, *, output: dict[str, Any] | None, randomized_seed: bool) -> dict[str, Any]:
    """An Audex manifest from a text-to-audio result (and its unmasked comparison run, if any)."""
    request, result, unmasked = made.request, made.result, made.unmasked
    report = result.report
    # The app's knobs and the sampler's arguments they became (cfg_scale, codec_cap, top_p, use_mask, …).
    knobs = {"cfg": request.sampling.cfg_scale, "max_seconds": request.max_seconds, **request.sampling.knobs()}
    return {
        "kind": "audex_text_to_audio",
        "created": _now(),
        "caption": request.caption,
        **knobs,
        "seed": result.seed,
        "randomized_seed": randomized_seed,
        **made.model,
        "sample_rate": result.sample_rate,
        "seconds": report["seconds"],
        "frames": report["frames"],
        "end_reason": result.end_reason,
        "warnings": list(made.warnings),
        "report": report,
        "output": output,
        "timings": {k: round(v, 4) for k, v in result.timings.items()},
        "tokens_per_second": round(result.tokens_per_second, 2),
        "rtf": round(sum(result.timings.values()) / report["seconds"], 4) if report["seconds"] else None,
        "unmasked": None if unmasked is None else {
            "report": unmasked.report,
            "end_reason": unmasked.end_reason,
            "timings": {k: round(v, 4) for k, v in unmasked.timings.items()},
            "tokens_per_second": round(unmasked.tokens_per_second, 2),
        },
        "versions": versions(),
    }


def write_manifest(path: str | Path, manifest: dict[str, Any]) -> Path:
    path = Path(path)
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
