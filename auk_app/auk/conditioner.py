"""Text conditioning: encoder hidden states of every layer fused into one AuK condition.

Released AuK reads Qwen2.5-Omni-3B's 36 decoder layers (see :mod:`auk_app.auk.qwen`); the
embedded demo model reads all-MiniLM-L6-v2's 6 layers (:mod:`auk_app.demo.minilm`) through the
same interface, both found by kind in :mod:`auk_app.auk.registry`. Fusion is
ELMo-style: ``layer_scale · Σ_l softmax(layer_weights)_l · LN(h_l)``, with an affine-free
LayerNorm (eps 1e-5) in float32; the fusion tensors come from the AuK checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F

from auk_app.auk import registry
from auk_app.auk.configs import TextEncoderConfig
from auk_app.errors import CheckpointError


def fuse_hidden_states(layers: Sequence[torch.Tensor], layer_weights: torch.Tensor, layer_scale: torch.Tensor) -> torch.Tensor:
    """[b, nt, D] per layer → fused [b, nt, D] in float32."""
    if len(layers) != layer_weights.numel():
        raise CheckpointError(
            f"The text encoder has {len(layers)} layers but the AuK checkpoint fuses {layer_weights.numel()}; "
            "the checkpoint and the text encoder do not belong together."
        )
    weights = torch.softmax(layer_weights.float(), dim=0)
    fused = 0
    for weight, hidden in zip(weights, layers):
        hidden = hidden.float()
        fused = fused + weight * F.layer_norm(hidden, hidden.shape[-1:], eps=1e-5)
    return layer_scale.float() * fused


class TextConditioner(Protocol):
    model: torch.nn.Module  # what the pipeline moves between devices
    hidden_size: int

    def hidden_states(self, instruction: str, audio_16k: np.ndarray | None) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Per-layer hidden states (each [1, nt, D]) and the bool text mask [1, nt]."""


def instruction_reader(encoder: TextEncoderConfig, locate: Callable[[], str | Path | None],
                       ) -> Callable[[str], str | None] | None:
    """``problem(instruction)`` for an encoder whose positions an instruction within the character
    limit can outrun (the demo's MiniLM reads 512 tokens; Qwen2.5-Omni 32,768, which 1,000 characters
    never reach): the sentence, or None. None where the encoder has no such limit; ``locate()`` gives
    the encoder's folder, asked only where there is a reader to load."""
    reader = getattr(registry.text_encoder_class(encoder.kind), "instruction_reader", None)
    return None if reader is None else reader(locate())


def load_conditioner(
    encoder: TextEncoderConfig | str, path: str | Path | None, *, device="cpu", dtype=torch.float32
) -> TextConditioner:
    """The conditioner a checkpoint's ``text_encoder`` (or its kind) names, through :mod:`auk_app.auk.registry`."""
    kind = encoder if isinstance(encoder, str) else encoder.kind
    return registry.text_encoder_class(kind).from_pretrained(path, device=device, dtype=dtype)
