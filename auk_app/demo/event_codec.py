"""Audex-Tiny's codec: a parametric *event* codec with XCodec1's interface (decode only).

16 kHz, 320-sample hop (50 frames a second), 4 codebooks of 1,024 codes, so the phase mask, the
validity report, ``rvq.frames_to_codes`` and the vLLM path run unchanged. Each frame carries the
parameters of the *segment* (one sound event) it belongs to, and a countdown:

* codebook 3: ``kind · 256 + countdown`` — kind 0 silence, 1 tone, 2 click, 3 noise; the countdown
  is the number of frames left in the segment after this one (so a segment of n frames counts
  n−1 … 0). A new segment starts where the kind changes or the countdown goes up.
* codebooks 0–2, by kind (each segment's value is the median over its frames):

  - tone: start pitch, end pitch (``50 Hz · 2^(code/128)``: 8 octaves, 0.54 % a code), level;
    the pitch glides log-linearly from start to end over the segment (start = end: a steady tone);
  - click: clicks left (the decoder ignores it: it is the LM's counter), timbre (0 click, 1 knock),
    level; one click at the segment's first frame;
  - noise: colour (0 white, 1 pink, 2 brown), shape (0 steady, 1 fading out, 2 fading in), level;
  - silence: nothing.

  Level codes are tenths of a dB below full scale (code 120 = −12 dBFS peak for a tone).

Why: a tiny LM trained for minutes on two CPU cores can copy a frame and decrement a counter far
more reliably than it can draw a waveform's codes. Timing (the countdown), counting (clicks left)
and glides (start and end pitch, interpolated here) become choices of a few codes at a segment's
first frame, which the caption decides; every other frame is a copy. The price: it can only make
these events, and it has no encoder (training writes codes directly from each sound's
description). Decoding is deterministic: noise is drawn from a generator seeded per segment.

Loaded by :func:`auk_app.audex.xcodec.load_xcodec` through the registry name ``audex_events`` in
its ``config.json``; ``model.safetensors`` holds the code tables (pitch in Hz, level in dB).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

SAMPLE_RATE = 16000
HOP = 320
CODEBOOK_SIZE = 1024
NUM_CODEBOOKS = 4
COUNTDOWN_SPAN = 256  # codebook 3 = kind * 256 + countdown: segments of at most 256 frames (5.12 s)
SILENCE, TONE, CLICK, NOISE = 0, 1, 2, 3
KIND_NAMES = ("silence", "tone", "click", "noise")
PITCH_BASE_HZ = 50.0
PITCH_CODES_PER_OCTAVE = 128
WHITE, PINK, BROWN = 0, 1, 2
STEADY, FADE_OUT, FADE_IN = 0, 1, 2
CLICK_TIMBRE, KNOCK_TIMBRE = 0, 1
FADE_DEPTH_DB = 40.0  # a fade moves the level by this much, linearly in dB
EDGE_SECONDS = 0.005  # raised-cosine ramps at a tone's or a steady noise's ends


def pitch_code(hz: float) -> int:
    """The nearest pitch code of ``hz``."""
    code = round(PITCH_CODES_PER_OCTAVE * np.log2(hz / PITCH_BASE_HZ))
    return int(min(max(code, 0), CODEBOOK_SIZE - 1))


def level_code(db: float) -> int:
    return int(min(max(round(-db * 10), 0), CODEBOOK_SIZE - 1))


@dataclass(frozen=True)
class Segment:
    kind: int
    start: int  # first frame
    frames: int
    a: int  # codebook 0 (median over the segment)
    b: int  # codebook 1
    level: int  # codebook 2


def segments(codes: np.ndarray) -> list[Segment]:
    """``[4, frames]`` layer-local codes -> the segments they describe, in order."""
    kinds, counts = codes[3] // COUNTDOWN_SPAN, codes[3] % COUNTDOWN_SPAN
    found, start = [], 0
    for f in range(1, codes.shape[1] + 1):
        if f == codes.shape[1] or kinds[f] != kinds[f - 1] or counts[f] > counts[f - 1]:
            part = codes[:3, start:f]
            a, b, level = (int(np.median(row)) for row in part)
            found.append(Segment(int(kinds[start]), start, f - start, a, b, level))
            start = f
    return found


def _ramp(n: int, samples: int) -> np.ndarray:
    env = np.ones(n)
    k = min(samples, n // 2)
    if k > 0:
        r = 0.5 - 0.5 * np.cos(np.pi * (np.arange(k) + 0.5) / k)
        env[:k], env[n - k:] = r, r[::-1]
    return env


def _coloured(n: int, colour: int, rng: np.random.Generator) -> np.ndarray:
    white = rng.standard_normal(n)
    if colour == WHITE:
        return white
    spectrum = np.fft.rfft(white)
    f = np.maximum(np.fft.rfftfreq(n, 1 / SAMPLE_RATE), 20.0)
    spectrum *= f ** (-0.5 if colour == PINK else -1.0)
    shaped = np.fft.irfft(spectrum, n)
    return shaped / (shaped.std() + 1e-12)


def render(segment: Segment, pitch_hz: np.ndarray, level_db: np.ndarray, seed: int) -> np.ndarray:
    """One segment's samples (``frames · 320``)."""
    n = segment.frames * HOP
    gain = 10 ** (level_db[segment.level] / 20)
    if segment.kind == TONE:
        f0, f1 = pitch_hz[segment.a], pitch_hz[segment.b]
        freq = f0 * (f1 / f0) ** (np.arange(n) / max(n - 1, 1))
        phase = 2 * np.pi * np.cumsum(freq) / SAMPLE_RATE
        return gain * np.sin(phase) * _ramp(n, int(EDGE_SECONDS * SAMPLE_RATE))
    if segment.kind == CLICK:
        out = np.zeros(n)
        rng = np.random.default_rng(seed)
        if segment.b == KNOCK_TIMBRE:
            k = min(n, int(0.08 * SAMPLE_RATE))
            t = np.arange(k) / SAMPLE_RATE
            out[:k] = np.sin(2 * np.pi * 180 * t) * np.exp(-t / 0.02) + 0.3 * rng.standard_normal(k) * np.exp(-t / 0.003)
        else:
            k = min(n, int(0.01 * SAMPLE_RATE))
            t = np.arange(k) / SAMPLE_RATE
            out[:k] = rng.standard_normal(k) * np.exp(-t / 0.0015)
        return gain * out / (np.abs(out).max() + 1e-12)
    if segment.kind == NOISE:
        rng = np.random.default_rng(seed)
        noise = _coloured(n, segment.a, rng) / 3.0  # peaks near the level, as a tone's
        t = np.arange(n) / max(n - 1, 1)
        if segment.b == FADE_OUT:
            env = 10 ** (-FADE_DEPTH_DB * t / 20)
        elif segment.b == FADE_IN:
            env = 10 ** (-FADE_DEPTH_DB * (1 - t) / 20)
        else:
            env = np.ones(n)
        return gain * noise * env * _ramp(n, int(EDGE_SECONDS * SAMPLE_RATE))
    return np.zeros(n)


class EventCodec(torch.nn.Module):
    """Decode-only parametric codec; ``decode(codes).audio_values`` as ``XcodecModel``'s."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        self.config = dict(config)
        self.sample_rate = int(config["sample_rate"])
        self.hop = int(config["hop_length"])
        if (self.sample_rate, self.hop, config["codebook_size"], config["num_codebooks"]) != (
            SAMPLE_RATE, HOP, CODEBOOK_SIZE, NUM_CODEBOOKS
        ):
            raise ValueError("audex_events decodes 16 kHz, hop 320, 4 codebooks of 1024 codes only")
        self.seed = int(config.get("seed", 0))
        self.pitch_hz = torch.nn.Parameter(torch.zeros(CODEBOOK_SIZE), requires_grad=False)
        self.level_db = torch.nn.Parameter(torch.zeros(CODEBOOK_SIZE), requires_grad=False)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> EventCodec:
        return cls(config)

    @staticmethod
    def tables() -> dict[str, torch.Tensor]:
        """The weight file's contents: what each code of the pitch and level codebooks means."""
        codes = torch.arange(CODEBOOK_SIZE, dtype=torch.float64)
        return {
            "pitch_hz": (PITCH_BASE_HZ * 2 ** (codes / PITCH_CODES_PER_OCTAVE)).float(),
            "level_db": (-codes / 10).float(),
        }

    def decode(self, codes: torch.Tensor, return_dict: bool = True) -> Any:
        """``[1, 4, frames]`` codes -> ``audio_values`` ``[1, 1, frames · 320]`` float32."""
        grid = codes[0].detach().cpu().numpy().astype(np.int64)
        pitch = self.pitch_hz.detach().double().cpu().numpy()
        level = self.level_db.detach().double().cpu().numpy()
        parts = [render(s, pitch, level, self.seed * 100003 + i) for i, s in enumerate(segments(grid))]
        audio = np.concatenate(parts) if parts else np.zeros(0)
        values = torch.from_numpy(audio.astype(np.float32)).reshape(1, 1, -1).to(codes.device)
        return SimpleNamespace(audio_values=values) if return_dict else (values,)
