"""Qwen2.5-Omni-3B thinker: instruction (+ clip) → the per-layer hidden states AuK fuses.

Legend: nt prompt tokens (audio tokens included), D text width (2048), L decoder layers (36).

The snapshot is the plain ``Qwen/Qwen2.5-Omni-3B`` download (thinker, talker and token2wav
shards, tokenizer, preprocessor config). Only the thinker's text decoder and audio tower are
built: transformers' own classes, each narrowed by a small subclass, with no remote code.

* Thinker: ``Qwen2_5OmniThinkerForConditionalGeneration`` always constructs its vision tower
  (~0.67 B parameters at 3B) and a 151936 × 2048 lm_head (0.31 B). ``from_pretrained`` builds
  the module on the meta device, and the subclass drops both right there, before any weight is
  read; their checkpoint tensors then have no destination and stay on disk, as do ``talker.*``
  and ``token2wav.*``. The forward calls the inner model, which ends at the final RMSNorm, so
  no logits are ever computed.
* Processor: ``Qwen2_5OmniProcessor`` insists on its image and video processors, and in
  transformers 5.24 the video processor needs torchvision, which this app does not install.
  The subclass keeps the feature extractor and tokenizer, the only two the audio and text path
  touches; tokenising and the ``<|AUDIO|>`` expansion are transformers' code unchanged.

The prompt is rendered here, as upstream AuK's processor renders it, not by the snapshot's chat
template, so a template edit upstream cannot silently change the condition.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import torch
from auk_app import transformers_import

with transformers_import.LOCK:
    from transformers import (
        BatchFeature,
        Qwen2_5OmniProcessor,
        Qwen2_5OmniThinkerConfig,
        Qwen2_5OmniThinkerForConditionalGeneration,
        Qwen2Tokenizer,
        WhisperFeatureExtractor,
    )
    from transformers.processing_utils import OmniModalProcessorMixin

from auk_app.errors import CheckpointError, InputError
from auk_app.resolve import QWEN_OMNI_FILES, WEIGHT_INDEX
from auk_app.validate import plain_text
from auk_app.weights import mismatch

SYSTEM_PROMPT = "You are a helpful assistant."
AUDIO_TOKEN = "<|AUDIO|>"  # the placeholder the processor expands to one token per 40 ms
AUDIO_PART = f"<|audio_bos|>{AUDIO_TOKEN}<|audio_eos|>"
NO_AUDIO_MARKER = "|<no_prompt_audio>|"  # AuK was trained with it on text-only requests
DOWNLOAD_HINT = "hf download Qwen/Qwen2.5-Omni-3B --local-dir {directory}"
# Modules the thinker builds and this conditioner removes; their checkpoint tensors stay on disk.
# (talker.* and token2wav.* are skipped by transformers' own thinker model.)
DROPPED_MODULES = ("model.visual", "lm_head")


class _AudioTextThinker(Qwen2_5OmniThinkerForConditionalGeneration):
    """The thinker without its vision tower and without lm_head weights."""

    _keys_to_ignore_on_load_unexpected = [rf"^{re.escape(name)}\." for name in DROPPED_MODULES]
    _tied_weights_keys = None  # lm_head is gone, so there is nothing to tie to the embeddings

    def __init__(self, config: Qwen2_5OmniThinkerConfig):
        super().__init__(config)
        self.model.visual = None  # as upstream AuK does after loading; here before loading
        self.lm_head = torch.nn.Identity()

    @classmethod
    def is_custom_code(cls) -> bool:
        # transformers treats every class outside its package as custom code and then skips the
        # release's key renaming (thinker.model.* → model.language_model.*, ...). This subclass
        # only removes modules, so the thinker's own renaming is the right one.
        return False


class _AudioTextProcessor(Qwen2_5OmniProcessor):
    """Qwen2_5OmniProcessor holding only the Whisper feature extractor and the tokenizer."""

    def __init__(self, feature_extractor: WhisperFeatureExtractor, tokenizer: Qwen2Tokenizer):
        OmniModalProcessorMixin.__init__(self, feature_extractor, tokenizer)
        # The placeholder the prompt is rendered with, so the two cannot disagree.
        self.audio_token = AUDIO_TOKEN
        self.audio_token_id = tokenizer.convert_tokens_to_ids(AUDIO_TOKEN)


def _check_snapshot(directory: Path) -> None:
    """Raise one CheckpointError naming every file the conditioner needs but cannot find."""
    hint = DOWNLOAD_HINT.format(directory=directory)
    if not directory.is_dir():
        raise CheckpointError(f"The Qwen2.5-Omni-3B snapshot folder {directory} does not exist; get it with `{hint}`.")
    missing = [name for name in QWEN_OMNI_FILES if not (directory / name).is_file()]
    if not (directory / "tokenizer.json").is_file() and not (
        (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file()
    ):
        missing.append("tokenizer.json (or vocab.json and merges.txt)")
    index = directory / WEIGHT_INDEX
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, AttributeError) as exc:
            raise CheckpointError(f"{index} is not a weight index ({exc}); download it again with `{hint}`.") from exc
        missing += [shard for shard in shards if not (directory / shard).is_file()]
    elif not (directory / "model.safetensors").is_file():
        missing.append(WEIGHT_INDEX)
    if missing:
        raise CheckpointError(
            f"The Qwen2.5-Omni-3B snapshot in {directory} lacks {', '.join(missing)}. "
            f"Download the complete snapshot with `{hint}`."
        )


def _thinker_config(directory: Path) -> Qwen2_5OmniThinkerConfig:
    """The ``thinker_config`` section of the composite config.json (talker and token2wav unread)."""
    try:
        config = json.loads((directory / "config.json").read_text())
    except ValueError as exc:
        raise CheckpointError(f"{directory / 'config.json'} is not valid JSON ({exc}).") from exc
    if not isinstance(config, dict) or not isinstance(config.get("thinker_config"), dict):
        raise CheckpointError(
            f"{directory / 'config.json'} has no thinker_config section, so it is not a Qwen2.5-Omni config. "
            f"Download the text encoder with `{DOWNLOAD_HINT.format(directory=directory)}`."
        )
    return Qwen2_5OmniThinkerConfig.from_dict(config["thinker_config"])


def _check_loading_info(info: dict, directory: Path) -> None:
    """A strict load: transformers only warns about weights it could not place, and would run
    the thinker with randomly initialised ones."""
    missing, unexpected, wrong = info["missing_keys"], info["unexpected_keys"], info["mismatched_keys"]
    if missing or unexpected or wrong:
        raise mismatch(directory, "Qwen2.5-Omni-3B thinker", missing=missing, unexpected=unexpected, wrong=wrong,
                       fix=f"Download the snapshot again with `{DOWNLOAD_HINT.format(directory=directory)}`.")


class QwenConditioner:
    """Qwen2.5-Omni-3B thinker + processor → per-layer hidden states for AuK's fused text condition.

    ``hidden_size`` is the text decoder's width (2048); the fusion of its 36 layers is
    :func:`auk_app.auk.conditioner.fuse_hidden_states`.
    """

    def __init__(self, thinker: _AudioTextThinker, processor: _AudioTextProcessor):
        self.model = thinker
        self.processor = processor
        self.hidden_size = thinker.config.get_text_config().hidden_size

    @classmethod
    def from_pretrained(cls, snapshot_dir: str | Path | None, *, device="cpu", dtype=torch.float32) -> QwenConditioner:
        """Load from a local snapshot folder; nothing is downloaded.

        Weights are read on the CPU in ``dtype`` and then moved to ``device`` (a direct load onto
        the GPU needs ``accelerate``, which the app does not install). What stays resident is the
        text decoder and audio tower, ~3.7 B parameters: ~7.4 GB in bf16, ~15 GB in float32.
        """
        if snapshot_dir is None:
            raise CheckpointError("The Qwen2.5-Omni-3B text encoder was not found.")
        directory = Path(snapshot_dir)
        _check_snapshot(directory)
        config = _thinker_config(directory)
        # Named classes rather than AutoTokenizer, which would parse config.json once more and
        # build (and warn about) the talker config just to learn the model type.
        processor = _AudioTextProcessor(
            feature_extractor=WhisperFeatureExtractor.from_pretrained(directory, local_files_only=True),
            tokenizer=Qwen2Tokenizer.from_pretrained(directory, local_files_only=True),
        )
        if processor.audio_token_id != config.audio_token_id:
            raise CheckpointError(
                f"The tokenizer in {directory} gives {AUDIO_TOKEN} the id {processor.audio_token_id}, but the "
                f"thinker config expects {config.audio_token_id}; tokenizer and weights come from different models."
            )
        thinker, info = _AudioTextThinker.from_pretrained(
            directory, config=config, dtype=dtype, local_files_only=True, output_loading_info=True
        )
        _check_loading_info(info, directory)
        return cls(thinker.to(device).eval(), processor)

    def render_prompt(self, instruction: str, *, with_audio: bool) -> str:
        """The ChatML turn upstream AuK renders (a system line, the user's, the assistant's opening),
        character for character.

        With a clip the audio placeholder follows the instruction; without one
        ``|<no_prompt_audio>|`` is appended with no space, unless the instruction already holds it.
        Special tokens typed into the instruction are removed first (they would rewrite the turn).
        """
        instruction = plain_text(instruction, self.processor.tokenizer, "instruction", "the edit or the sound")
        if with_audio:
            user = instruction + AUDIO_PART
        else:
            user = instruction if NO_AUDIO_MARKER in instruction else instruction + NO_AUDIO_MARKER
        return (
            f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n"
            f"<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )

    def prepare_inputs(self, instruction: str, audio_16k: np.ndarray | None) -> BatchFeature:
        """Processor output for one request, on the CPU.

        ``input_ids`` and ``attention_mask`` are [1, nt]. With a clip, the single ``<|AUDIO|>``
        becomes N audio tokens for L valid mel frames (hop 160, so 100 frames/s):
        N = ⌊(⌊(L−1)/2⌋ + 1 − 2)/2⌋ + 1, i.e. 25 tokens/s; ``input_features`` [1, 128, frames]
        is padded to the feature extractor's chunk_length (300 s in the release) and
        ``feature_attention_mask`` marks the valid frames.
        """
        prompt = self.render_prompt(instruction, with_audio=audio_16k is not None)
        if audio_16k is None:
            return self.processor(text=[prompt], return_tensors="pt")
        audio = np.asarray(audio_16k, dtype=np.float32)
        if audio.ndim != 1:
            raise InputError(f"The text encoder takes a mono clip as a 1-D array; got shape {audio.shape}.")
        # The log-mel is float32 torch work on the CPU: a CPU autocast around the request would make
        # it bf16 (which its numpy hand-off rejects); upstream's CUDA autocast never reaches it.
        with torch.autocast("cpu", enabled=False):
            inputs = self.processor(text=[prompt], audio=[audio], return_tensors="pt")
        if not (inputs["input_ids"] == self.processor.audio_token_id).any():
            # 3 mel frames (321 samples) are the least that leave one token after the two stride-2 steps.
            raise InputError(
                f"The clip has {audio.size} samples at 16 kHz; the text encoder needs at least 321 (about 20 ms)."
            )
        return inputs

    @torch.no_grad()
    def hidden_states(self, instruction: str, audio_16k: np.ndarray | None) -> tuple[list[torch.Tensor], torch.Tensor]:
        """hidden_states[1..L] (each [1, nt, D]) and the bool text mask [1, nt].

        Index 0 (the embeddings, with the audio features spliced in) is left out; the last entry
        is the output of layer L after the final RMSNorm, as transformers returns it. Gradients
        are off rather than inference mode, so the fusion may combine these tensors with
        checkpoint parameters outside any no-grad block.
        """
        # The float32 log-mel is cast to the weights' dtype by the audio tower itself.
        inputs = self.prepare_inputs(instruction, audio_16k).to(self.model.device)
        # The inner model stops at the final norm; with use_cache=False no KV cache is built
        # and the M-RoPE positions are recomputed from input_ids on every call.
        outputs = self.model.model(**inputs, output_hidden_states=True, use_cache=False, return_dict=True)
        return list(outputs.hidden_states[1:]), inputs["attention_mask"].bool()
