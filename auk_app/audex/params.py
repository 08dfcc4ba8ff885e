"""The one sampling type of a text-to-audio run, checked once when built (before any model work).

:class:`AudexSampling` travels unchanged from the request (:mod:`auk_app.audex.request`) through
the pipeline to the token sampler, in process (:mod:`auk_app.audex.sampler`, whose decode state
copies it into device scalars) or on a vLLM server (:mod:`auk_app.audex.remote`, whose HTTP body
is derived from it by one function).

Defaults are the official TTA recipe (vLLM-Omni's ``nemotron_labs_audex_tta.yaml``): CFG 3.0,
temperature 1.0, top-k 80, top-p off, codec cap 4000 tokens, at most 4200 generated tokens, seed 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.validate import check_caption, check_flag, check_seed, is_real, is_whole, shown

NUM_PHASES = 4  # XCodec1 RVQ layers Audex generates, one phase each: the codebook count's one home
FRAME_RATE_HZ = 50  # XCodec1: 16 kHz / hop 320
CODEC_TOKENS_PER_SECOND = NUM_PHASES * FRAME_RATE_HZ  # 200
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
# The official recipe's knobs, the defaults of a run and of the app's inputs.
DEFAULT_CFG_SCALE = 3.0
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_K = 80
DEFAULT_TOP_P = 1.0  # off
MAX_SECONDS = MAX_CODEC_CAP / CODEC_TOKENS_PER_SECOND  # 20 s of tokens


def codec_cap(max_seconds: Any) -> int:
    """The codec cap of ``max_seconds``: 200 codec tokens a second, in whole frames of 4 tokens, at
    most the 4000-token cap."""
    if not is_real(max_seconds) or not 0 < max_seconds <= MAX_SECONDS:
        raise InputError(
            f"max_seconds must be more than 0 and at most {MAX_SECONDS:g} (the {MAX_CODEC_CAP}-token codec cap); "
            f"got {shown(max_seconds)}. Only the first 10 s are decoded."
        )
    frames = int(max_seconds * CODEC_TOKENS_PER_SECOND) // NUM_PHASES
    return max(NUM_PHASES, min(MAX_CODEC_CAP, frames * NUM_PHASES))


def check_cfg_scale(value: Any, name: str = "cfg_scale") -> float:
    """Guidance within CFG_RANGE; ``name`` is what the caller calls it (the app's API: ``cfg``)."""
    low, high = CFG_RANGE
    if not (is_real(value) and low <= value <= high):
        raise InputError(
            f"{name} must be between {low} and {high}; got {shown(value)}. "
            "Use 3.0 (the recommended value), or 1.0 to turn guidance off."
        )
    return float(value)


def check_codec_cap(value: Any) -> int:
    if not (is_whole(value) and 0 < value <= MAX_CODEC_CAP and value % NUM_PHASES == 0):
        raise InputError(
            f"codec_cap must be a positive multiple of {NUM_PHASES} (one frame is {NUM_PHASES} codec tokens) of at "
            f"most {MAX_CODEC_CAP}; got {shown(value)}. Use {MAX_CODEC_CAP}, or 2000 for the 10 s that are decoded."
        )
    return int(value)


def check_max_tokens(value: Any) -> int:
    if not (is_whole(value) and 1 <= value <= MAX_NEW_TOKENS):
        raise InputError(
            f"max_tokens must be a whole number from 1 to {MAX_NEW_TOKENS}; got {shown(value)}. "
            "Leave it unset to stop at the codec cap."
        )
    return int(value)


def check_temperature(value: Any) -> float:
    low, high = TEMPERATURE_RANGE
    if not (is_real(value) and low <= value <= high):
        raise InputError(
            f"temperature must be between {low:g} and {high:g}; got {shown(value)}. "
            "Use 1.0, the value Audex is sampled with."
        )
    return float(value)


def check_top_k(value: Any) -> int:
    if not (is_whole(value) and 1 <= value <= MAX_TOP_K):
        raise InputError(
            f"top_k must be a whole number from 1 to {MAX_TOP_K} (the codec vocabulary); got {shown(value)}. "
            "Use 80, the Audex default."
        )
    return int(value)


def check_top_p(value: Any) -> float:
    if not (is_real(value) and 0 < value <= 1):
        raise InputError(f"top_p must be greater than 0 and at most 1; got {shown(value)}. Use 1.0 to turn it off.")
    return float(value)


def check_sampling_seed(value: Any) -> int:
    """A run's seed, which the request has drawn by now when the client left it to chance."""
    if value is None:
        raise InputError("seed is required for a sampling run; draw one (0 to 2^63-1) before it starts.")
    return check_seed(value)


_CHECKS = {
    "cfg_scale": check_cfg_scale, "codec_cap": check_codec_cap, "max_tokens": check_max_tokens,
    "temperature": check_temperature, "top_k": check_top_k, "top_p": check_top_p, "seed": check_sampling_seed,
    "use_mask": lambda value: check_flag(value, "use_mask"),
}


@dataclass(frozen=True, kw_only=True)
class AudexSampling:
    """One run's caption and sampling knobs; raises InputError naming the limit and the fix.

    ``limits`` are the app's configured ones (the caption's length is checked against them); they
    are not part of the value (not compared, not shown).
    """

    caption: str
    limits: Limits = field(repr=False, compare=False)
    cfg_scale: float = DEFAULT_CFG_SCALE
    codec_cap: int = MAX_CODEC_CAP
    max_tokens: int = MAX_NEW_TOKENS
    temperature: float = DEFAULT_TEMPERATURE
    top_k: int = DEFAULT_TOP_K
    top_p: float = DEFAULT_TOP_P
    seed: int = 0
    use_mask: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "caption", check_caption(self.caption, self.limits))
        for name, check in _CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))

    @property
    def guided(self) -> bool:
        """CFG needs the unconditional row only above scale 1 (at 1 the blend is the identity)."""
        return self.cfg_scale > 1.0

    @property
    def token_limit(self) -> int:
        """Most tokens the run can generate: masked, the end comes at position ``codec_cap``."""
        return min(self.max_tokens, self.codec_cap + 1 if self.use_mask else self.codec_cap)

    def knobs(self) -> dict[str, Any]:
        """The sampler's values a manifest records (the caption and the token budget aside)."""
        return dict(cfg_scale=self.cfg_scale, codec_cap=self.codec_cap, temperature=self.temperature,
                    top_k=self.top_k, top_p=self.top_p, seed=self.seed, use_mask=self.use_mask)
