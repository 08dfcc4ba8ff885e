"""Audex-Tiny's codec: a parametric *event* codec with XCodec1's interface (decode only).

16 kHz, 320-sample hop (50 frames a second), 4 codebooks of 1,024 codes, so the phase mask, the
validity report, ``rvq.frames_to_codes`` and the vLLM path run unchanged. A code is three decimal
digits (``100·x + 10·y + z``; codes 1000–1023 decode as silence), so a frame holds twelve digit
*slots*, in codebook order:

* slot 0, the kind: 0 silence, 1–3 a tone or glide (normal, soft, loud), 4–6 a siren (up and back
  down; normal, soft, loud), 7 a click, 8 a noise;
* slots 1–8, the kind's parameters:

  - tone and siren: the start and end frequency in Hz, four digits each (``0470 1130``; a steady
    tone says its frequency twice);
  - click: clicks left (the LM's counter; the decoder ignores it), timbre (0 click, 1 knock), level;
  - noise: colour (0 white, 1 pink, 2 brown), shape (0 steady, 1 fading out, 2 fading in), level;

  levels are 0 normal (−12 dBFS peak), 1 soft (−24), 2 loud (−6);
* slots 9–11, the segment's clock ``S T F``: at a segment's first frame its length in seconds and
  tenths (``S.T``) and ``F = 0``; each later frame counts one frame down (``5·(10S + T) + F`` falls
  by one, five frames a tenth), and the segment's last frame reads ``0 0 1``.

A segment (one sound event) is a run of frames of one kind whose clock keeps falling; its
parameters are its first frame's, and it lasts as many frames as it has, whatever its clock says:
the decode is frame-synchronous, as XCodec1's. The first frame is where the caption decides the
parameters; a later frame only copies them, and under classifier-free guidance a copy is fragile:
where the conditional and the null prompt both copy with near certainty, guidance at scale 3
magnifies the small difference between their runners-up (a digit the caption says elsewhere), so
"300 Hz to 900 Hz" can copy 900 for two frames and then 300 for the rest. Reading the first frame
makes the copies carry only the clock and the kind.

Why digits: the captions say their numbers in digits ("a 470 Hz beep for 1.3 s") and Audex-Tiny's
tokenizer writes every number's digits one token each (three-digit numbers with a leading zero),
so choosing a segment's first frame is *copying* digits from the caption into fixed slots, and
every later frame is a copy with the clock counted down. A tiny LM trained for an hour on two CPU
cores learns copying and counting; it does not learn arithmetic on numbers (an Audex-Tiny trained
on log-frequency codes and frame counts misses every pitch and length). The price: it can
only make these events, a length is rounded to a tenth of a second, and it has no encoder
(training writes codes from each sound's description). Noise is drawn from a generator seeded per
segment, so decoding is deterministic.

Loaded by :func:`auk_app.audex.xcodec.load_xcodec` through the registry name ``audex_events`` in
its ``config.json``; ``model.safetensors`` holds the three levels in dB.
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
DIGITS_PER_CODE = 3
SLOTS = NUM_CODEBOOKS * DIGITS_PER_CODE
DIGIT_CODES = 10**DIGITS_PER_CODE  # codes 0..999 carry digits; 1000..1023 decode as silence
PARAMS = 8  # slots 1..8
FRAMES_PER_TENTH = 5
SILENCE, TONE, SIREN, CLICK, NOISE = 0, 1, 4, 7, 8  # TONE + level and SIREN + level are kinds too
NORMAL, SOFT, LOUD = 0, 1, 2
LEVEL_DB = (-12.0, -24.0, -6.0)
WHITE, PINK, BROWN = 0, 1, 2
STEADY, FADE_OUT, FADE_IN = 0, 1, 2
CLICK_TIMBRE, KNOCK_TIMBRE = 0, 1
FADE_DEPTH_DB = 40.0  # a fade moves the level by this much, linearly in dB
EDGE_SECONDS = 0.005  # raised-cosine ramps at a tone's or a steady noise's ends
LOWEST_HZ, HIGHEST_HZ = 20.0, 7800.0


def digits_of(number: int, places: int) -> list[int]:
    """``number``'s ``places`` decimal digits, most significant first."""
    if not 0 <= number < 10**places:
        raise ValueError(f"{number} does not fit in {places} digits")
    return [number // 10 ** (places - 1 - i) % 10 for i in range(places)]


def number_of(digits) -> int:
    """The number a sequence of decimal digits writes."""
    return int(sum(int(d) * 10 ** (len(digits) - 1 - i) for i, d in enumerate(digits)))


def clock_digits(value: int) -> list[int]:
    """The clock slots ``S T F`` of ``value`` frames left (``5·(10S + T) + F``)."""
    tenths, f = divmod(value, FRAMES_PER_TENTH)
    return [tenths // 10, tenths % 10, f]


def segment_codes(kind: int, params: list[int], tenths: int) -> np.ndarray:
    """``[frames, 4]`` layer-local codes of one segment lasting ``tenths`` tenths of a second."""
    if len(params) != PARAMS or not all(0 <= d <= 9 for d in params) or not 1 <= tenths <= 99:
        raise ValueError(f"a segment takes {PARAMS} digits and 1-99 tenths, not {params}, {tenths}")
    rows = []
    for value in range(FRAMES_PER_TENTH * tenths, 0, -1):  # the first frame's clock is S T 0
        slots = [kind, *params, *clock_digits(value)]
        rows.append([number_of(slots[i: i + DIGITS_PER_CODE]) for i in range(0, SLOTS, DIGITS_PER_CODE)])
    return np.array(rows, dtype=np.int64)


def slots_of(codes: np.ndarray) -> np.ndarray:
    """``[4, frames]`` layer-local codes -> ``[frames, 12]`` digits; a frame with a code over 999
    reads as silence."""
    grid = codes.T.astype(np.int64)
    digits = np.stack([grid // 10 ** (DIGITS_PER_CODE - 1 - j) % 10 for j in range(DIGITS_PER_CODE)], axis=-1)
    slots = digits.reshape(len(grid), SLOTS)
    slots[(grid >= DIGIT_CODES).any(axis=1)] = 0
    return slots


@dataclass(frozen=True)
class Segment:
    kind: int
    start: int  # first frame
    frames: int
    params: tuple[int, ...]  # slots 1..8 of the segment's first frame


def segment_starts(slots: np.ndarray) -> np.ndarray:
    """Whether each frame starts a segment: the kind changes or the clock does not fall."""
    kinds = slots[:, 0]
    clock = FRAMES_PER_TENTH * (10 * slots[:, 9] + slots[:, 10]) + slots[:, 11]
    starts = np.ones(len(slots), dtype=bool)
    starts[1:] = (kinds[1:] != kinds[:-1]) | (clock[1:] >= clock[:-1])
    return starts


def segments(codes: np.ndarray) -> list[Segment]:
    """``[4, frames]`` layer-local codes -> the segments they describe, in order."""
    slots = slots_of(codes)
    bounds = [*np.nonzero(segment_starts(slots))[0].tolist(), len(slots)] if len(slots) else [0]
    found = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        found.append(Segment(int(slots[a, 0]), a, b - a, tuple(int(d) for d in slots[a, 1:1 + PARAMS])))
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
    if colour not in (PINK, BROWN):
        return white
    spectrum = np.fft.rfft(white)
    f = np.maximum(np.fft.rfftfreq(n, 1 / SAMPLE_RATE), 20.0)
    spectrum *= f ** (-0.5 if colour == PINK else -1.0)
    shaped = np.fft.irfft(spectrum, n)
    return shaped / (shaped.std() + 1e-12)


def _glide(f0: float, f1: float, n: int) -> np.ndarray:
    """Instantaneous frequency gliding log-linearly from f0 to f1 over n samples."""
    return f0 * (f1 / f0) ** (np.arange(n) / max(n - 1, 1))


def _tone(segment: Segment, n: int) -> np.ndarray:
    p = segment.params
    f0 = number_of(p[:4])
    f1 = number_of(p[4:]) or f0
    if f0 == 0:
        return np.zeros(n)
    f0, f1 = (float(np.clip(f, LOWEST_HZ, HIGHEST_HZ)) for f in (f0, f1))
    if segment.kind >= SIREN:
        half = n // 2
        freq = np.concatenate([_glide(f0, f1, half), _glide(f1, f0, n - half)])
    else:
        freq = _glide(f0, f1, n)
    return np.sin(2 * np.pi * np.cumsum(freq) / SAMPLE_RATE) * _ramp(n, int(EDGE_SECONDS * SAMPLE_RATE))


def _click(knock: bool, n: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(n)
    k = min(n, int((0.08 if knock else 0.01) * SAMPLE_RATE))
    t = np.arange(k) / SAMPLE_RATE
    if knock:
        out[:k] = np.sin(2 * np.pi * 180 * t) * np.exp(-t / 0.02) + 0.3 * rng.standard_normal(k) * np.exp(-t / 0.003)
    else:
        out[:k] = rng.standard_normal(k) * np.exp(-t / 0.0015)
    return out / (np.abs(out).max() + 1e-12)


def _noise(colour: int, shape: int, n: int, rng: np.random.Generator) -> np.ndarray:
    noise = _coloured(n, colour, rng) / 3.0  # peaks near the level, as a tone's
    t = np.arange(n) / max(n - 1, 1)
    if shape == FADE_OUT:
        env = 10 ** (-FADE_DEPTH_DB * t / 20)
    elif shape == FADE_IN:
        env = 10 ** (-FADE_DEPTH_DB * (1 - t) / 20)
    else:
        env = np.ones(n)
    return noise * env * _ramp(n, int(EDGE_SECONDS * SAMPLE_RATE))


def render(segment: Segment, level_db: np.ndarray, seed: int) -> np.ndarray:
    """One segment's samples (``frames · 320``)."""
    n, kind, p = segment.frames * HOP, segment.kind, segment.params
    rng = np.random.default_rng(seed)
    if TONE <= kind < SIREN + 3:
        sound, level = _tone(segment, n), (kind - TONE) % 3
    elif kind == CLICK:
        sound, level = _click(p[1] == KNOCK_TIMBRE, n, rng), p[2]
    elif kind == NOISE:
        sound, level = _noise(p[0], p[1], n, rng), p[2]
    else:
        return np.zeros(n)
    return 10 ** (level_db[min(level, len(level_db) - 1)] / 20) * sound


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
        self.level_db = torch.nn.Parameter(torch.zeros(len(LEVEL_DB)), requires_grad=False)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> EventCodec:
        return cls(config)

    @staticmethod
    def tables() -> dict[str, torch.Tensor]:
        """The weight file's contents: the peak level of each level digit, in dB."""
        return {"level_db": torch.tensor(LEVEL_DB, dtype=torch.float32)}

    def decode(self, codes: torch.Tensor, return_dict: bool = True) -> Any:
        """``[1, 4, frames]`` codes -> ``audio_values`` ``[1, 1, frames · 320]`` float32."""
        grid = codes[0].detach().cpu().numpy().astype(np.int64)
        level = self.level_db.detach().double().cpu().numpy()
        parts = [render(s, level, self.seed * 100003 + i) for i, s in enumerate(segments(grid))]
        audio = np.concatenate(parts) if parts else np.zeros(0)
        values = torch.from_numpy(audio.astype(np.float32)).reshape(1, 1, -1).to(codes.device)
        return SimpleNamespace(audio_values=values) if return_dict else (values,)
