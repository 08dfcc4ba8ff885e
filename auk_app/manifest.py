"""The reproducibility record of one result: every knob, the seed, the model, versions, timings.

A manifest is a plain JSON-serialisable dict, returned to API clients and offered as a download
beside the audio. It says what was asked for and what actually ran (Flash ignores nfe, cfg,
sway and custom grids; ``ignored`` lists them), so a result can be re-run exactly.
"""

from __future__ import annotations

import hashlib
import json
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import auk_app

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
    record: dict[str, Any],
    *,
    model: dict[str, Any],
    requested: dict[str, Any],
    source: dict[str, Any] | None,
    output: dict[str, Any],
    level_change: dict[str, Any],
    randomized_seed: bool,
) -> dict[str, Any]:
    """An AuK manifest from the pipeline's ``EditResult.record`` plus what only the app knows."""
    timings = dict(record["timings"])
    return {
        "kind": "auk_edit",
        "created": _now(),
        "model": model["key"],
        "model_label": model["label"],
        "demo_model": model["demo"],
        "variant": record["variant"],
        "checkpoint": record["checkpoint"],
        "checkpoint_name": record["model"],
        "instruction": record["instruction"],
        "seed": record["seed"],
        "randomized_seed": randomized_seed,
        "nfe": record["nfe"],
        "cfg": record["cfg"],
        "sway": record["sway"],
        "t_grid": record["t_grid"],
        "ignored": record["ignored"],
        "requested": requested,
        "gen_frames": record["gen_frames"],
        "ref_frames": record["ref_frames"],
        "frames_capped": record["frames_capped"],
        "fit_to_source": record["fit_to_source"],
        "seconds": record["seconds"],
        "sample_rate": record["sample_rate"],
        "vae_sample": record["vae_sample"],
        "condition_cache_hit": record["condition_cache_hit"],
        "source": source,
        "output": output,
        "level_change": level_change,
        "timings": timings,
        "rtf": record["rtf"],
        "device": record["device"],
        "dtype": record["dtype"],
        "versions": versions(),
    }


def audex_manifest(
    result: Any,
    *,
    caption: str,
    knobs: dict[str, Any],
    model: dict[str, Any],
    output: dict[str, Any] | None,
    randomized_seed: bool,
    unmasked: Any | None,
) -> dict[str, Any]:
    """An Audex manifest from an ``AudexResult`` (and the unmasked comparison run, if any)."""
    report = result.report
    return {
        "kind": "audex_text_to_audio",
        "created": _now(),
        "caption": caption,
        **knobs,
        "seed": result.seed,
        "randomized_seed": randomized_seed,
        "use_mask": True,
        **model,
        "sample_rate": result.sample_rate,
        "seconds": report["seconds"],
        "frames": report["frames"],
        "end_reason": result.end_reason,
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
