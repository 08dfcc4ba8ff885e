"""Length and level of a clip, and how an edit changed them.

Shown on the before/after figure and written to the manifest, so a volume edit of "−10 dB" can
be checked against what the model did. Peak and RMS are in dBFS of the float samples (full
scale 1.0); silence is None rather than −inf, which JSON cannot hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from auk_app import dsp


LEVELS = ("seconds", "peak_dbfs", "rms_dbfs")  # what levels() measures


def levels(mono: np.ndarray, sample_rate: int) -> dict[str, float | None]:
    """``seconds``, ``peak_dbfs`` and ``rms_dbfs`` of a mono clip."""
    return {
        "seconds": round(mono.shape[0] / sample_rate, 4),
        "peak_dbfs": dbfs_or_none(dsp.peak(mono)),
        "rms_dbfs": dbfs_or_none(dsp.rms(mono)),
    }


HEADROOM_DBFS = -1.0  # the ceiling the headroom option keeps the peak under


def headroom_gain(mono: np.ndarray, ceiling_dbfs: float = HEADROOM_DBFS) -> float:
    """The gain (≤ 1, linear) that brings the peak down to ``ceiling_dbfs``; 1 when it is already below.
    Only ever attenuates: the option exists to avoid clipping, not to normalise."""
    peak = dsp.peak(mono)
    ceiling = 10.0 ** (ceiling_dbfs / 20.0)
    return float(min(1.0, ceiling / peak)) if peak > 0 else 1.0


def level_change(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, float | None]:
    """after − before for each of :func:`levels`' numbers (None where either side is silent or absent)."""
    if before is None:
        return {key: None for key in after}
    return {
        key: None if before[key] is None or after[key] is None else round(after[key] - before[key], 2)
        for key in after
    }


def describe(before: dict[str, Any] | None, after: dict[str, Any]) -> str:
    """One line: "duration 3.21 → 3.21 s (+0.00) · peak −3.0 → −13.1 dBFS (−10.1) · RMS …"."""
    change = level_change(before, after)
    parts = []
    for key, name, unit in (("seconds", "duration", "s"), ("peak_dbfs", "peak", "dBFS"), ("rms_dbfs", "RMS", "dBFS")):
        value = _fmt(after[key])
        if before is None:
            parts.append(f"{name} {value} {unit}")
            continue
        delta = "" if change[key] is None else f" ({change[key]:+.2f})"
        parts.append(f"{name} {_fmt(before[key])} → {value} {unit}{delta}")
    return " · ".join(parts)


def dbfs_or_none(value: float) -> float | None:
    """A linear level in dBFS, rounded to 0.01 dB; None for silence."""
    level = dsp.dbfs(value)
    return round(level, 2) if np.isfinite(level) else None


def _fmt(value: float | None) -> str:
    return "−∞" if value is None else f"{value:.2f}"
