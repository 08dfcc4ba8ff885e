"""What Audex-Tiny's sounds are measured by (16 kHz waveforms), and its bars.

Measured on the decoded audio, not on the codes: a tone's frequency (peak of a zero-padded
spectrum with parabolic interpolation) and length (frames within 30 dB of the loudest), a glide's
start and end (a straight line through the log-frequency of the spectrogram's peaks, read at the
sound's first and last frame), a siren's low and high frequency (the glide of its first half, which
rises from the low one to the high one), clicks (onsets 20 dB above the floor, at least 50 ms apart), a
fade's level slope (a line through the 20 ms levels in dB) and a noise's spectral flatness
(geometric over arithmetic mean of its Welch power spectrum, 100 Hz–7 kHz).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from training.audex_sounds import Scene

SR = 16000
TONE_FREQ_BAR = 0.03  # relative, median over runs
TONE_LENGTH_BAR = 0.10
SWEEP_BAR = 0.05  # start and end (a siren's low and high), relative, median over runs
SHARE_BAR = 0.8  # clicks exact, fades falling, white noise flat: share of runs
FLATNESS_BAR = 0.5  # white noise's is about 0.9; pink noise's about 0.3, brown's under 0.1
FADE_DROP_DB = 10.0  # a fade falls by at least this much over the sound


def _frames_db(wav: np.ndarray, hop: int = 160, size: int = 320) -> np.ndarray:
    if len(wav) < size:
        wav = np.pad(wav, (0, size - len(wav)))
    n = 1 + (len(wav) - size) // hop
    idx = np.arange(size)[None] + hop * np.arange(n)[:, None]
    return 10 * np.log10(np.mean(wav[idx] ** 2, axis=1) + 1e-12)


def active(wav: np.ndarray, below_db: float = 30.0, hop: int = 160) -> tuple[int, int]:
    """First and last sample of the frames within ``below_db`` of the loudest (0, 0 when silent)."""
    db = _frames_db(wav, hop)
    if len(wav) == 0 or db.max() < -100:
        return 0, 0
    on = np.nonzero(db > db.max() - below_db)[0]
    return int(on[0] * hop), int(min(len(wav), on[-1] * hop + 2 * hop))


def peak_hz(x: np.ndarray, pad: int = 1 << 18) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)), max(pad, len(x))))
    k = int(np.argmax(spectrum[1:-1])) + 1
    a, b, c = np.log(spectrum[k - 1: k + 2] + 1e-20)
    offset = 0.5 * (a - c) / (a - 2 * b + c) if (a - 2 * b + c) != 0 else 0.0
    return float((k + offset) * SR / max(pad, len(x)))


def track(x: np.ndarray, size: int = 1024, hop: int = 160) -> tuple[np.ndarray, np.ndarray]:
    """Times (s) and peak frequencies (Hz) of a spectrogram's frames."""
    times, freqs = [], []
    for start in range(0, len(x) - size + 1, hop):
        freqs.append(peak_hz(x[start: start + size], pad=8192))
        times.append((start + size / 2) / SR)
    return np.array(times), np.array(freqs)


def tone(wav: np.ndarray) -> tuple[float, float]:
    """(frequency Hz, length s) of a steady tone."""
    a, b = active(wav)
    if b - a < 64:
        return 0.0, 0.0
    return peak_hz(wav[a:b]), (b - a) / SR


def glide(wav: np.ndarray) -> tuple[float, float]:
    """(start Hz, end Hz) of a glide."""
    a, b = active(wav)
    if b - a < 2048:
        return 0.0, 0.0
    times, freqs = track(wav[a:b])
    slope, intercept = np.polyfit(times, np.log2(np.maximum(freqs, 1.0)), 1)
    return float(2 ** intercept), float(2 ** (intercept + slope * (b - a) / SR))


def siren(wav: np.ndarray) -> tuple[float, float]:
    """(low Hz, high Hz) of a siren: the start and end of its first half, up from low to high."""
    a, b = active(wav)
    return glide(wav[a: (a + b) // 2])


def clicks(wav: np.ndarray) -> int:
    """How many clicks: 5 ms frames rising 20 dB above the floor, at least 50 ms apart."""
    db = _frames_db(wav, hop=80, size=80)
    if len(db) == 0 or db.max() < -100:
        return 0
    loud = db > db.max() - 20
    count, last = 0, -100
    for i in np.nonzero(loud & ~np.r_[False, loud[:-1]])[0]:
        if i - last >= 10:
            count += 1
        last = i if i - last >= 10 else last
    return count


def level_slope(wav: np.ndarray) -> tuple[float, float]:
    """(slope dB/s, drop dB) of a line through the 20 ms levels of the sound."""
    a, b = active(wav, below_db=60.0)
    db = _frames_db(wav[a:b], hop=320, size=320)
    if len(db) < 3:
        return 0.0, 0.0
    t = np.arange(len(db)) * 0.02
    slope = float(np.polyfit(t, db, 1)[0])
    return slope, -slope * t[-1]


def flatness(wav: np.ndarray, size: int = 512) -> float:
    a, b = active(wav)
    x = wav[a:b]
    if len(x) < size * 2:
        return 0.0
    window = np.hanning(size)
    frames = [np.abs(np.fft.rfft(x[i: i + size] * window)) ** 2 for i in range(0, len(x) - size + 1, size // 2)]
    psd = np.mean(frames, axis=0)
    f = np.fft.rfftfreq(size, 1 / SR)
    band = psd[(f >= 100) & (f <= 7000)] + 1e-20
    return float(np.exp(np.mean(np.log(band))) / np.mean(band))


@dataclass
class Score:
    """One run's measurement against its scene; ``ok`` is this run's verdict on its family's bar."""

    family: str
    caption: str
    values: dict
    ok: bool
    lang: str = "en"


def score(scene: Scene, wav: np.ndarray) -> Score:
    """``wav`` measured against the first event of ``scene``, by the scene's family."""
    return replace(_score(scene, wav), lang=scene.lang)


def _score(scene: Scene, wav: np.ndarray) -> Score:
    e = scene.events[0]
    fam = scene.family
    if fam == "tone":
        f, length = tone(wav)
        err_f, err_l = abs(f / e.f0 - 1), abs(length / e.seconds - 1)
        return Score(fam, scene.caption, {"hz": f, "asked_hz": e.f0, "seconds": length, "asked_seconds": e.seconds,
                                          "freq_err": err_f, "length_err": err_l},
                     err_f <= TONE_FREQ_BAR and err_l <= TONE_LENGTH_BAR)
    if fam == "sweep":
        f0, f1 = glide(wav)
        e0, e1 = abs(f0 / e.f0 - 1), abs(f1 / e.f1 - 1)
        return Score(fam, scene.caption, {"start": f0, "end": f1, "asked": [e.f0, e.f1], "start_err": e0, "end_err": e1},
                     max(e0, e1) <= SWEEP_BAR)
    if fam == "siren":
        low, high = siren(wav)
        e0, e1 = abs(low / e.f0 - 1), abs(high / e.f1 - 1)
        return Score(fam, scene.caption, {"low": low, "high": high, "asked": [e.f0, e.f1], "start_err": e0,
                                          "end_err": e1}, max(e0, e1) <= SWEEP_BAR)
    if fam == "clicks":
        n = clicks(wav)
        return Score(fam, scene.caption, {"count": n, "asked": e.count}, n == e.count)
    if fam == "fade":
        slope, drop = level_slope(wav)
        return Score(fam, scene.caption, {"slope_db_per_s": slope, "drop_db": drop}, slope < 0 and drop >= FADE_DROP_DB)
    if fam == "flat":
        flat = flatness(wav)
        return Score(fam, scene.caption, {"flatness": flat}, flat >= FLATNESS_BAR)
    return Score(fam, scene.caption, {"seconds": len(wav) / SR}, True)
