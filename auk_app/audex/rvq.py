"""Flat interleaved codec stream <-> XCodec1 code grid (pure tensor work).

The LM emits frame-major codec ids: frame ``f`` is positions ``4f..4f+3`` = RVQ layers 0..3, with
the layer offset ``layer·1024`` baked into each id. XCodec1 wants ``[B, layers, frames]`` codes
local to each 1024-entry codebook.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from auk_app.audex.params import NUM_PHASES
from auk_app.audex.tta import XCODEC1_CODEBOOK_SIZE

MAX_TTA_FRAMES = 500  # the model was trained on 10 s clips: 500 frames x 320 samples = 160 000 at 16 kHz


def stream_to_frames(codec_ids: Sequence[int]) -> tuple[torch.Tensor, int]:
    """Whole frames of the stream as ``[frames, 4]`` int64 codec ids, and the tokens dropped.

    A trailing partial frame cannot be decoded, so it is cut off; the ids keep their layer
    offsets (0..8191), as vLLM-Omni's payload does.
    """
    dropped = len(codec_ids) % NUM_PHASES
    usable = len(codec_ids) - dropped
    frames = torch.tensor(list(codec_ids[:usable]), dtype=torch.long).reshape(-1, NUM_PHASES)
    return frames, dropped


def frames_to_codes(frames: torch.Tensor, *, max_frames: int = MAX_TTA_FRAMES) -> torch.Tensor:
    """``[frames, 4]`` codec ids -> ``[1, 4, min(frames, max_frames)]`` layer-local codes.

    Subtracts ``layer·1024`` per column, then clamps to [0, 1023] as the reference does. The
    clamp would hide out-of-phase ids, which is why the stream is validated before it gets here.
    """
    frames = frames[:max_frames]
    offsets = torch.arange(NUM_PHASES, dtype=torch.long, device=frames.device) * XCODEC1_CODEBOOK_SIZE
    codes = (frames - offsets).clamp(0, XCODEC1_CODEBOOK_SIZE - 1)
    return codes.T.unsqueeze(0).contiguous()
