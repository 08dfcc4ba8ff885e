"""What one text-to-audio run is asked to do, checked when built (as auk.request does for AuK).

The app speaks in seconds; the model in codec tokens: XCodec1 has 4 codebooks at 50 frames per
second, so 200 tokens a second, capped at 4000 (20 s), of which decoding keeps the first 500
frames (10 s), the length the released model was trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from auk_app.audex.params import MAX_CODEC_CAP, TTASampling
from auk_app.audex.report import FRAME_RATE_HZ
from auk_app.audex.rvq import MAX_TTA_FRAMES
from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.validate import check_caption, check_flag, check_seed, field_problems, shown

if TYPE_CHECKING:
    from auk_app.audex.pipeline import AudexResult

CODEC_TOKENS_PER_SECOND = 4 * FRAME_RATE_HZ  # 200
MAX_SECONDS = MAX_CODEC_CAP / CODEC_TOKENS_PER_SECOND  # 20 s of tokens…
DECODED_SECONDS = MAX_TTA_FRAMES / FRAME_RATE_HZ  # …of which decoding keeps 10 s
TRAINED_SECONDS = 10.0  # the released model's clip length: the default request
DEFAULTS = TTASampling()  # the official recipe: cfg 3.0, temperature 1.0, top-k 80


def codec_cap(max_seconds: Any) -> int:
    """200 codec tokens per second, in whole frames of 4 tokens, at most the 4000-token cap."""
    if not isinstance(max_seconds, (int, float)) or isinstance(max_seconds, bool) \
            or not 0 < max_seconds <= MAX_SECONDS:
        raise InputError(
            f"max_seconds must be more than 0 and at most {MAX_SECONDS:g} (the {MAX_CODEC_CAP}-token codec cap); "
            f"got {shown(max_seconds)}. Only the first {DECODED_SECONDS:g} s are decoded."
        )
    return max(4, min(MAX_CODEC_CAP, int(max_seconds * CODEC_TOKENS_PER_SECOND) // 4 * 4))


def _whole(value: Any) -> Any:
    """A whole float (a number box's 80.0) as an int; anything else unchanged, for the checks to refuse."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _check_max_seconds(value: Any) -> float:
    codec_cap(value)
    return float(value)


def _field_checks(limits: Limits) -> dict[str, Callable[[Any], Any]]:
    return {
        "caption": lambda value: check_caption(value, limits),
        "cfg": lambda value: TTASampling(cfg_scale=value).cfg_scale,
        "max_seconds": _check_max_seconds,
        "temperature": lambda value: TTASampling(temperature=value).temperature,
        "top_k": lambda value: TTASampling(top_k=_whole(value)).top_k,
        "seed": check_seed,
        "compare_unmasked": lambda value: check_flag(value, "compare_unmasked"),
    }


@dataclass(frozen=True)
class AudexRequest:
    """One text-to-audio request; ``seed`` None draws one. ``compare_unmasked`` also samples the
    same seed without the RVQ phase mask, to show what the mask prevents."""

    caption: str
    cfg: float = DEFAULTS.cfg_scale
    max_seconds: float = TRAINED_SECONDS
    temperature: float = DEFAULTS.temperature
    top_k: int = DEFAULTS.top_k
    seed: int | None = None
    compare_unmasked: bool = False
    limits: Limits = field(default_factory=Limits, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, check in _field_checks(self.limits).items():
            object.__setattr__(self, name, check(getattr(self, name)))

    @property
    def codec_cap(self) -> int:
        return codec_cap(self.max_seconds)

    def tokens_asked(self) -> int:
        """Most tokens the request's runs may generate together: the masked run's cap and its end
        token, plus the comparison run's cap."""
        return self.codec_cap + 1 + (self.codec_cap if self.compare_unmasked else 0)

    def sampling(self, *, use_mask: bool = True) -> dict[str, Any]:
        """The keyword arguments of ``AudexPipeline.generate`` for this request."""
        return dict(cfg_scale=self.cfg, codec_cap=self.codec_cap, temperature=self.temperature, top_k=self.top_k,
                    top_p=DEFAULTS.top_p, seed=self.seed, use_mask=use_mask)


def audex_problems(values: Mapping[str, Any], limits: Limits) -> dict[str, str]:
    """The sentence for each field of ``values`` that an AudexRequest would refuse."""
    return field_problems(_field_checks(limits), values)


@dataclass(frozen=True)
class TextToAudioResult:
    """The masked run, the unmasked comparison (when asked for), and which model made them."""

    request: AudexRequest
    result: AudexResult
    unmasked: AudexResult | None
    model: dict[str, Any]  # name, demo flag, folder names, device, dtype: for the manifest
