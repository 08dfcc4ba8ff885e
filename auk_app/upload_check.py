"""The upload check: what a clip is, and whether the model can use it, before it costs a GPU slot.

The app runs this as the Gradio validator of every AuK request and as ``/inspect_audio``. It
never raises for a bad clip; it returns findings with a verdict (``ok``, ``warning`` or
``rejected``) and one English message that names the problem and the fix. The rejections are
audio_io's (unreadable, damaged) and validate.check_clip's (sample rate, channels, length,
samples to decode, non-finite, absurd peaks, silence): the same checks the pipeline and the CLI run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from auk_app import dsp
from auk_app.audio_io import MonoClip, read_mono
from auk_app.config import SAMPLE_RATE
from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.levels import dbfs_or_none
from auk_app.validate import SILENCE_PEAK, check_clip

# Uploads decoded at once for checks, whoever asks (validators run outside Gradio's queue): with
# the sample budget (Limits.max_decoded_samples, decoded to mono) this caps the memory a burst of
# large uploads can take.
_DECODING = threading.BoundedSemaphore(2)


def check_upload(path: str | Path | None, limits: Limits,
                 read: Callable[[str | Path, Limits], MonoClip] = read_mono) -> dict[str, Any]:
    """Findings for the clip at ``path`` (decoded by ``read``: a server's Uploads, so its edit decodes
    it no more): the keys below, JSON-serialisable (None where unknown)."""
    findings: dict[str, Any] = {
        "sample_rate": None, "channels": None, "duration_s": None, "peak": None, "rms": None,
        "peak_dbfs": None, "rms_dbfs": None, "silent": None, "clipping": None,
        "verdict": "rejected", "message": "",
    }
    if path is None:
        findings["message"] = "No audio was given. Upload or record a clip to check."
        return findings
    try:
        with _DECODING:
            clip = read(path, limits)
    except InputError as exc:
        findings["message"] = str(exc)
        return findings
    mono = clip.mono
    finite = bool(np.isfinite(mono).all())
    findings.update(sample_rate=clip.sample_rate, channels=clip.channels, duration_s=round(clip.seconds, 4))
    if finite and mono.size:
        peak, rms = dsp.peak(mono), dsp.rms(mono)
        findings.update(
            peak=round(peak, 6), rms=round(rms, 6), silent=peak < SILENCE_PEAK, clipping=clip.clipping,
            peak_dbfs=dbfs_or_none(peak), rms_dbfs=dbfs_or_none(rms),
        )
    try:
        check_clip(mono, clip.sample_rate, limits, channels=clip.channels)
    except InputError as exc:
        findings["message"] = str(exc)
        return findings
    notes = []
    if findings["clipping"]:
        findings["verdict"] = "warning"
        notes.append("It clips (flat tops at full scale); the edit will keep that distortion.")
    else:
        findings["verdict"] = "ok"
    conversions = []
    if clip.channels > 1:
        conversions.append(f"mixed from {clip.channels} channels to mono")
    if clip.sample_rate != SAMPLE_RATE:
        conversions.append(f"resampled from {clip.sample_rate / 1000:g} kHz to {SAMPLE_RATE / 1000:g} kHz")
    summary = (
        f"{clip.seconds:.2f} s, {clip.sample_rate / 1000:g} kHz, {clip.channels} channel(s), "
        f"peak {_level(findings['peak_dbfs'])}, RMS {_level(findings['rms_dbfs'])}."
    )
    if conversions:
        notes.append(f"It will be {' and '.join(conversions)}.")
    findings["message"] = " ".join([summary, *notes])
    return findings


def _level(db: float | None) -> str:
    return "−∞ dBFS" if db is None else f"{db:.1f} dBFS"
