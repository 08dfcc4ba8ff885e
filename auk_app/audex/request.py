"""What one text-to-audio run is asked to do, checked when built (as auk.request does for AuK).

The app speaks in seconds; the model in codec tokens: XCodec1 has 4 codebooks at 50 frames per
second, so 200 tokens a second, capped at 4000 (20 s), of which decoding keeps the first 500
frames (10 s), the length the released model was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from auk_app.audex.params import FRAME_RATE_HZ, AudexSampling
from auk_app.audex.rvq import MAX_TTA_FRAMES

if TYPE_CHECKING:
    from auk_app.audex.pipeline import AudexResult

DECODED_SECONDS = MAX_TTA_FRAMES / FRAME_RATE_HZ  # of the 20 s of tokens, decoding keeps 10 s
TRAINED_SECONDS = 10.0  # the released model's clip length: the default request


@dataclass(frozen=True)
class AudexRequest:
    """One text-to-audio request: the masked run's :class:`AudexSampling` (the one checked type of
    its knobs), the length asked for, and whether to also run the same seed without the RVQ phase
    mask, to show what the mask prevents. Built from the API's knobs by :func:`auk_app.knobs.audex_request`."""

    sampling: AudexSampling
    max_seconds: float
    compare_unmasked: bool = False

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
