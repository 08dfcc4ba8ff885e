"""A tiny random Qwen2.5-Omni snapshot in the file layout of ``Qwen/Qwen2.5-Omni-3B``.

What a real snapshot holds, mirrored at toy size (text width 32, 4 decoder layers):

* ``config.json``: the composite ``qwen2_5_omni`` config whose ``thinker_config`` carries the
  text, audio and vision sub-configs (the talker and token2wav sections are stubs: nothing
  reads them).
* ``model.safetensors.index.json`` and two shards with the checkpoint's key layout:
  ``thinker.model.*`` (text decoder), ``thinker.audio_tower.*``, ``thinker.visual.*``,
  ``thinker.lm_head.weight``, plus ``talker.*`` and ``token2wav.*`` tensors; the second shard
  holds nothing the thinker reads. Vision, talker, token2wav and lm_head weights are present
  so a test can prove the loader leaves them on disk.
* ``vocab.json``, ``merges.txt``, ``tokenizer.json`` and ``tokenizer_config.json``: a byte-level
  BPE (the 256 byte symbols and a few merges) followed by the Qwen special tokens in their real
  order, with the processor's ``*_token`` names in the tokenizer config.
* ``preprocessor_config.json``: the Whisper feature extractor (128 mel bins, 16 kHz, hop 160)
  and the Qwen2-VL image processor in one flat file, as the release ships them. ``chunk_length``
  is 30 s instead of the release's 300 s: every clip is padded to that length, and 30 s keeps
  the log-mel of a test clip at ~0.2 s of CPU (300 s takes ~1 s).

No ``chat_template.json`` is written: the conditioner renders the prompt itself.
Everything is seeded, so two calls write identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers.models import BPE
from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

# The ids follow the byte symbols and merges, in the release's order (151643 + i there).
SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_bos|>", "<|vision_eos|>",
    "<|vision_pad|>", "<|IMAGE|>", "<|VIDEO|>",
)
MERGES = (("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("o", "u"))
TEXT_LAYERS = 4
TEXT_HIDDEN = 32
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")


def _vocab() -> dict[str, int]:
    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    symbols += [left + right for left, right in MERGES]
    return {symbol: i for i, symbol in enumerate(symbols)}


def _token_ids() -> dict[str, int]:
    base = len(_vocab())
    return {token: base + i for i, token in enumerate(SPECIAL_TOKENS)}


def _tiny_thinker_config() -> Qwen2_5OmniThinkerConfig:
    """Thinker config at toy size; head width 8, so the M-RoPE sections [2, 1, 1] sum to 8 / 2."""
    ids = _token_ids()
    text = dict(
        vocab_size=len(_vocab()) + len(SPECIAL_TOKENS), hidden_size=TEXT_HIDDEN, intermediate_size=64,
        num_hidden_layers=TEXT_LAYERS, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=1024, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 1, 1]},
    )
    audio = dict(
        num_mel_bins=128, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=32, d_model=16,
        output_dim=TEXT_HIDDEN, n_window=100, max_source_positions=1500,
    )
    vision = dict(
        depth=2, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=TEXT_HIDDEN,
        fullatt_block_indexes=[1],
    )
    return Qwen2_5OmniThinkerConfig(
        text_config=text, audio_config=audio, vision_config=vision,
        audio_token_index=ids["<|AUDIO|>"], image_token_index=ids["<|IMAGE|>"],
        video_token_index=ids["<|VIDEO|>"], audio_start_token_id=ids["<|audio_bos|>"],
        audio_end_token_id=ids["<|audio_eos|>"], user_token_id=_vocab()["u"],
        # Fields the release's thinker_config carries beyond the class defaults; the M-RoPE
        # position builder reads vision_start_token_id even for audio-only prompts.
        vision_start_token_id=ids["<|vision_bos|>"], vision_end_token_id=ids["<|vision_eos|>"],
        vision_token_id=ids["<|vision_pad|>"], bos_token_id=ids["<|im_start|>"],
        eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
    )


def _checkpoint_key(key: str) -> str:
    """transformers' module path → the release's key (the inverse of its load-time renaming)."""
    if key.startswith("model.language_model."):
        return "thinker.model." + key.removeprefix("model.language_model.")
    if key.startswith("model."):
        return "thinker." + key.removeprefix("model.")
    return "thinker." + key


def _write_weights(directory: Path, config: Qwen2_5OmniThinkerConfig) -> None:
    with torch.random.fork_rng():  # seeded, without touching the caller's global RNG
        torch.manual_seed(0)
        thinker = Qwen2_5OmniThinkerForConditionalGeneration(config)
        speech = {  # a few stand-ins for the talker and the code-to-wave decoder
            "talker.model.embed_tokens.weight": torch.randn(16, 8),
            "talker.thinker_to_talker_proj.weight": torch.randn(8, TEXT_HIDDEN),
            "talker.codec_head.weight": torch.randn(16, 8),
            "token2wav.code2wav_dit_model.input_embed.proj.weight": torch.randn(8, 8),
            "token2wav.code2wav_bigvgan_model.conv_pre.weight": torch.randn(8, 4, 7),
        }
    thinker_tensors = {_checkpoint_key(k): v.contiguous() for k, v in thinker.state_dict().items()}
    save_file(thinker_tensors, str(directory / SHARDS[0]), metadata={"format": "pt"})
    save_file(speech, str(directory / SHARDS[1]), metadata={"format": "pt"})
    weight_map = {key: SHARDS[0] for key in thinker_tensors} | {key: SHARDS[1] for key in speech}
    total = sum(t.numel() * t.element_size() for t in (*thinker_tensors.values(), *speech.values()))
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def _write_tokenizer(directory: Path) -> None:
    vocab = _vocab()
    tokenizer = Tokenizer(BPE(vocab=vocab, merges=list(MERGES), continuing_subword_prefix="", end_of_word_suffix=""))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    merges = "#version: 0.2\n" + "".join(f"{left} {right}\n" for left, right in MERGES)
    (directory / "merges.txt").write_text(merges, encoding="utf-8")
    added = {
        str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                 "special": True}
        for t, i in _token_ids().items()
    }
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "processor_class": "Qwen2_5OmniProcessor",
        "added_tokens_decoder": added,
        "additional_special_tokens": list(SPECIAL_TOKENS[1:]),
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "audio_token": "<|AUDIO|>",
        "audio_bos_token": "<|audio_bos|>",
        "audio_eos_token": "<|audio_eos|>",
        "image_token": "<|IMAGE|>",
        "video_token": "<|VIDEO|>",
        "vision_bos_token": "<|vision_bos|>",
        "vision_eos_token": "<|vision_eos|>",
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "model_max_length": 32768,
        "split_special_tokens": False,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))


def _write_preprocessor(directory: Path) -> None:
    chunk_length = 30
    config = {
        "processor_class": "Qwen2_5OmniProcessor",
        "feature_extractor_type": "WhisperFeatureExtractor",
        "feature_size": 128,
        "sampling_rate": 16000,
        "hop_length": 160,
        "n_fft": 400,
        "chunk_length": chunk_length,
        "n_samples": chunk_length * 16000,
        "nb_max_frames": chunk_length * 16000 // 160,
        "padding_side": "right",
        "padding_value": 0.0,
        "dither": 0.0,
        "return_attention_mask": True,
        "image_processor_type": "Qwen2VLImageProcessor",
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711],
        "min_pixels": 3136,
        "max_pixels": 12845056,
        "patch_size": 14,
        "temporal_patch_size": 2,
        "merge_size": 2,
    }
    (directory / "preprocessor_config.json").write_text(json.dumps(config, indent=2))


def write_tiny_qwen_snapshot(directory: str | Path) -> Path:
    """Write the snapshot into ``directory`` (created if needed) and return its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    thinker_config = _tiny_thinker_config()
    config = {
        "architectures": ["Qwen2_5OmniModel"],
        "model_type": "qwen2_5_omni",
        "enable_audio_output": True,
        "thinker_config": thinker_config.to_dict(),
        "talker_config": {"model_type": "qwen2_5_omni_talker"},
        "token2wav_config": {"model_type": "qwen2_5_omni_token2wav"},
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    _write_weights(directory, thinker_config)
    _write_tokenizer(directory)
    _write_preprocessor(directory)
    return directory
