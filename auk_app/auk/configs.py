"""Typed checkpoint configs: one frozen dataclass per part a checkpoint declares (cf. whisper's
``ModelDimensions``), parsed once by :mod:`auk_app.auk.checkpoint` and read everywhere else.

Each fact has one home here: the DiT's constructor arguments (:class:`DiTConfig`), the released
VAE's settings with the sample rate and hop derived from them (:class:`VAEConfig`; the demo's
codec keeps its own in :mod:`auk_app.demo.harmonic_codec`), the text encoder
(:class:`TextEncoderConfig`) and the sampling defaults (:class:`SamplingDefaults`). Torch-free,
so argument parsing and the instruction builder can read the constants below.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from auk_app.auk.registry import QWEN_OMNI, TEXT_ENCODERS

logger = logging.getLogger(__name__)

# AuK's audio grid, as the released VAE makes it: 24 kHz audio, one latent frame per 480 samples
# (its downsampling strides' product), so 50 frames per second. A checkpoint's own rate and hop
# are its codec config's (AuKCheckpoint.sample_rate, .hop); these are the defaults every codec
# config starts from and the grid of upstream's frame count, ceil(seconds · 24000 / 480).
SAMPLE_RATE = 24_000
HOP = 480
FRAME_RATE = SAMPLE_RATE // HOP
LANGUAGES = ("en", "zh")  # the instruction languages the releases were trained on, in the cookbook's order
STARTS = ("noise", "source")
# The longest clip the released AuK was trained on: a checkpoint that declares no longer one gets it.
RELEASED_MAX_CLIP_SECONDS = 30.0


def frozen(value: Any) -> Any:
    """Lists (from JSON or YAML) as tuples, nested ones too, so a frozen config holds no mutable parts."""
    return tuple(frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


@dataclass(frozen=True)
class DiTConfig:
    """:class:`~auk_app.auk.dit.AuKTransformer`'s constructor arguments: ``AuKTransformer(**asdict(c))``."""

    dim: int
    heads: int
    dim_head: int
    ff_mult: float
    latent_dim: int
    text_hidden_dim: int  # the text encoder's width: 2048 for Qwen2.5-Omni-3B, 384 for MiniLM
    num_layers: int
    num_single_layers: int
    attn_mask_enabled: bool = True


class CodecConfig(Protocol):
    """What the app reads of any codec's config: the audio rate and the samples per latent frame."""

    sample_rate: int

    @property
    def hop(self) -> int: ...


@dataclass(frozen=True)
class VAEConfig:
    """The released BigVGAN-flow VAE's settings (its config's ``model_init_kwargs``)."""

    upsample_rates: tuple[int, ...]
    upsample_kernel_sizes: tuple[int, ...]
    upsample_initial_channel: int
    resblock_kernel_sizes: tuple[int, ...]
    resblock_dilation_sizes: tuple[tuple[int, ...], ...]
    downsample_rates: tuple[int, ...]
    downsample_channels: tuple[int, ...]
    latent_dim: int = 64
    snake_logscale: bool = True
    use_vae: bool = True
    causal: bool = True
    act_causal: bool = True
    sample_rate: int = SAMPLE_RATE

    @property
    def hop(self) -> int:
        """Samples per latent frame (480): the encoder's downsampling strides' product."""
        return math.prod(self.downsample_rates)

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> VAEConfig:
        """From the release's ``model_init_kwargs``; its training-only entries (the flow's) are
        ignored, a missing setting raises TypeError naming it."""
        names = {f.name for f in fields(cls)}
        ignored = sorted(set(kwargs) - names)
        if ignored:
            logger.debug("AuKVAE ignores config entries %s", ignored)
        return cls(**{k: frozen(v) for k, v in kwargs.items() if k in names})


@dataclass(frozen=True)
class TextEncoderConfig:
    """The text encoder a checkpoint's fusion weights belong to: a key of registry.TEXT_ENCODERS."""

    kind: str = QWEN_OMNI
    name: str | None = None  # informative: the model the encoder was made from

    def __post_init__(self):
        if self.kind not in TEXT_ENCODERS:
            expected = " or ".join(repr(k) for k in TEXT_ENCODERS)
            raise ValueError(f"Unknown text encoder kind {self.kind!r}; expected {expected}.")

    @property
    def reads_audio(self) -> bool:
        """Whether the encoder hears the source clip (Qwen2.5-Omni) or reads the instruction only (MiniLM)."""
        return TEXT_ENCODERS[self.kind].reads_audio


@dataclass(frozen=True)
class SamplingDefaults:
    """The recipe a request gets for the knobs it leaves out.

    ``noise_scale`` multiplies the sampler's initial noise; the releases sample at 1, an assembled
    config's defaults may declare less. ``start`` is where the flow begins: ``"noise"`` (the
    releases) or ``"source"``, the source clip's latents plus that noise (the demo model declares
    both: see training.train_dit).
    """

    nfe: int
    cfg: float
    sway: float | None
    noise_scale: float = 1.0
    start: str = "noise"

    def __post_init__(self):
        scale = self.noise_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 1:
            raise ValueError(f"defaults.noise_scale must be a number in (0, 1], not {scale!r}")
        object.__setattr__(self, "noise_scale", float(scale))
        if self.start not in STARTS:
            raise ValueError(f"defaults.start must be one of {STARTS}, not {self.start!r}")


BASE_DEFAULTS = SamplingDefaults(nfe=32, cfg=2.0, sway=-1.0)
FLASH_DEFAULTS = SamplingDefaults(nfe=4, cfg=0.0, sway=None)
# The sway = -1, nfe = 4 grid evaluated in torch float32; rounding it changes the output level.
FLASH_T_GRID = (0.0, 0.07612049579620361, 0.2928932309150696, 0.6173166036605835, 1.0)
