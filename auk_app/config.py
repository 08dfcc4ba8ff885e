"""Audio constants and the request limits the app enforces before any model runs."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

# AuK's audio grid, as the released VAE makes it: 24 kHz audio, one latent frame per 480 samples
# (its downsampling strides' product), so 50 frames per second. A checkpoint's own rate and hop
# are its codec config's (AuKCheckpoint.sample_rate, .hop); these are the defaults every codec
# config starts from and the grid of upstream's frame count, ceil(seconds · 24000 / 480).
SAMPLE_RATE = 24_000
HOP = 480
FRAME_RATE = SAMPLE_RATE // HOP
QWEN_SAMPLE_RATE = 16_000  # what the thinker's Whisper-style feature extractor expects
MAX_TOTAL_FRAMES = 65_536  # reference + target, the DiT's hard cap (≈ 21.8 min)
# The shortest clip or target: two latent frames. Measured on the demo model, a one-frame target
# (a clip under 40 ms, or seconds ≤ 0.02) decodes to all zeros after the PCM16 write; two frames
# give sound (tests/app/test_api.py holds both sides of this line).
MIN_SECONDS = 2 * HOP / SAMPLE_RATE
# --dtype choices (runtime.PRECISIONS defines them; named here so argument parsing stays torch-free)
DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16", "autocast-bf16")
# --quantize choices (auk_app.quantize applies them): weight-only int8 or 4-bit block linears, or none
QUANTIZE_CHOICES = ("none", "int8", "int4")


def frames_for_seconds(seconds: float) -> int:
    """Target latent frames for a duration, with upstream AuK's and vLLM-Omni's own float expression,
    ``ceil(s · 24000 / 480)``, float error included: 2.24 s → 113 frames (2.24 · 24000 / 480 is
    112.00000000000001), 1.1 s → 56. Same seconds, same frames as the reference implementations."""
    return math.ceil(seconds * SAMPLE_RATE / HOP)


def seconds_for_frames(n_frames: int) -> float:
    """A duration that :func:`frames_for_seconds` maps back to exactly ``n_frames``.

    ``n / 50`` s where float error allows; for the 96 of the first 1500 counts where it does not
    (112 frames: 2.24 s gives 113) half a frame less, ``n / 50 − 0.01`` s (2.23 s), which is
    half a frame away from either boundary.
    """
    seconds = n_frames / FRAME_RATE
    if frames_for_seconds(seconds) != n_frames:
        seconds = round((n_frames - 0.5) / FRAME_RATE, 2)
    return seconds


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; every message that enforces these names the value."""

    max_input_seconds: float = 30.0  # the model was trained on targets up to 30 s
    max_region_source_seconds: float = 600.0  # a region edit reads the whole file, up to 10 minutes
    max_whole_file_seconds: float = 3600.0  # a whole recording edited in windows, up to 60 minutes
    min_seconds: float = MIN_SECONDS
    min_sample_rate: int = 4_000  # below this there is no speech band left to edit
    max_sample_rate: int = 768_000  # the highest rate audio interfaces record at
    max_peak: float = 64.0  # +36 dBFS: float files may exceed full scale a little, never by this much
    max_target_seconds: float = 30.0
    max_channels: int = 8
    # Samples (frames × channels) a file may hold, read from its header before anything is decoded:
    # 10 minutes of 48 kHz stereo. Seconds alone let a 1 MB FLAC of 600 s at 192 kHz × 8 channels
    # ask for gigabytes; decoding mixes to mono block by block, so memory stays ≤ 4 bytes × this.
    max_decoded_samples: int = 600 * 48_000 * 2
    min_nfe: int = 1
    max_nfe: int = 64
    max_cfg: float = 10.0
    min_sway: float = -1.0
    max_sway: float = 1.0
    max_grid_points: int = 65
    max_instruction_chars: int = 1000
    max_caption_chars: int = 1000

    def for_whole(self) -> Limits:
        """The limits a whole recording edited in windows is read under: up to 60 minutes."""
        seconds = self.max_whole_file_seconds
        return replace(self, max_input_seconds=seconds,
                       max_decoded_samples=max(self.max_decoded_samples, round(seconds * 48_000 * 2)))

    def for_region(self, end: float | None) -> Limits:
        """The limits a source is read under: up to 10 minutes when a region of it (ending at ``end``) is edited."""
        return self if end is None else replace(self, max_input_seconds=self.max_region_source_seconds)

    def reading(self, end: float | None) -> Limits:
        """The limits an upload is read under: a region's source's when a region ends at ``end``, else a
        whole recording's (one decode serves the upload check, the pace and the run)."""
        return self.for_region(end) if end else self.for_whole()
