"""Each item scored the way the public editing benchmarks score it, offline, beside the edit check.

* volume (Ming-Freeform-Audio-Edit): A = mean |x| over the waveform; AAE = |A_out − gain·A_src| and
  RAE = AAE / A_src, where ``gain`` is the asked amplitude factor; and the change in dB,
  20·log10(A_out / A_src), against the asked dB.
* speed (Ming-Freeform-Audio-Edit, SpeechEditBench): target = source duration / factor;
  ADE = |out − target|, RDE = ADE / source duration; SpeechEditBench passes out/in ≤ 0.95 for
  faster and ≥ 1.05 for slower.
* pitch (SpeechEditBench): pYIN at 16 kHz (fmin 50 Hz, fmax 500 Hz, frame 2048, hop 256), the
  median voiced F0 of each clip, shift = 12·log2(F0_out / F0_in); passes ≥ +0.3 semitones for
  higher, ≤ −0.3 for lower; and the error against the asked semitones.
* content: WER (CER for Chinese) with jiwer (:mod:`auk_app.check.wer`) of what the loaded model's
  transcriber hears against the text the result should say; kept at ≤ 0.10 (SpeechEditBench).
* enhancement: the noise floor and the SNR estimate's gain (the edit check's measures), and with a
  clean reference STOI (pystoi) and wide-band PESQ (pesq) at 16 kHz, of the result and of the source.
* speaker similarity between source and result (:mod:`auk_app.batch.speaker`, a proxy).
* joint success (SpeechEditBench): the target passed and the content kept.

Every score is a plain number, flag or None (not measured), rounded for the report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from auk_app import dsp, jit_cache
from auk_app.batch.layouts import TASKS
from auk_app.check import Clip, Target
from auk_app.check.wer import error_rate, is_cjk

F0_RATE, F0_MIN, F0_MAX, F0_FRAME, F0_HOP = 16_000, 50.0, 500.0, 2048, 256
MIN_SHIFT_SEMITONES = 0.3
MIN_SPEED_CHANGE = 0.05
CONTENT_KEPT = 0.10
KEEPS_WORDS = ("volume", "speed", "pitch", "enhancement")  # edits whose result says the source's words
_FROM_CHECK = {"volume": "volume", "speed": "speed", "pitch": "pitch", "denoise": "enhancement",
               "zero_shot_tts": "content", "instruct_tts": "content", "content_edit": "content",
               "lyric_edit": "content"}
Transcribe = Callable[[np.ndarray, str], str]  # 16 kHz mono, "en" or "zh" → what was said


def amplitude(wav: np.ndarray) -> float:
    """Ming-Freeform-Audio-Edit's A: the mean absolute sample over the whole waveform."""
    return float(np.mean(np.abs(np.asarray(wav, np.float64)))) if np.size(wav) else float("nan")


def volume_scores(source: np.ndarray, result: np.ndarray, gain: float | None) -> dict[str, Any]:
    a_src, a_out = amplitude(source), amplitude(result)
    scores = {"amplitude_src": a_src, "amplitude_out": a_out, "change_db": _db(a_out / a_src if a_src else math.nan)}
    if gain is not None:
        aae = abs(a_out - gain * a_src)
        scores.update(aae=aae, rae=aae / a_src if a_src else None, db_error=scores["change_db"] - _db(gain))
    return scores


def speed_scores(source_seconds: float, result_seconds: float, factor: float | None,
                 direction: str | None) -> dict[str, Any]:
    ratio = result_seconds / source_seconds
    direction = direction or (None if not factor or factor == 1 else "faster" if factor > 1 else "slower")
    scores = {"duration_src": source_seconds, "duration_out": result_seconds, "duration_ratio": ratio}
    if factor:
        ade = abs(result_seconds - source_seconds / factor)
        scores.update(ade=ade, rde=ade / source_seconds)
    if direction in ("faster", "slower"):
        faster = direction == "faster"
        scores["speed_pass"] = ratio <= 1 - MIN_SPEED_CHANGE if faster else ratio >= 1 + MIN_SPEED_CHANGE
    return scores


def median_f0(wav: np.ndarray, rate: int) -> float:
    """SpeechEditBench's median F0: pYIN at 16 kHz over 50–500 Hz, the voiced frames' median; nan if none."""
    audio = dsp.resample(np.asarray(wav, np.float32), rate, F0_RATE)
    if audio.size < F0_FRAME:
        return float("nan")
    f0, _, _ = jit_cache.librosa().pyin(audio, fmin=F0_MIN, fmax=F0_MAX, sr=F0_RATE, frame_length=F0_FRAME,
                                        hop_length=F0_HOP)
    voiced = f0[np.isfinite(f0) & (f0 > 0)]
    return float(np.median(voiced)) if voiced.size else float("nan")


def pitch_scores(source: np.ndarray, result: np.ndarray, rate: int, semitones: float | None,
                 direction: str | None) -> dict[str, Any]:
    f_in, f_out = median_f0(source, rate), median_f0(result, rate)
    shift = 12 * math.log2(f_out / f_in) if f_in > 0 and f_out > 0 else math.nan
    direction = direction or (None if not semitones else "higher" if semitones > 0 else "lower")
    scores = {"f0_src_hz": f_in, "f0_out_hz": f_out, "shift_st": shift}
    if semitones is not None:
        scores["st_error"] = shift - semitones
    if direction in ("higher", "lower") and math.isfinite(shift):
        scores["pitch_pass"] = shift >= MIN_SHIFT_SEMITONES if direction == "higher" else shift <= -MIN_SHIFT_SEMITONES
    return scores


def content_scores(expected: str, heard: str) -> dict[str, Any]:
    rate, unit = error_rate(expected, heard)
    return {"heard": heard, "error_rate": rate, "error_unit": unit, "content_kept": rate <= CONTENT_KEPT}


def enhancement_scores(source: np.ndarray, result: np.ndarray, rate: int,
                       clean: np.ndarray | None = None) -> dict[str, Any]:
    before, after = Clip(source, rate), Clip(result, rate)
    scores = {"noise_floor_src": before.noise_floor, "noise_floor_out": after.noise_floor,
              "snr_gain_db": after.snr - before.snr}
    if clean is not None:
        scores.update(stoi=stoi(clean, result, rate), stoi_src=stoi(clean, source, rate),
                      pesq=pesq(clean, result, rate), pesq_src=pesq(clean, source, rate))
    return scores


def _pair(reference: np.ndarray, degraded: np.ndarray, rate: int) -> tuple[np.ndarray, np.ndarray]:
    """Both at 16 kHz and cut to the shorter, as SpeechEditBench aligns them."""
    ref, deg = (dsp.resample(np.asarray(x, np.float32), rate, F0_RATE).astype(np.float64) for x in (reference, degraded))
    n = min(ref.size, deg.size)
    return ref[:n], deg[:n]


def stoi(reference: np.ndarray, degraded: np.ndarray, rate: int) -> float | None:
    from pystoi import stoi as measure  # pystoi: the reference STOI implementation the benchmarks cite

    ref, deg = _pair(reference, degraded, rate)
    return float(measure(ref, deg, F0_RATE, extended=False)) if ref.size else None


def pesq(reference: np.ndarray, degraded: np.ndarray, rate: int) -> float | None:
    """Wide-band PESQ (ITU-T P.862.2); None where it finds no speech to score."""
    from pesq import PesqError, pesq as measure

    ref, deg = _pair(reference, degraded, rate)
    try:
        return float(measure(F0_RATE, ref, deg, "wb"))
    except PesqError:
        return None


def _db(ratio: float) -> float:
    return 20 * math.log10(ratio) if ratio > 0 else math.nan


@dataclass(frozen=True)
class Scoring:
    """What an item's scores read besides its audio: the task as the manifest or the recogniser names
    it, the check's target and verdict, the benchmark's own fields, and the tools the run lends."""

    task: str
    target: Target
    check_passed: bool | None
    meta: dict[str, Any]
    expected_text: str | None = None
    transcribe: Transcribe | None = None
    speaker: Callable[[np.ndarray, np.ndarray, int], float] | None = None
    clean: np.ndarray | None = None


def task_of(named: str | None, target: Target) -> str:
    """The scored task: the manifest's (a benchmark's name mapped), else what the check's target is."""
    if named:
        return TASKS.get(str(named).lower(), str(named).lower())
    return _FROM_CHECK.get(target.task, target.task)


def score(s: Scoring, source: np.ndarray | None, result: np.ndarray, rate: int) -> dict[str, Any]:
    """Every score of one item that its task and its inputs allow; the rest is absent."""
    scores: dict[str, Any] = {}
    amount = s.meta.get("amount")
    asked = s.target.asked if s.target.measurable else None
    direction = s.meta.get("direction")
    if source is not None:
        if s.task == "volume":
            scores |= volume_scores(source, result, float(amount) if amount else None if asked is None
                                    else 10 ** (asked / 20))
        elif s.task == "speed":
            scores |= speed_scores(source.size / rate, result.size / rate, float(amount) if amount else asked,
                                   direction)
        elif s.task == "pitch":
            scores |= pitch_scores(source, result, rate, float(amount) if amount else asked, direction)
        elif s.task == "enhancement":
            scores |= enhancement_scores(source, result, rate, s.clean)
        if s.speaker is not None:
            scores["speaker_sim"] = s.speaker(source, result, rate)
    if s.transcribe is not None and s.expected_text:
        language = s.meta.get("language") or ("zh" if is_cjk(s.expected_text) else "en")
        heard = s.transcribe(dsp.resample(result, rate, F0_RATE), "zh" if language == "zh" else "en")
        scores |= content_scores(s.expected_text, heard)
    target = scores.get({"speed": "speed_pass", "pitch": "pitch_pass"}.get(s.task, ""), s.check_passed)
    scores["target_pass"] = target
    kept = scores.get("content_kept")
    scores["joint"] = None if target is None or kept is None else bool(target and kept)
    return {key: _plain(value) for key, value in scores.items()}


def expected_text(task: str, meta: dict[str, Any], spoken: str | None) -> str | None:
    """What the result should say: the manifest's expected text; else the source's words for an edit
    that keeps them; else the words the instruction asks to speak (``spoken``)."""
    if meta.get("expected_text"):
        return str(meta["expected_text"])
    if task in KEEPS_WORDS and meta.get("transcript"):
        return str(meta["transcript"])
    return spoken


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.floating, np.integer)):
        return round(float(value), 4) if math.isfinite(value) else None
    return value
