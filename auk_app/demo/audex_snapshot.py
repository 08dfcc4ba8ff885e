"""The Audex demo snapshots, in the real on-disk layout.

:func:`shared_demo_snapshot` is what the app serves without the released weights: Audex-Tiny
(``assets/Audex-Tiny``), a small thinker trained here (``training/train_audex.py``) over the
event codec (:mod:`auk_app.demo.event_codec`), loaded by the release's code. :func:`write_demo_snapshot`
writes a tiny, random, *untrained* snapshot with a random XCodec1 (``XcodecModel``): the mechanics
tests run the release's own codec class on it. Its sound is noise by design. Layout, as in
``nvidia/Nemotron-Labs-Audex-2B`` plus an XCodec1 snapshot::

    <dir>/audex/config.json                                     root manifest
    <dir>/audex/checkpoint_folder_audiogen/config.json          nemotron_dense config
    <dir>/audex/checkpoint_folder_audiogen/tokenizer.json, tokenizer_config.json
    <dir>/audex/checkpoint_folder_audiogen/model.safetensors.index.json   -> the shard below
    <dir>/audex/checkpoint_folder_full/model-00001-of-00002.safetensors   LM weights (bf16)
    <dir>/xcodec/config.json, model.safetensors                 tiny XcodecConfig (fp32)

The tokenizer is a word-level one with every marker, ``<unk>``, all 8192 ``<audiocodec_N>`` and
a small English word list (other words become ``<unk>``). The LM vocabulary is padded past the
tokenizer, like the real 205312 rows for 204805 tokens, so padding ids exist and must be masked.
Weights are drawn from a seeded ``torch.Generator`` over shapes taken from meta-device models:
deterministic, instant, and the global RNG is untouched.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers

from auk_app import transformers_import

with transformers_import.LOCK:
    from transformers import ArceeForCausalLM, PreTrainedTokenizerFast, XcodecConfig, XcodecModel

from auk_app.audex.thinker import arcee_config
from auk_app.audex.tta import AUDEX_AUDIOCODEC_VOCAB_SIZE
from auk_app.resolve import AUDEX_AUDIOGEN_DIR, AUDEX_FULL_DIR, AUDEX_SHARD, WEIGHT_INDEX

SHARD_NAME = AUDEX_SHARD  # the real index names shard 1 of the full folder
_CHAT_MARKERS = ("<|im_start|>", "<|im_end|>", "<|text to audio|>", "<think>", "</think>")
_WORDS = (
    "system user assistant you are a an the helpful and harmless not allowed to use any tools "
    "generate audio for this caption of in on at with while from into through by as during near "
    "rain falling tin roof heavy light dog barking distance birds chirp chirping ocean waves crashing "
    "rocky shore crackling campfire night crickets thunder rumbling storm steam train whistle blowing "
    "it departs wind chimes ringing gentle breeze footsteps crunching fresh snow water running stream "
    "river car engine passing street traffic people talking crowd cheering applause music piano guitar "
    "drum bell door closing opening knock clock ticking phone typing keyboard baby crying laughing "
    "cat meowing horse galloping cow rooster bee buzzing fire alarm siren helicopter airplane flying "
    "motorcycle boat horn glass breaking metal hammer wood saw quiet loud soft distant close slowly "
    "fast background outside inside room forest city kitchen morning evening small large old "
    "is are then two three many some his her their its one"
).split()
PUNCTUATION = (".", ",", "!", "?", "'", "-", ":", ";", "(", ")")


def thinker_config(*, hidden_size: int, intermediate_size: int, layers: int, heads: int, kv_heads: int,
                   rope_theta: float, vocab_size: int) -> dict:
    """A tiny thinker's config.json in the release's nemotron_dense fields (the real 2B: 2048 / 9216 /
    28 / 16 / 8, head_dim 128). head_dim is 64 because vLLM's CPU attention refuses smaller heads,
    and the engine tests serve these snapshots with vLLM."""
    return {
        "architectures": ["NemotronDenseForCausalLM"],
        "model_type": "nemotron_dense",
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": 64,
        "hidden_act": "relu2",
        "norm_eps": 1e-5,
        "rope_parameters": {"rope_type": "default", "rope_theta": rope_theta, "partial_rotary_factor": 1.0},
        "max_position_embeddings": 8192,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": vocab_size,
    }


# Tiny XCodec1: real hop (8·5·4·2 = 320), rate and codebooks (8 x 1024, 4 used); narrow channels.
_XCODEC_CONFIG = {
    "sample_rate": 16000,
    "codebook_size": 1024,
    "target_bandwidths": [0.5, 1, 1.5, 2, 4],
    "acoustic_model_config": {
        "encoder_hidden_size": 4,
        "decoder_hidden_size": 16,
        "hidden_size": 8,
        "downsampling_ratios": [8, 5, 4, 2],
        "upsampling_ratios": [8, 5, 4, 2],
    },
    "semantic_model_config": {
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "conv_dim": [8] * 7,
        "num_conv_pos_embeddings": 16,
        "num_conv_pos_embedding_groups": 2,
    },
}

# Random weights put the decoder's output near std 5; this gain on its last conv brings the demo
# noise down to about std 0.09, peaks near −7 dBFS, so nothing clips at full scale.
_OUTPUT_GAIN = 0.015


@dataclass(frozen=True)
class DemoSnapshot:
    """Where the demo files were written; pass ``audex_root`` and ``xcodec_dir`` to the pipeline."""

    audex_root: Path
    thinker_dir: Path
    xcodec_dir: Path


def _tokenizer() -> PreTrainedTokenizerFast:
    specials = ["<unk>", "<s>", "</s>", *_CHAT_MARKERS]
    plain = list(dict.fromkeys(_WORDS)) + list(PUNCTUATION)
    codecs = [f"<audiocodec_{n}>" for n in range(AUDEX_AUDIOCODEC_VOCAB_SIZE)]
    # Real order: base text vocab, then <audiogen_start>/<audiogen_end>, then the codec block.
    names = specials + plain + ["<audiogen_start>", "<audiogen_end>"] + codecs
    backend = Tokenizer(models.WordLevel({name: i for i, name in enumerate(names)}, unk_token="<unk>"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.add_special_tokens(
        [AddedToken(name, special=True, normalized=False) for name in names if name.startswith("<")]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="<|im_end|>", pad_token="<unk>"
    )


def _fill(name: str, shape: torch.Size, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """A deterministic value for one parameter: unit gains, zero biases, scaled normal matrices."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf == "bias":
        return torch.zeros(shape, dtype=dtype)
    if leaf in ("alpha", "inited", "cluster_size", "original0") or "norm" in name:
        return torch.ones(shape, dtype=dtype)
    fan_in = math.prod(shape[1:]) if len(shape) > 1 else 1
    return (torch.randn(shape, generator=generator) / math.sqrt(fan_in)).to(dtype)


def _random_state(module: torch.nn.Module, generator: torch.Generator, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    return {name: _fill(name, t.shape, dtype, generator) for name, t in module.state_dict().items()}


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def snapshot_paths(directory: str | Path) -> DemoSnapshot:
    """Where a demo snapshot under ``directory`` keeps its parts."""
    directory = Path(directory)
    return DemoSnapshot(directory / "audex", directory / "audex" / AUDEX_AUDIOGEN_DIR, directory / "xcodec")


AUDEX_TINY_DIR = Path(__file__).resolve().parents[2] / "assets" / "Audex-Tiny"


def shared_demo_snapshot() -> DemoSnapshot:
    """Audex-Tiny, the trained demo snapshot shipped in ``assets/Audex-Tiny``: what the app serves
    without the released weights (in process or on a vLLM server)."""
    return snapshot_paths(AUDEX_TINY_DIR)


def write_demo_snapshot(directory: str | Path, *, seed: int = 0) -> DemoSnapshot:
    """Write (or overwrite) the demo snapshot under ``directory``; same seed, same bytes."""
    paths = snapshot_paths(directory)
    audex_root, thinker_dir, xcodec_dir = paths.audex_root, paths.thinker_dir, paths.xcodec_dir
    full_dir = audex_root / AUDEX_FULL_DIR
    for folder in (thinker_dir, full_dir, xcodec_dir):
        folder.mkdir(parents=True, exist_ok=True)
    generator = torch.Generator("cpu").manual_seed(seed)

    tokenizer = _tokenizer()
    tokenizer.save_pretrained(str(thinker_dir))
    tokenizer_size = len(tokenizer.get_vocab())
    config = thinker_config(hidden_size=64, intermediate_size=128, layers=2, heads=4, kv_heads=2, rope_theta=1e8,
                            vocab_size=(tokenizer_size // 128 + 1) * 128)  # > tokenizer: padding rows
    _write_json(thinker_dir / "config.json", config)
    _write_json(audex_root / "config.json", {"model_type": "nemotron_labs_audex", "demo": True})
    with torch.device("meta"):
        lm = ArceeForCausalLM(arcee_config(config, source="demo config"))
    lm_state = _random_state(lm, generator, torch.bfloat16)
    save_file(lm_state, str(full_dir / SHARD_NAME), metadata={"format": "pt"})
    _write_json(
        thinker_dir / WEIGHT_INDEX,
        {
            "metadata": {"total_size": sum(t.numel() * t.element_size() for t in lm_state.values())},
            "weight_map": {key: SHARD_NAME for key in lm_state},
        },
    )

    codec_config = XcodecConfig(**_XCODEC_CONFIG)
    codec_config.to_json_file(str(xcodec_dir / "config.json"))
    with torch.device("meta"):
        codec = XcodecModel(codec_config)
    codec_state = _random_state(codec, generator, torch.float32)
    codec_state["acoustic_decoder.conv2.weight"] *= _OUTPUT_GAIN
    save_file(codec_state, str(xcodec_dir / "model.safetensors"), metadata={"format": "pt"})
    return paths
