"""Typed checkpoint configs: one frozen dataclass per part a checkpoint declares (cf. whisper's
``ModelDimensions``), parsed once by :mod:`auk_app.auk.checkpoint` and read everywhere else.

Each fact has one home here: the DiT's constructor arguments (:class:`DiTConfig`), the released
VAE's settings with the sample rate and hop derived from them (:class:`VAEConfig`; the demo's
codec keeps its own in :mod:`auk_app.demo.harmonic_codec`), the text encoder
(:class:`TextEncoderConfig`) and the sampling recipe (:class:`Recipe`). Torch-free,
so argument parsing and the instruction builder can read the constants below.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol

from auk_app.config import SAMPLE_RATE

logger = logging.getLogger(__name__)

LANGUAGES = ("en", "zh")  # the instruction languages the releases were trained on, in the cookbook's order
STARTS = ("noise", "source")
BIGVGAN_FLOW = "bigvgan_flow"  # the released VAE, what a config that names no codec means
QWEN_OMNI = "qwen2_5_omni"  # the released text encoder, what a config that names none means
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
    """The text encoder a checkpoint's fusion weights belong to: a key of registry.TEXT_ENCODERS, and
    whether it hears the source clip (Qwen2.5-Omni) or reads the instruction only (MiniLM)."""

    kind: str = QWEN_OMNI
    name: str | None = None  # informative: the model the encoder was made from
    reads_audio: bool = True


@dataclass(frozen=True)
class Recipe:
    """A sampling recipe: a checkpoint's defaults, or one run's (a request's knobs put over them).

    ``noise_scale`` multiplies the sampler's initial noise; the releases sample at 1, an assembled
    config's defaults may declare less. ``start`` is where the flow begins: ``"noise"`` (the
    releases) or ``"source"``, the source clip's latents plus that noise (the demo model declares
    both: see training.train_dit). ``step_cache`` (0: off) lets a step reuse the previous step's
    velocity where the DiT's input moved less than that (:mod:`auk_app.auk.step_reuse`);
    ``cfg_interval`` (None: every step) runs guidance only at the steps whose t lies in it. A
    ``fixed`` recipe (Flash, a distilled student that only works its own way) takes nothing from a
    request; ``ignored`` names what a request set that a run's recipe overrode.
    """

    nfe: int
    cfg: float
    sway: float | None
    t_grid: tuple[float, ...] | None = None
    noise_scale: float = 1.0
    start: str = "noise"
    step_cache: float = 0.0
    cfg_interval: tuple[float, float] | None = None
    fixed: bool = False
    ignored: tuple[str, ...] = ()

    def __post_init__(self):
        scale = self.noise_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 1:
            raise ValueError(f"defaults.noise_scale must be a number in (0, 1], not {scale!r}")
        object.__setattr__(self, "noise_scale", float(scale))
        if self.start not in STARTS:
            raise ValueError(f"defaults.start must be one of {STARTS}, not {self.start!r}")
        if self.t_grid is not None:  # a grid fixes the step count
            object.__setattr__(self, "t_grid", tuple(float(t) for t in self.t_grid))
            object.__setattr__(self, "nfe", len(self.t_grid) - 1)
        if self.cfg_interval is not None:  # a list, read back from JSON
            object.__setattr__(self, "cfg_interval", tuple(float(t) for t in self.cfg_interval))

    @property
    def steps(self) -> int:
        """The Euler steps a run of this recipe takes (what budgets and deadlines count)."""
        return self.nfe

    def over(self, asked: Mapping[str, Any]) -> Recipe:
        """The run's recipe: ``asked`` (a request's knobs, None where left out) over this one. A grid
        replaces the step count and sway; a fixed recipe ignores whatever differs from its own."""
        given = {k: v for k, v in asked.items() if k in RECIPE_KNOBS and v is not None}
        if self.fixed:
            return replace(self, ignored=tuple(sorted(k for k, v in given.items() if v != getattr(self, k))))
        run = replace(self, **given)
        return run if run.t_grid is None else replace(run, ignored=tuple(sorted({"nfe", "sway"} & given.keys())))


RECIPE_KNOBS = ("nfe", "cfg", "sway", "t_grid", "step_cache", "cfg_interval")  # what a request may set
DECLARED = ("nfe", "cfg", "sway", "noise_scale", "start")  # what an assembled config's ``defaults`` may set
# The sway = -1, nfe = 4 grid evaluated in torch float32; rounding it changes the output level.
FLASH_T_GRID = (0.0, 0.07612049579620361, 0.2928932309150696, 0.6173166036605835, 1.0)
BASE_RECIPE = Recipe(nfe=32, cfg=2.0, sway=-1.0)


def flash_recipe(grid=FLASH_T_GRID) -> Recipe:
    """Flash's fixed recipe on ``grid`` (the release's, or an assembled config's): the grid's steps
    and no guidance, whatever a request asks."""
    return Recipe(nfe=0, cfg=0.0, sway=None, t_grid=grid, fixed=True)
