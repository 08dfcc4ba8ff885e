"""TTA sampling settings, checked once when built (before any model work).

Defaults are the official TTA recipe (vLLM-Omni's ``nemotron_labs_audex_tta.yaml``): CFG 3.0,
temperature 1.0, top-k 80, top-p off, codec cap 4000 tokens, at most 4200 generated tokens, seed 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from auk_app.errors import InputError
from auk_app.validate import is_real, shown

MAX_CODEC_CAP = 4000  # 1000 frames = 20 s generated; decode keeps the first 500 frames (10 s)
MAX_NEW_TOKENS = 4200  # room for 4000 codec tokens + <audiogen_end>
CFG_RANGE = (1.0, 10.0)  # the serving layer's range; 1.0 turns guidance off
# 1e-4 already samples greedily (tests/audex hold it); far below, logits divided by it overflow
# float32 and softmax gives NaN. Above 10 every allowed code is about equally likely, and 1e308
# cannot even become a tensor.
TEMPERATURE_RANGE = (1e-4, 10.0)
# The codec vocabulary (tta.AUDEX_AUDIOCODEC_VOCAB_SIZE): a larger k keeps nothing more, and a
# value like 2**64 or 1e308 would pass the run and break the manifest's JSON.
MAX_TOP_K = 8192


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
        if not (is_real(self.cfg_scale) and low <= self.cfg_scale <= high):
            raise InputError(
                f"cfg_scale must be between {low} and {high}; got {shown(self.cfg_scale)}. "
                "Use 3.0 (the recommended value), or 1.0 to turn guidance off."
            )
        if not (_is_int(self.codec_cap) and 0 < self.codec_cap <= MAX_CODEC_CAP and self.codec_cap % 4 == 0):
            raise InputError(
                f"codec_cap must be a positive multiple of 4 (one frame is 4 codec tokens) of at most "
                f"{MAX_CODEC_CAP}; got {shown(self.codec_cap)}. Use {MAX_CODEC_CAP}, or 2000 for the 10 s that are decoded."
            )
        if not (_is_int(self.max_tokens) and 1 <= self.max_tokens <= MAX_NEW_TOKENS):
            raise InputError(
                f"max_tokens must be a whole number from 1 to {MAX_NEW_TOKENS}; got {shown(self.max_tokens)}. "
                "Leave it unset to stop at the codec cap."
            )
        low, high = TEMPERATURE_RANGE
        if not (is_real(self.temperature) and low <= self.temperature <= high):
            raise InputError(
                f"temperature must be between {low:g} and {high:g}; got {shown(self.temperature)}. "
                "Use 1.0, the value Audex is sampled with."
            )
        if not (_is_int(self.top_k) and 1 <= self.top_k <= MAX_TOP_K):
            raise InputError(
                f"top_k must be a whole number from 1 to {MAX_TOP_K} (the codec vocabulary); got {shown(self.top_k)}. "
                "Use 80, the Audex default."
            )
        if not (is_real(self.top_p) and 0 < self.top_p <= 1):
            raise InputError(
                f"top_p must be greater than 0 and at most 1; got {shown(self.top_p)}. Use 1.0 to turn it off."
            )
        if not (_is_int(self.seed) and 0 <= self.seed < 2**63):
            raise InputError(
                f"seed must be a whole number from 0 to 2**63 - 1; got {shown(self.seed)}. Use 0 or any positive integer."
            )
        if not isinstance(self.use_mask, bool):
            raise InputError(f"use_mask must be True or False; got {shown(self.use_mask)}.")

    @property
    def guided(self) -> bool:
        """CFG needs the unconditional row only above scale 1 (at 1 the blend is the identity)."""
        return self.cfg_scale > 1.0
