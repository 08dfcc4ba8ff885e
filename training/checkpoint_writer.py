"""Writing AuK checkpoints in the two released layouts: for the demo model and the tests.

The app only reads checkpoints (auk_app.auk.checkpoint); this writer lives with the training
code that produces the demo model, so the model package holds no code the app never runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import save_file

from auk_app.auk.checkpoint import BASE_DEFAULTS, DIM_HEAD_DEFAULT, DIT_PREFIX, FLASH_T_GRID, RELEASE_FILES
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.harmonic_codec import CODEC_NAME as HARMONIC_NOISE, HarmonicNoiseCodec
from auk_app.auk.vae import AuKVAE


def write_auk_checkpoint(
    directory: str | Path,
    *,
    layout: str,
    dit: AuKTransformer,
    dit_config: dict[str, Any],
    vae: AuKVAE | HarmonicNoiseCodec,
    vae_config: dict[str, Any],
    layer_weights: torch.Tensor,
    layer_scale: torch.Tensor,
    name: str = "AuK",
    variant: str = "base",
    text_encoder: dict[str, Any] | None = None,
    defaults: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint directory in the release (``layout="release"``) or assembled layout.

    The files are what the loader reads from a real download: fp32 safetensors, the DiT
    under ``transformer.`` beside the fusion tensors, and the VAE with its weight-norm
    tensors unfolded. Used for the demo model and by the tests.
    """

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    harmonic = isinstance(vae, HarmonicNoiseCodec)
    if harmonic and layout != "assembled":
        raise ValueError("the harmonic-noise codec is declared in the assembled layout's config.json only")
    if not harmonic and any(conv.folded for conv in vae._normed_convs()):
        raise ValueError("write_auk_checkpoint needs the VAE's weight_g/weight_v; save it before folding")
    dit_tensors = {DIT_PREFIX + k: v for k, v in dit.state_dict().items()}
    dit_tensors.update(layer_weights=layer_weights, layer_scale=layer_scale.reshape(1))
    as_saved = lambda tensors: {k: v.detach().float().contiguous().cpu() for k, v in tensors.items()}  # noqa: E731
    vae_tensors = as_saved(vae.state_dict())

    if layout == "release":
        dit_file = directory / RELEASE_FILES[variant]
        arch = {k: dit_config[k] for k in ("dim", "heads", "ff_mult", "text_hidden_dim", "num_layers", "num_single_layers")}
        arch["attn_mask_enabled"] = dit_config.get("attn_mask_enabled", True)
        if dit_config["dim_head"] != DIM_HEAD_DEFAULT:
            arch["dim_head"] = dit_config["dim_head"]
        model = {
            "name": "AuK-Flash" if variant == "flash" else name,
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
        if text_encoder:
            model["text_encoder"] = text_encoder
        if capabilities:
            model["capabilities"] = capabilities
        (directory / "config.yaml").write_text(yaml.safe_dump({"model": model}, sort_keys=False))
    elif layout == "assembled":
        dit_file = directory / "auk.safetensors"
        config = {
            "model_type": "auk",
            "name": name,
            "dit": {k: v for k, v in dit_config.items() if k != "latent_dim"},
            "vae": {
                **({"codec": HARMONIC_NOISE} if harmonic else {}),
                "latent_dim": dit_config["latent_dim"],
                "downsample_rate": vae.hop_size,
                "target_sample_rate": vae.sample_rate,
                "model_init_kwargs": vae_config,
            },
            "variant": variant,
            "flash_t_grid": list(FLASH_T_GRID),
            "defaults": defaults or dict(BASE_DEFAULTS),
        }
        if text_encoder:
            config["text_encoder"] = text_encoder
        if capabilities:
            config["capabilities"] = capabilities
        (directory / "config.json").write_text(json.dumps(config, indent=1))
    else:
        raise ValueError(f"layout must be 'release' or 'assembled', not {layout!r}")
    save_file(as_saved(dit_tensors), str(dit_file))
    save_file(vae_tensors, str(directory / "vae.safetensors"))
    return directory
