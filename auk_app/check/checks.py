"""The edit check: measure a result against its source for the target its instruction asks for.

Tolerances, and why:

* volume ±1 dB: about the smallest level change a listener notices; LUFS of a pure gain is exact.
* pitch ±50 cents: half a semitone, so the nearest semitone is the asked one; pYIN's grid is 10 cents.
* speed ±5 % of the factor: the sounding length's ends are found on 5 ms hops, and a syllable's
  onset or decay near the 40 dB silence line moves them by some tens of ms on a short clip.
* tone ±50 cents of the asked frequency (as Hz, the narrower, downward side): the pitch bar.
* noise removal: the SNR estimate rises by at least 6 dB (the noise's power quartered), ±1 dB.
* silence trimmed: at most 0.1 s of silence left at either end (a natural onset), ±0.05 s.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from auk_app.audio_io import full_scale_samples
from auk_app.check.measures import Clip, keep_similarity, pitch_change, speed_factor, volume_change
from auk_app.check.result import AT_LEAST, AT_MOST, EXACT, KEEP_MIN, EditCheck, unmeasured
from auk_app.check.targets import DENOISE, PITCH, SPEED, TONE, TRIM, VOLUME, Target, target_from_text

VOLUME_TOLERANCE_DB = 1.0
PITCH_TOLERANCE_CENTS = 50.0
SPEED_TOLERANCE = 0.05  # relative
DENOISE_MIN_DB, DENOISE_TOLERANCE_DB = 6.0, 1.0
TRIM_MAX_SECONDS, TRIM_TOLERANCE_SECONDS = 0.1, 0.05


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
    if not target.measurable:
        return unmeasured(target.task, target.reason)
    if target.task == TONE:
        return _tone(target, out)
    if source is None:
        return unmeasured(target.task, "it changes a source clip, and none was given to compare with")
    return _CHECKS[target.task](target, _clip(source, sample_rate), out)


def _clip(audio: np.ndarray | Clip, sample_rate: int) -> Clip:
    if isinstance(audio, Clip):
        if audio.rate != sample_rate:
            raise ValueError(f"a clip at {audio.rate} Hz checked at {sample_rate} Hz")
        return audio
    return Clip(audio, sample_rate)


def _verdict(task: str, asked: float, got: float, unit: str, tolerance: float, note: str,
             bound: str = EXACT, kept: float | None = None) -> EditCheck:
    """An EditCheck whose ``passed`` follows from the error and what was kept."""
    got = got if math.isfinite(got) else None
    kept = kept if kept is None or math.isfinite(kept) else None
    draft = EditCheck(task, asked, got, unit, tolerance, None, note, bound, kept)
    return replace(draft, passed=draft.error <= 1 and (kept is None or kept >= KEEP_MIN))


def _volume(target: Target, source: Clip, out: Clip) -> EditCheck:
    got, measure = volume_change(source, out)
    kept = keep_similarity(source, out, timing_kept=True)
    note = f"{measure} difference; contour, spectrum and melody kept"
    return _verdict(VOLUME, target.asked, got, "dB", VOLUME_TOLERANCE_DB, note, kept=kept)


def _pitch(target: Target, source: Clip, out: Clip) -> EditCheck:
    if not math.isfinite(source.median_f0):
        return unmeasured(PITCH, "the source has no voiced frames to take a pitch from")
    got = pitch_change(source, out)
    kept = keep_similarity(source, out, timing_kept=True, shift_cents=got if math.isfinite(got) else 0.0,
                           spectrum_kept=False)
    note = f"median F0 {source.median_f0:.1f} → {out.median_f0:.1f} Hz (pYIN); level contour and melody kept"
    return _verdict(PITCH, target.asked * 100, got, "cents", PITCH_TOLERANCE_CENTS, note, kept=kept)


def _speed(target: Target, source: Clip, out: Clip) -> EditCheck:
    kept = keep_similarity(source, out, timing_kept=False)
    note = (f"sounding length {source.active_seconds:.2f} s → {out.active_seconds:.2f} s; "
            "contour, spectrum and pitch kept")
    return _verdict(SPEED, target.asked, speed_factor(source, out), "×", SPEED_TOLERANCE * target.asked, note, kept=kept)


def _denoise(target: Target, source: Clip, out: Clip) -> EditCheck:
    kept = keep_similarity(source, out, timing_kept=True, spectrum_kept=False)
    note = f"noise floor {source.noise_floor:.1f} → {out.noise_floor:.1f} dBFS; level contour and melody kept"
    return _verdict(DENOISE, DENOISE_MIN_DB, out.snr - source.snr, "dB SNR", DENOISE_TOLERANCE_DB, note, AT_LEAST, kept)


def _trim(target: Target, source: Clip, out: Clip) -> EditCheck:
    kept = keep_similarity(source, out, timing_kept=False)
    (lead, trail), (src_lead, src_trail) = out.edge_silence, source.edge_silence
    note = f"silence at the ends {src_lead:.2f} s + {src_trail:.2f} s → {lead:.2f} s + {trail:.2f} s; the rest kept"
    return _verdict(TRIM, TRIM_MAX_SECONDS, max(lead, trail), "s", TRIM_TOLERANCE_SECONDS, note, AT_MOST, kept)


def _tone(target: Target, out: Clip) -> EditCheck:
    tolerance = target.asked * (1 - 2 ** (-PITCH_TOLERANCE_CENTS / 1200))
    return _verdict(TONE, target.asked, out.median_f0, "Hz", tolerance, "median F0 of the result (pYIN)")


_CHECKS = {VOLUME: _volume, PITCH: _pitch, SPEED: _speed, DENOISE: _denoise, TRIM: _trim}
