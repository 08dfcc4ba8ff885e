"""Reading AuK checkpoints in the two directory layouts a user will have on disk.

* Upstream release (``tencent/AuK``, ``tencent/AuK-Flash``): ``config.yaml`` (OmegaConf
  style, with ``${...}`` references), ``auk_base.safetensors`` or ``auk_flash.safetensors``,
  and ``vae.safetensors``. The variant is Flash iff ``model.name == "AuK-Flash"``, as upstream
  decides; a name that contradicts the weight file is refused.
* vLLM-Omni assembled directory: ``config.json`` with ``dit``, ``vae``, ``variant``,
  ``flash_t_grid`` and ``defaults`` sections, ``auk.safetensors`` and ``vae.safetensors``.

Both DiT files hold the backbone under ``transformer.`` plus the text-fusion tensors
``layer_weights`` [layers] and ``layer_scale`` [1], which go to the text conditioner. An
optional ``text_encoder`` section (``{"kind": "minilm"}``) selects the conditioner; without
it the text encoder is Qwen2.5-Omni-3B, as in every release. Likewise an assembled config's
``vae.codec`` may name ``harmonic_noise`` (the demo model's parametric codec, whose weight
file holds only latent statistics); without it the codec is the released BigVGAN-flow VAE.
Both names are looked up in :mod:`auk_app.auk.registry`, which imports a codec only when a
checkpoint uses it. The sections are parsed once into the typed configs of
:mod:`auk_app.auk.configs`. Weights are read with safetensors only, and every mismatch raises
one CheckpointError naming file and keys.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
import yaml

from auk_app.auk import registry
from auk_app.auk.configs import (
    BASE_RECIPE,
    DECLARED,
    FLASH_T_GRID,
    LANGUAGES,
    RELEASED_MAX_CLIP_SECONDS,
    SAMPLE_RATE,
    CodecConfig,
    DiTConfig,
    Recipe,
    TextEncoderConfig,
    flash_recipe,
)
from auk_app.auk.dit import AuKTransformer, dit_state_dict
from auk_app.errors import CheckpointError
from auk_app.resolve import AUK_ASSEMBLED_CONFIG, AUK_ASSEMBLED_DIT, AUK_RELEASE_CONFIG, AUK_RELEASE_DIT, AUK_VAE
from auk_app.validate import is_real
from auk_app.weights import check_state_dict, mismatch, read_safetensors

__all__ = ["FLASH_T_GRID", "AuKCheckpoint", "AuKModel", "Capabilities", "load_auk_checkpoint", "read_auk_checkpoint"]

FUSION_KEYS = ("layer_weights", "layer_scale")
DIT_PREFIX = "transformer."
DIM_HEAD_DEFAULT = 64  # Flux2Edit's constructor default; the release yaml does not set it


@dataclass(frozen=True)
class Capabilities:
    """What a checkpoint was trained for, from its config's optional ``capabilities`` section, so the
    app can warn before it runs an instruction the weights never saw instead of returning noise."""

    # Instruction-builder task keys ("volume"), one template of a task ("enhance:Remove noise") or a
    # task outside the cookbook ("sine_tone"); None: every cookbook task, as the releases declare.
    tasks: tuple[str, ...] | None = None
    languages: tuple[str, ...] = LANGUAGES
    # The longest clip it was trained on, in seconds: the window a long recording is edited in, and
    # the length past which a single clip is under-edited.
    max_clip_seconds: float = RELEASED_MAX_CLIP_SECONDS


@dataclass(frozen=True)
class AuKCheckpoint:
    """What a checkpoint directory declares, read without touching the weights."""

    directory: Path
    layout: str  # "release" or "assembled"
    name: str
    variant: str  # "base" or "flash"
    dit_file: Path
    vae_file: Path
    dit_config: DiTConfig
    codec: str  # a key of registry.CODECS
    codec_config: CodecConfig  # the codec's model_init_kwargs, as its class's config_type
    text_encoder: TextEncoderConfig
    defaults: Recipe  # the recipe a request's knobs go over; Flash's is fixed, its grid included
    capabilities: Capabilities = Capabilities()  # the releases: every task, English and Chinese

    @property
    def sample_rate(self) -> int:
        """The codec's audio rate, which clips are resampled to and outputs come at."""
        return self.codec_config.sample_rate

    @property
    def hop(self) -> int:
        """Samples per latent frame (480), as the codec's config declares or derives it."""
        return self.codec_config.hop


@dataclass
class AuKModel:
    """The loaded modules of one checkpoint plus the fusion tensors for the text conditioner."""

    checkpoint: AuKCheckpoint
    dit: AuKTransformer
    vae: torch.nn.Module  # the codec registry.CODECS names: AuKVAE for every release
    layer_weights: torch.Tensor
    layer_scale: torch.Tensor


def read_auk_checkpoint(directory: str | Path) -> AuKCheckpoint:
    """Parse and check a checkpoint directory's config; the weights are not opened."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"AuK checkpoint directory {directory} does not exist.")
    if (directory / AUK_ASSEMBLED_CONFIG).is_file() and (directory / AUK_ASSEMBLED_DIT).exists():
        return _read_assembled(directory)
    if (directory / AUK_RELEASE_CONFIG).is_file():
        return _read_release(directory)
    raise CheckpointError(
        f"{directory} is not an AuK checkpoint: expected {AUK_RELEASE_CONFIG} with {AUK_RELEASE_DIT['base']} or "
        f"{AUK_RELEASE_DIT['flash']} and {AUK_VAE} (the tencent/AuK release), or {AUK_ASSEMBLED_CONFIG} with "
        f"{AUK_ASSEMBLED_DIT} and {AUK_VAE} (a vLLM-Omni assembled directory)."
    )


def load_auk_checkpoint(
    directory: str | Path | AuKCheckpoint,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> AuKModel:
    """Build and load the DiT (``dtype``) and the codec (always float32) of a checkpoint on ``device``.

    The one entry point for weights: the app's demo model goes through here exactly like a release.
    """
    checkpoint = directory if isinstance(directory, AuKCheckpoint) else read_auk_checkpoint(directory)
    device = torch.device(device)

    tensors = read_safetensors(checkpoint.dit_file)
    fusion = {k: tensors.pop(k, None) for k in FUSION_KEYS}
    stray = [k for k in tensors if not k.startswith(DIT_PREFIX)]
    missing_fusion = [k for k, v in fusion.items() if v is None]
    if stray or missing_fusion:
        raise mismatch(checkpoint.dit_file, "AuK DiT checkpoint layout", missing=missing_fusion, unexpected=stray)
    # One fusion weight per text-encoder layer (36 for Qwen2.5-Omni-3B); the conditioner checks the count.
    if fusion["layer_weights"].ndim != 1 or tuple(fusion["layer_scale"].shape) != (1,):
        raise CheckpointError(
            f"{checkpoint.dit_file} holds layer_weights {tuple(fusion['layer_weights'].shape)} and layer_scale "
            f"{tuple(fusion['layer_scale'].shape)}; expected one weight per text-encoder layer and a single scale."
        )
    with torch.device("meta"):
        dit = AuKTransformer(**asdict(checkpoint.dit_config))
    state = dit_state_dict(tensors, DIT_PREFIX)
    check_state_dict(
        {k: v.shape for k, v in dit.state_dict().items()}, state, source=checkpoint.dit_file, what="AuK DiT"
    )
    dit.load_state_dict(state, strict=True, assign=True)
    dit = dit.to(device=device, dtype=dtype).eval()  # the rotary frequencies stay float32, as stored

    vae = load_codec(checkpoint, device=device)
    return AuKModel(
        checkpoint=checkpoint,
        dit=dit,
        vae=vae,
        layer_weights=fusion["layer_weights"].float().to(device),
        layer_scale=fusion["layer_scale"].float().to(device),
    )


def load_codec(checkpoint: AuKCheckpoint, *, device: str | torch.device = "cpu") -> torch.nn.Module:
    """Build and load a checkpoint's codec alone (float32, eval mode) on ``device``: what encodes a
    clip and decodes latents where the DiT runs elsewhere (an app whose edits run on Serve replicas)."""
    device = torch.device(device)
    try:
        with torch.device(device):
            vae = registry.codec_class(checkpoint.codec).from_config(checkpoint.codec_config)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{checkpoint.directory}: the {checkpoint.codec} codec settings are not usable ({exc}).") from exc
    missing, unexpected = vae.load_weights(checkpoint.vae_file, device=device)
    if missing or unexpected:
        raise mismatch(checkpoint.vae_file, vae.description, missing=missing, unexpected=unexpected)
    wanted = checkpoint.dit_config.latent_dim
    if vae.latent_dim != wanted:
        raise CheckpointError(
            f"{checkpoint.vae_file.parent}: the codec makes {vae.latent_dim} latent channels, the DiT takes {wanted}."
        )
    return vae.eval()


# ----------------------------------------------------------------------------- layouts


def _read_release(directory: Path) -> AuKCheckpoint:
    config_file = directory / AUK_RELEASE_CONFIG
    try:
        tree = _resolve_references(yaml.safe_load(config_file.read_text()) or {})
        model = tree["model"]
        arch, vae = model["arch"], model["vae"]
        name = str(model.get("name", "AuK"))
        variant = "flash" if name == "AuK-Flash" else "base"
        dit_config = _dit_config(arch, dim_head=arch.get("dim_head", DIM_HEAD_DEFAULT), latent_dim=vae["latent_dim"])
        codec_config = _codec_config(registry.BIGVGAN_FLOW, vae)
        text_encoder = dict(model.get("text_encoder") or {})
        capabilities = _capabilities(model.get("capabilities") or {})
    except (KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        raise CheckpointError(f"{config_file} is not a readable AuK config ({exc!r}).") from exc

    dit_file = directory / AUK_RELEASE_DIT[variant]
    other = directory / AUK_RELEASE_DIT["base" if variant == "flash" else "flash"]
    if not dit_file.is_file():
        hint = f" It holds {other.name}: the config's model.name ({name!r}) does not match it." if other.is_file() else ""
        raise CheckpointError(f"{directory} lacks {dit_file.name}, which model.name {name!r} calls for.{hint}")
    return AuKCheckpoint(
        directory=directory,
        layout="release",
        name=name,
        variant=variant,
        dit_file=dit_file,
        vae_file=_required(directory / AUK_VAE),
        dit_config=dit_config,
        codec=registry.BIGVGAN_FLOW,
        codec_config=codec_config,
        text_encoder=_text_encoder(text_encoder),
        defaults=flash_recipe() if variant == "flash" else BASE_RECIPE,
        capabilities=capabilities,
    )


def _read_assembled(directory: Path) -> AuKCheckpoint:
    config_file = directory / AUK_ASSEMBLED_CONFIG
    try:
        config = json.loads(config_file.read_text())
        dit, vae = dict(config["dit"]), config["vae"]
        variant = str(config.get("variant", "base"))
        if variant not in ("base", "flash"):
            raise ValueError(f"variant must be 'base' or 'flash', not {variant!r}")
        dit_config = _dit_config(
            dit, dim_head=dit.get("dim_head", int(dit["dim"]) // int(dit["heads"])),
            latent_dim=dit.get("latent_dim", vae["latent_dim"]),
        )
        codec = str(vae.get("codec", registry.BIGVGAN_FLOW))
        codec_config = _codec_config(codec, vae)
        defaults = _defaults(variant, config.get("defaults", {}), config.get("flash_t_grid") or FLASH_T_GRID)
        name = str(config.get("name") or ("AuK-Flash" if variant == "flash" else "AuK"))
        capabilities = _capabilities(config.get("capabilities") or {})
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{config_file} is not a readable AuK config ({exc!r}).") from exc
    return AuKCheckpoint(
        directory=directory,
        layout="assembled",
        name=name,
        variant=variant,
        dit_file=_required(directory / AUK_ASSEMBLED_DIT),
        vae_file=_required(directory / AUK_VAE),
        dit_config=dit_config,
        codec=codec,
        codec_config=codec_config,
        text_encoder=_text_encoder(config.get("text_encoder") or {}),
        defaults=defaults,
        capabilities=capabilities,
    )


def _dit_config(section: dict[str, Any], *, dim_head: Any, latent_dim: Any) -> DiTConfig:
    """The DiT's constructor arguments from a config section (``model.arch`` or ``dit``)."""
    return DiTConfig(
        dim=int(section["dim"]),
        heads=int(section["heads"]),
        dim_head=int(dim_head),
        ff_mult=float(section["ff_mult"]),
        latent_dim=int(latent_dim),
        text_hidden_dim=int(section["text_hidden_dim"]),
        num_layers=int(section["num_layers"]),
        num_single_layers=int(section["num_single_layers"]),
        attn_mask_enabled=bool(section.get("attn_mask_enabled", True)),
    )


def _codec_config(codec: str, vae: dict[str, Any]) -> CodecConfig:
    """The ``vae`` section's ``model_init_kwargs`` as the named codec's config type; the section's
    ``target_sample_rate`` (else AuK's 24 kHz) stands in for a ``sample_rate`` the kwargs leave out."""
    kwargs = dict(vae["model_init_kwargs"])
    kwargs.setdefault("sample_rate", int(vae.get("target_sample_rate", SAMPLE_RATE)))
    return registry.codec_class(codec).config_type.from_kwargs(kwargs)


def _defaults(variant: str, declared: dict[str, Any], flash_grid) -> Recipe:
    """The variant's recipe: Base's with what an assembled config declares over it; Flash's fixed
    one on the config's grid, whatever else it declares."""
    if variant == "flash":
        return flash_recipe(flash_grid)
    return replace(BASE_RECIPE, **{k: v for k, v in declared.items() if k in DECLARED})


def _capabilities(section: dict[str, Any]) -> Capabilities:
    """A config's ``capabilities`` (``tasks``, ``languages``, ``max_clip_seconds``); what it leaves out
    is the releases' own."""
    tasks = section.get("tasks")
    languages = tuple(str(code) for code in section.get("languages", LANGUAGES))
    if not languages or set(languages) - set(LANGUAGES):
        raise ValueError(f"capabilities.languages must be some of {LANGUAGES}, not {list(languages)}")
    if tasks is not None and (isinstance(tasks, str) or not all(isinstance(t, str) and t for t in tasks)):
        raise ValueError(f"capabilities.tasks must be a list of task names, not {tasks!r}")
    longest = section.get("max_clip_seconds", RELEASED_MAX_CLIP_SECONDS)
    if not is_real(longest) or longest <= 0:
        raise ValueError(f"capabilities.max_clip_seconds must be a positive number of seconds, not {longest!r}")
    return Capabilities(None if tasks is None else tuple(tasks), languages, float(longest))


def _text_encoder(section: dict[str, Any]) -> TextEncoderConfig:
    """The ``text_encoder`` section (``kind``, an informative ``name``); none means Qwen2.5-Omni-3B."""
    kind = section.get("kind", registry.QWEN_OMNI)
    try:
        return TextEncoderConfig(kind=kind, name=section.get("name"), reads_audio=registry.text_encoder(kind).reads_audio)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc


def _required(path: Path) -> Path:
    if not path.is_file():
        raise CheckpointError(f"{path.parent} lacks {path.name}; download the checkpoint again.")
    return path


_REFERENCE = re.compile(r"^\$\{([^}]+)\}$")


def _resolve_references(tree: dict) -> dict:
    """Replace whole-value ``${dotted.path}`` strings by the value they name (OmegaConf style)."""

    def lookup(path: str):
        node: Any = tree
        for part in path.split("."):
            node = node[part]
        return resolve(node)

    def resolve(node):
        if isinstance(node, dict):
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        if isinstance(node, str) and (match := _REFERENCE.match(node)):
            return lookup(match.group(1).strip())
        return node

    return resolve(tree)
