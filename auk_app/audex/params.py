"""TTA sampling settings, checked once when built (before any model work).

Defaults are the official TTA recipe (vLLM-Omni's ``nemotron_labs_audex_tta.yaml``): CFG 3.0,
temperature 1.0, top-k 80, top-p off, codec cap 4000 tokens, at most 4200 generated tokens, seed 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from auk_app.errors import InputError

MAX_CODEC_CAP = 4000  # 1000 frames = 20 s generated; decode keeps the first 500 frames (10 s)
MAX_NEW_TOKENS = 4200  # room for 4000 codec tokens + <audiogen_end>
CFG_RANGE = (1.0, 10.0)  # the serving layer's range; 1.0 turns guidance off


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class TTASampling:
    """One request's sampling knobs; raises InputError naming the limit and the fix."""

    cfg_scale: float = 3.0
    codec_cap: int = MAX_CODEC_CAP
    max_tokens: int = MAX_NEW_TOKENS
    temperature: float = 1.0
    top_k: int = 80
    top_p: float = 1.0
    seed: int = 0
    use_mask: bool = True

    def __post_init__(self) -> None:
        low, high = CFG_RANGE
        if not (_is_real(self.cfg_scale) and low <= self.cfg_scale <= high):
            raise InputError(
                f"cfg_scale must be between {low} and {high}; got {self.cfg_scale!r}. "
                "Use 3.0 (the recommended value), or 1.0 to turn guidance off."
            )
        if not (_is_int(self.codec_cap) and 0 < self.codec_cap <= MAX_CODEC_CAP and self.codec_cap % 4 == 0):
            raise InputError(
                f"codec_cap must be a positive multiple of 4 (one frame is 4 codec tokens) of at most "
                f"{MAX_CODEC_CAP}; got {self.codec_cap!r}. Use {MAX_CODEC_CAP}, or 2000 for the 10 s that are decoded."
            )
        if not (_is_int(self.max_tokens) and 1 <= self.max_tokens <= MAX_NEW_TOKENS):
            raise InputError(
                f"max_tokens must be a whole number from 1 to {MAX_NEW_TOKENS}; got {self.max_tokens!r}. "
                "Leave it unset to stop at the codec cap."
            )
        if not (_is_real(self.temperature) and self.temperature > 0):
            raise InputError(
                f"temperature must be a number greater than 0; got {self.temperature!r}. "
                "Use 1.0, the value Audex is sampled with."
            )
        if not (_is_int(self.top_k) and self.top_k >= 1):
            raise InputError(
                f"top_k must be a whole number of at least 1; got {self.top_k!r}. Use 80, the Audex default."
            )
        if not (_is_real(self.top_p) and 0 < self.top_p <= 1):
            raise InputError(
                f"top_p must be greater than 0 and at most 1; got {self.top_p!r}. Use 1.0 to turn it off."
            )
        if not (_is_int(self.seed) and 0 <= self.seed < 2**63):
            raise InputError(
                f"seed must be a whole number from 0 to 2**63 - 1; got {self.seed!r}. Use 0 or any positive integer."
            )
        if not isinstance(self.use_mask, bool):
            raise InputError(f"use_mask must be True or False; got {self.use_mask!r}.")

    @property
    def guided(self) -> bool:
        """CFG needs the unconditional row only above scale 1 (at 1 the blend is the identity)."""
        return self.cfg_scale > 1.0
