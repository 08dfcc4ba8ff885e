"""Writing AuK checkpoints in the two released layouts: for the demo model and the tests.

The app only reads checkpoints (auk_app.auk.checkpoint); this writer lives with the training
code that produces the demo model, so the model package holds no code the app never runs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import save_file

from auk_app.auk.checkpoint import DIM_HEAD_DEFAULT, DIT_PREFIX
from auk_app.auk.configs import BASE_RECIPE, DECLARED, FLASH_T_GRID
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.vae import AuKVAE
from auk_app.demo.harmonic_codec import CODEC_NAME as HARMONIC_NOISE, HarmonicNoiseCodec
from auk_app.resolve import AUK_ASSEMBLED_CONFIG, AUK_ASSEMBLED_DIT, AUK_RELEASE_CONFIG, AUK_RELEASE_DIT, AUK_VAE


def _plain(config: Any) -> dict[str, Any] | None:
    """A typed config (or a mapping) as the plain dict a YAML or JSON file holds: tuples as lists."""
    if config is None:
        return None
    return json.loads(json.dumps(asdict(config) if is_dataclass(config) else dict(config)))


def write_auk_checkpoint(
    directory: str | Path,
    *,
    layout: str,
    dit: AuKTransformer,
    dit_config: Any,  # a DiTConfig or its dict
    vae: AuKVAE | HarmonicNoiseCodec,
    vae_config: Any,  # the codec's config (VAEConfig, HarmonicCodecConfig) or its model_init_kwargs
    layer_weights: torch.Tensor,
    layer_scale: torch.Tensor,
    name: str = "AuK",
    variant: str = "base",
    text_encoder: Any = None,  # a TextEncoderConfig or its dict
    defaults: dict[str, Any] | None = None,  # what the config's ``defaults`` declares (configs.DECLARED)
    capabilities: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint directory in the release (``layout="release"``) or assembled layout.

    The files are what the loader reads from a real download: fp32 safetensors, the DiT
    under ``transformer.`` beside the fusion tensors, and the VAE with its weight-norm
    tensors unfolded. Used for the demo model and by the tests.
    """
    harmonic = isinstance(vae, HarmonicNoiseCodec)
    if harmonic and layout != "assembled":
        raise ValueError("the harmonic-noise codec is declared in the assembled layout's config.json only")
    if not harmonic and any(conv.folded for conv in vae._normed_convs()):
        raise ValueError("write_auk_checkpoint needs the VAE's weight_g/weight_v; save it before folding")
    if layout not in ("release", "assembled"):
        raise ValueError(f"layout must be 'release' or 'assembled', not {layout!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    dit_config, vae_config = _plain(dit_config), _plain(vae_config)
    extras = {
        "text_encoder": {k: v for k, v in (_plain(text_encoder) or {}).items() if v is not None},
        "capabilities": capabilities,
    }
    if layout == "release":
        dit_file = directory / AUK_RELEASE_DIT[variant]
        model = _release_model(dit_config, vae, vae_config, "AuK-Flash" if variant == "flash" else name)
        model.update({key: value for key, value in extras.items() if value})
        (directory / AUK_RELEASE_CONFIG).write_text(yaml.safe_dump({"model": model}, sort_keys=False))
    else:
        dit_file = directory / AUK_ASSEMBLED_DIT
        config = _assembled_config(dit_config, vae, vae_config, name, variant, defaults)
        config.update({key: value for key, value in extras.items() if value})
        (directory / AUK_ASSEMBLED_CONFIG).write_text(json.dumps(config, indent=1))
    dit_tensors = {DIT_PREFIX + k: v for k, v in dit.state_dict().items()}
    dit_tensors.update(layer_weights=layer_weights, layer_scale=layer_scale.reshape(1))
    save_file(_as_saved(dit_tensors), str(dit_file))
    save_file(_as_saved(vae.state_dict()), str(directory / AUK_VAE))
    return directory


def _as_saved(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Contiguous fp32 CPU tensors, as the released safetensors hold them."""
    return {k: v.detach().float().contiguous().cpu() for k, v in tensors.items()}


def _release_model(dit_config: dict, vae, vae_config: dict, name: str) -> dict[str, Any]:
    """The ``model`` section of a release ``config.yaml``: the DiT's architecture (``dim_head`` only
    where it differs from the release's) and the VAE, its latent width referring to the section's."""
    arch = {k: dit_config[k] for k in ("dim", "heads", "ff_mult", "text_hidden_dim", "num_layers", "num_single_layers")}
    arch["attn_mask_enabled"] = dit_config.get("attn_mask_enabled", True)
    if dit_config["dim_head"] != DIM_HEAD_DEFAULT:
        arch["dim_head"] = dit_config["dim_head"]
    return {
        "name": name,
        "backbone": "Flux2Edit",
        "cfm_class": "CFMEdit",
        "arch": arch,
        "vae": {
            "vae_name": "BigVGANFlowVAE",
            "latent_dim": dit_config["latent_dim"],
            "downsample_rate": vae.hop_size,
            "target_sample_rate": vae.sample_rate,
            "model_init_kwargs": {**vae_config, "latent_dim": "${model.vae.latent_dim}"},
        },
    }


def _assembled_config(dit_config: dict, vae, vae_config: dict, name: str, variant: str,
                      defaults: dict[str, Any] | None) -> dict[str, Any]:
    """The assembled layout's ``config.json``: the DiT and VAE configs, the variant, Flash's grid and
    the declared defaults (the Base recipe's unless given)."""
    return {
        "model_type": "auk",
        "name": name,
        "dit": {k: v for k, v in dit_config.items() if k != "latent_dim"},
        "vae": {
            **({"codec": HARMONIC_NOISE} if isinstance(vae, HarmonicNoiseCodec) else {}),
            "latent_dim": dit_config["latent_dim"],
            "downsample_rate": vae.hop_size,
            "target_sample_rate": vae.sample_rate,
            "model_init_kwargs": vae_config,
        },
        "variant": variant,
        "flash_t_grid": list(FLASH_T_GRID),
        "defaults": defaults or {k: getattr(BASE_RECIPE, k) for k in DECLARED},
    }
