"""The edit check: measure a result against its source for the target its instruction asks for
(the tolerances, and why: :mod:`auk_app.check.tolerances`), with what it kept of the source
(:mod:`auk_app.check.kept`) and what else it changed (:mod:`auk_app.check.unasked`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from auk_app.audio_io import full_scale_samples
from auk_app.check.kept import keep_scores, lowest
from auk_app.check.measures import Clip, pitch_change, speed_factor, volume_change
from auk_app.check.result import AT_LEAST, AT_MOST, EXACT, KEEP_MIN, LESS, MORE, EditCheck, unmeasured
from auk_app.check.targets import DENOISE, NO_TASK, PITCH, SPEED, TONE, TRIM, VOLUME, Target, target_from_text
from auk_app.check.tolerances import (DENOISE_MIN_DB, DENOISE_TOLERANCE_DB, PITCH_TOLERANCE_CENTS, SPEED_TOLERANCE,
                                      TRIM_MAX_SECONDS, TRIM_TOLERANCE_SECONDS, VOLUME_TOLERANCE_DB)
from auk_app.check.unasked import unasked

NO_CHANGE = {VOLUME: 0.0, PITCH: 0.0, SPEED: 1.0}  # what a direction is measured from
# Tasks whose other changes are named even when their own number cannot be measured: a request with
# neither number nor direction, and one that reads as no task at all, still changed the sound somehow.
UNASKED_WHEN_UNMEASURED = {VOLUME, PITCH, SPEED, NO_TASK.task}
NO_SINGLE_PITCH = "the source holds no single pitch for pYIN to follow (a chord, a mixture or noise)"


def check(target: Target | str, source: np.ndarray | Clip | None, result: np.ndarray | Clip,
          sample_rate: int) -> EditCheck:
    """Check ``result`` (mono, ``sample_rate``) against ``source`` for ``target``, or for the
    target of an instruction's text. ``source`` may be None only for tone generation; pass it
    as one ``Clip`` to check several candidates against it without measuring it again. The
    result's samples at full scale (as a PCM16 WAV holds them) are counted whatever the task."""
    target = target_from_text(target) if isinstance(target, str) else target
    out = _clip(result, sample_rate)
    return replace(_measured(target, source, out, sample_rate), clipped=full_scale_samples(out.wav))


def _measured(target: Target, source: np.ndarray | Clip | None, out: Clip, sample_rate: int) -> EditCheck:
    if target.measurable and target.task == TONE:
        return _tone(target, out)
    if not target.measurable and (source is None or target.task not in UNASKED_WHEN_UNMEASURED):
        return unmeasured(target.task, target.reason)
    if source is None:
        return unmeasured(target.task, "it changes a source clip, and none was given to compare with")
    before = _clip(source, sample_rate)
    verdict = _CHECKS[target.task](target, before, out) if target.measurable else unmeasured(target.task, target.reason)
    return replace(verdict, unasked=unasked(target.task, before, out))


def _clip(audio: np.ndarray | Clip, sample_rate: int) -> Clip:
    if isinstance(audio, Clip):
        if audio.rate != sample_rate:
            raise ValueError(f"a clip at {audio.rate} Hz checked at {sample_rate} Hz")
        return audio
    return Clip(audio, sample_rate)


def _verdict(task: str, asked: float, got: float, unit: str, tolerance: float, note: str,
             bound: str = EXACT, scores: dict[str, float] | None = None) -> EditCheck:
    """An EditCheck whose ``passed`` follows from the error and what was kept (``scores``, by measure,
    nan where one does not apply; None where nothing should be kept)."""
    got = got if math.isfinite(got) else None
    kept = None if scores is None else lowest(scores)
    kept = kept if kept is None or math.isfinite(kept) else None
    kept_by = None if scores is None else {name: s if math.isfinite(s) else None for name, s in scores.items()}
    draft = EditCheck(task, asked, got, unit, tolerance, None, note + _kept_note(kept_by), bound, kept, kept_by=kept_by)
    return replace(draft, passed=draft.on_target and (kept is None or kept >= KEEP_MIN))


def _kept_note(kept_by: dict[str, float | None] | None) -> str:
    """"; kept: contour 0.94, spectrum 0.93, melody not measured" (each measure of what was kept)."""
    if kept_by is None:
        return ""
    return "; kept: " + ", ".join(f"{name} {'not measured' if s is None else f'{s:.2f}'}" for name, s in kept_by.items())


def _asked(target: Target, scale: float = 1.0) -> tuple[float, str]:
    """The asked number in the check's unit and its bound: the number as said, or for a direction
    no change and ``>``/``<``."""
    if target.direction:
        return NO_CHANGE[target.task], MORE if target.direction > 0 else LESS
    return target.asked * scale, EXACT


def _volume(target: Target, source: Clip, out: Clip) -> EditCheck:
    got, measure = volume_change(source, out)
    scores = keep_scores(source, out, timing_kept=True)
    asked, bound = _asked(target)
    return _verdict(VOLUME, asked, got, "dB", VOLUME_TOLERANCE_DB, f"{measure} difference", bound, scores)


def _pitch(target: Target, source: Clip, out: Clip) -> EditCheck:
    if not math.isfinite(source.median_f0):
        return unmeasured(PITCH, "the source has no voiced frames to take a pitch from")
    if not source.single_pitch:
        return unmeasured(PITCH, NO_SINGLE_PITCH)
    got = pitch_change(source, out)
    scores = keep_scores(source, out, timing_kept=True, shift_cents=got if math.isfinite(got) else 0.0,
                         spectrum_kept=False, bands_kept=False)
    note = f"median F0 {source.median_f0:.1f} → {out.median_f0:.1f} Hz (pYIN)"
    asked, bound = _asked(target, 100)
    return _verdict(PITCH, asked, got, "cents", PITCH_TOLERANCE_CENTS, note, bound, scores)


def _speed(target: Target, source: Clip, out: Clip) -> EditCheck:
    scores = keep_scores(source, out, timing_kept=False)
    note = f"sounding length {source.active_seconds:.2f} s → {out.active_seconds:.2f} s"
    asked, bound = _asked(target)
    return _verdict(SPEED, asked, speed_factor(source, out), "×", SPEED_TOLERANCE * asked, note, bound, scores)


def _denoise(target: Target, source: Clip, out: Clip) -> EditCheck:
    scores = keep_scores(source, out, timing_kept=True, spectrum_kept=False, floor_removed=True)
    note = f"noise floor {source.noise_floor:.1f} → {out.noise_floor:.1f} dBFS"
    return _verdict(DENOISE, DENOISE_MIN_DB, out.snr - source.snr, "dB SNR", DENOISE_TOLERANCE_DB, note, AT_LEAST,
                    scores)


def _trim(target: Target, source: Clip, out: Clip) -> EditCheck:
    scores = keep_scores(source, out, timing_kept=False)
    (lead, trail), (src_lead, src_trail) = out.edge_silence, source.edge_silence
    note = f"silence at the ends {src_lead:.2f} s + {src_trail:.2f} s → {lead:.2f} s + {trail:.2f} s"
    return _verdict(TRIM, TRIM_MAX_SECONDS, max(lead, trail), "s", TRIM_TOLERANCE_SECONDS, note, AT_MOST, scores)


def _tone(target: Target, out: Clip) -> EditCheck:
    tolerance = target.asked * (1 - 2 ** (-PITCH_TOLERANCE_CENTS / 1200))
    return _verdict(TONE, target.asked, out.median_f0, "Hz", tolerance, "median F0 of the result (pYIN)")


_CHECKS = {VOLUME: _volume, PITCH: _pitch, SPEED: _speed, DENOISE: _denoise, TRIM: _trim}
