"""Audio constants and the request limits the app enforces before any model runs."""

from __future__ import annotations

import math
from dataclasses import dataclass

AUK_SAMPLE_RATE = 24_000
AUK_HOP = 480
AUK_FRAME_RATE = AUK_SAMPLE_RATE // AUK_HOP  # 50 latent frames per second
QWEN_SAMPLE_RATE = 16_000  # what the thinker's Whisper-style feature extractor expects
MAX_TOTAL_FRAMES = 65_536  # reference + target, the DiT's hard cap (≈ 21.8 min)


def frames_for_seconds(seconds: float) -> int:
    """ceil(50 · s), rounded first so that 2.24 s is 112 frames, not float error's 113."""
    return math.ceil(round(seconds * AUK_FRAME_RATE, 6))


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; every message that enforces these names the value."""

    max_input_seconds: float = 30.0  # the model was trained on targets up to 30 s
    max_target_seconds: float = 30.0
    max_channels: int = 8
    min_nfe: int = 1
    max_nfe: int = 64
    max_cfg: float = 10.0
    min_sway: float = -1.0
    max_sway: float = 1.0
    max_grid_points: int = 65
    max_instruction_chars: int = 1000
