"""What one text-to-audio run is asked to do, checked when built (as auk.request does for AuK).

The app speaks in seconds; the model in codec tokens: XCodec1 has 4 codebooks at 50 frames per
second, so 200 tokens a second, capped at 4000 (20 s), of which decoding keeps the first 500
frames (10 s), the length the released model was trained on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from auk_app.audex.params import FRAME_RATE_HZ, AudexSampling, codec_cap
from auk_app.audex.rvq import MAX_TTA_FRAMES
from auk_app.config import Limits
from auk_app.knobs import AUDEX, drawn_seed
from auk_app.validate import check_seed

if TYPE_CHECKING:
    from auk_app.audex.pipeline import AudexResult

DECODED_SECONDS = MAX_TTA_FRAMES / FRAME_RATE_HZ  # of the 20 s of tokens, decoding keeps 10 s
TRAINED_SECONDS = 10.0  # the released model's clip length: the default request


@dataclass(frozen=True)
class AudexRequest:
    """One text-to-audio request: the masked run's :class:`AudexSampling` (the one checked type of
    its knobs), the length asked for, and whether to also run the same seed without the RVQ phase
    mask, to show what the mask prevents."""

    sampling: AudexSampling
    max_seconds: float
    compare_unmasked: bool = False

    @classmethod
    def from_knobs(cls, values: Mapping[str, Any], limits: Limits, *, seconds: float = TRAINED_SECONDS) -> AudexRequest:
        """The request of the API's knobs (:data:`auk_app.knobs.AUDEX`; defaults for those left out,
        ``seconds`` for an empty ``max_seconds``), with a drawn seed where ``randomize_seed`` asks for
        one; InputError names a bad value."""
        knobs = {**AUDEX.defaults(), **drawn_seed(values)}
        max_seconds = AUDEX["max_seconds"].check(knobs["max_seconds"], limits) or seconds
        sampling = AudexSampling(caption=knobs["caption"], limits=limits, cfg_scale=knobs["cfg"],
                                 codec_cap=codec_cap(max_seconds), temperature=knobs["temperature"],
                                 top_k=knobs["top_k"], seed=check_seed(knobs["seed"]))
        return cls(sampling, max_seconds, AUDEX["compare_unmasked"].check(knobs["compare_unmasked"], limits))

    @property
    def caption(self) -> str:
        return self.sampling.caption

    def unmasked(self) -> AudexSampling:
        """The comparison run's sampling: the same seed and knobs without the mask."""
        return replace(self.sampling, use_mask=False)

    def tokens_asked(self) -> int:
        """Most tokens the request's runs may generate together: the masked run's cap and its end
        token, plus the comparison run's cap."""
        return self.sampling.token_limit + (self.sampling.codec_cap if self.compare_unmasked else 0)


@dataclass(frozen=True)
class TextToAudioResult:
    """The masked run, the unmasked comparison (when asked for), and which model made them."""

    request: AudexRequest
    result: AudexResult
    unmasked: AudexResult | None
    model: dict[str, Any]  # name, demo flag, folder names, device, dtype: for the manifest
    warnings: tuple[str, ...] = ()  # what the manifest must tell a reader: words the demo does not know
