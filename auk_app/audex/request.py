"""What one text-to-audio run is asked to do, checked when built (as auk.request does for AuK).

The app speaks in seconds; the model in codec tokens: XCodec1 has 4 codebooks at 50 frames per
second, so 200 tokens a second, capped at 4000 (20 s), of which decoding keeps the first 500
frames (10 s), the length the released model was trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from auk_app.audex.params import (
    DEFAULT_CFG_SCALE, DEFAULT_TEMPERATURE, DEFAULT_TOP_K, MAX_CODEC_CAP, AudexSampling, check_cfg_scale,
    check_temperature, check_top_k,
)
from auk_app.audex.phase_table import NUM_PHASES
from auk_app.audex.report import FRAME_RATE_HZ
from auk_app.audex.rvq import MAX_TTA_FRAMES
from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.validate import check_caption, check_flag, check_seed, field_problems, shown

if TYPE_CHECKING:
    from auk_app.audex.pipeline import AudexResult

CODEC_TOKENS_PER_SECOND = NUM_PHASES * FRAME_RATE_HZ  # 200
MAX_SECONDS = MAX_CODEC_CAP / CODEC_TOKENS_PER_SECOND  # 20 s of tokens…
DECODED_SECONDS = MAX_TTA_FRAMES / FRAME_RATE_HZ  # …of which decoding keeps 10 s
TRAINED_SECONDS = 10.0  # the released model's clip length: the default request


def codec_cap(max_seconds: Any) -> int:
    """200 codec tokens per second, in whole frames of 4 tokens, at most the 4000-token cap."""
    if not isinstance(max_seconds, (int, float)) or isinstance(max_seconds, bool) \
            or not 0 < max_seconds <= MAX_SECONDS:
        raise InputError(
            f"max_seconds must be more than 0 and at most {MAX_SECONDS:g} (the {MAX_CODEC_CAP}-token codec cap); "
            f"got {shown(max_seconds)}. Only the first {DECODED_SECONDS:g} s are decoded."
        )
    frames = int(max_seconds * CODEC_TOKENS_PER_SECOND) // NUM_PHASES
    return max(NUM_PHASES, min(MAX_CODEC_CAP, frames * NUM_PHASES))


def _whole(value: Any) -> Any:
    """A whole float (a number box's 80.0) as an int; anything else unchanged, for the checks to refuse."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _field_checks(limits: Limits) -> dict[str, Callable[[Any], Any]]:
    """Each input's own check, by the API's names: what the UI's validator reports field by field."""
    return {
        "caption": lambda value: check_caption(value, limits),
        "cfg": check_cfg_scale,
        "max_seconds": codec_cap,
        "temperature": check_temperature,
        "top_k": lambda value: check_top_k(_whole(value)),
        "seed": check_seed,
        "compare_unmasked": lambda value: check_flag(value, "compare_unmasked"),
    }


@dataclass(frozen=True, kw_only=True)
class AudexRequest:
    """One text-to-audio request in the API's terms; ``seed`` None draws one. ``compare_unmasked``
    also samples the same seed without the RVQ phase mask, to show what the mask prevents.

    Built, it holds its one :class:`AudexSampling` (``sampling``, the masked run), checked then
    against the app's ``limits``; the fields keep what the client sent, normalised (a drawn seed,
    a whole top-k, the stripped caption).
    """

    caption: str
    limits: Limits = field(repr=False, compare=False)
    cfg: float = DEFAULT_CFG_SCALE
    max_seconds: float = TRAINED_SECONDS
    temperature: float = DEFAULT_TEMPERATURE
    top_k: int = DEFAULT_TOP_K
    seed: int | None = None
    compare_unmasked: bool = False
    sampling: AudexSampling = field(init=False, repr=False)

    def __post_init__(self) -> None:
        cap = codec_cap(self.max_seconds)
        check_flag(self.compare_unmasked, "compare_unmasked")
        sampling = AudexSampling(caption=self.caption, limits=self.limits, cfg_scale=self.cfg, codec_cap=cap,
                                 temperature=self.temperature, top_k=_whole(self.top_k), seed=check_seed(self.seed))
        object.__setattr__(self, "sampling", sampling)
        object.__setattr__(self, "max_seconds", float(self.max_seconds))
        for name, value in (("caption", sampling.caption), ("top_k", sampling.top_k), ("seed", sampling.seed)):
            object.__setattr__(self, name, value)

    def unmasked(self) -> AudexSampling:
        """The comparison run's sampling: the same seed and knobs without the mask."""
        return replace(self.sampling, use_mask=False)

    @property
    def codec_cap(self) -> int:
        return self.sampling.codec_cap

    def tokens_asked(self) -> int:
        """Most tokens the request's runs may generate together: the masked run's cap and its end
        token, plus the comparison run's cap."""
        return self.sampling.token_limit + (self.codec_cap if self.compare_unmasked else 0)


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
    warnings: tuple[str, ...] = ()  # what the manifest must tell a reader: words the demo does not know
