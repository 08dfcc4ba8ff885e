"""QwenConditioner on a tiny random snapshot in the release's file layout (tests/qwen_snapshot.py).

Every load goes through ``QwenConditioner.from_pretrained``, the path the real snapshot takes.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

from auk_app.auk.conditioner import fuse_hidden_states
from auk_app.auk.qwen import AUDIO_TOKEN, QwenConditioner
from auk_app.errors import CheckpointError, InputError
from tests.qwen_snapshot import SHARDS, TEXT_HIDDEN, TEXT_LAYERS, write_tiny_qwen_snapshot

INSTRUCTION = "Make the speaker sound happier"


def _clip(seconds: float, seed: int = 0) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(round(seconds * 16000))).astype(np.float32)


def _copy(qwen_snapshot, tmp_path):
    return shutil.copytree(qwen_snapshot, tmp_path / "qwen_snapshot")


def _edit_config(directory, **thinker_fields):
    config = json.loads((directory / "config.json").read_text())
    config["thinker_config"].update(thinker_fields)
    (directory / "config.json").write_text(json.dumps(config))


def _audio_tokens(qwen_conditioner, inputs) -> int:
    return int((inputs["input_ids"] == qwen_conditioner.processor.audio_token_id).sum())


# --- prompt -------------------------------------------------------------------------------------


def test_prompt_with_audio_is_the_chatml_turn(qwen_conditioner):
    assert qwen_conditioner.render_prompt(INSTRUCTION, with_audio=True) == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nMake the speaker sound happier<|audio_bos|><|AUDIO|><|audio_eos|><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_prompt_without_audio_appends_the_marker_once(qwen_conditioner):
    want = (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nMake the speaker sound happier|<no_prompt_audio>|<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert qwen_conditioner.render_prompt(INSTRUCTION, with_audio=False) == want
    assert qwen_conditioner.render_prompt(INSTRUCTION + "|<no_prompt_audio>|", with_audio=False) == want


def test_the_rendered_prompt_is_what_gets_tokenised(qwen_conditioner):
    decode = qwen_conditioner.processor.tokenizer.decode
    text_only = qwen_conditioner.prepare_inputs(INSTRUCTION, None)
    assert decode(text_only["input_ids"][0]) == qwen_conditioner.render_prompt(INSTRUCTION, with_audio=False)
    with_audio = qwen_conditioner.prepare_inputs(INSTRUCTION, _clip(1.0))
    expanded = qwen_conditioner.render_prompt(INSTRUCTION, with_audio=True).replace("<|AUDIO|>", "<|AUDIO|>" * 25)
    assert decode(with_audio["input_ids"][0]) == expanded


def test_special_tokens_typed_into_the_instruction_cannot_rewrite_the_prompt(qwen_conditioner):
    tokenizer = qwen_conditioner.processor.tokenizer
    added = "".join(tokenizer.get_added_vocab())
    hostile = " ".join(word + added for word in INSTRUCTION.split(" "))
    assert AUDIO_TOKEN in added and "<|im_end|>" in added  # the test would see them if they got through
    for audio in (None, np.zeros(16_000, np.float32)):
        plain, typed = (qwen_conditioner.prepare_inputs(text, audio)["input_ids"] for text in (INSTRUCTION, hostile))
        assert typed.tolist() == plain.tolist()


# --- audio placeholder --------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "n_tokens"), [(1.0, 25), (2.0, 50)])
def test_audio_placeholder_expands_to_25_tokens_per_second(qwen_conditioner, seconds, n_tokens):
    inputs = qwen_conditioner.prepare_inputs(INSTRUCTION, _clip(seconds))
    n_frames = int(inputs["feature_attention_mask"].sum())  # hop 160 at 16 kHz: 100 frames/s
    assert n_frames == round(100 * seconds)
    assert ((n_frames - 1) // 2 + 1 - 2) // 2 + 1 == n_tokens  # the processor's two stride-2 steps
    assert _audio_tokens(qwen_conditioner, inputs) == n_tokens
    ids = inputs["input_ids"][0].tolist()
    bos = ids.index(qwen_conditioner.processor.tokenizer.convert_tokens_to_ids("<|audio_bos|>"))
    assert ids[bos + 1 : bos + 1 + n_tokens] == [qwen_conditioner.processor.audio_token_id] * n_tokens
    assert inputs["input_features"].shape[:2] == (1, 128)


def test_clip_too_short_for_one_audio_token_is_refused(qwen_conditioner):
    # 321 samples are 3 mel frames, the fewest that survive both stride-2 steps as one token.
    assert _audio_tokens(qwen_conditioner, qwen_conditioner.prepare_inputs(INSTRUCTION, np.zeros(321, np.float32))) == 1
    with pytest.raises(InputError, match="321"):
        qwen_conditioner.prepare_inputs(INSTRUCTION, np.zeros(320, np.float32))


def test_multichannel_clip_is_refused(qwen_conditioner):
    with pytest.raises(InputError, match="mono"):
        qwen_conditioner.prepare_inputs(INSTRUCTION, np.zeros((2, 16000), np.float32))


# --- hidden states ------------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [None, 1.0])
def test_hidden_states_are_one_per_decoder_layer(qwen_conditioner, seconds):
    audio = None if seconds is None else _clip(seconds)
    n_tokens = qwen_conditioner.prepare_inputs(INSTRUCTION, audio)["input_ids"].shape[1]
    layers, mask = qwen_conditioner.hidden_states(INSTRUCTION, audio)
    assert qwen_conditioner.hidden_size == TEXT_HIDDEN
    assert len(layers) == TEXT_LAYERS
    assert all(h.shape == (1, n_tokens, TEXT_HIDDEN) and h.dtype == torch.float32 for h in layers)
    assert mask.dtype == torch.bool and mask.shape == (1, n_tokens) and bool(mask.all())


def test_last_hidden_state_is_after_the_final_rms_norm(qwen_conditioner):
    layers, _ = qwen_conditioner.hidden_states(INSTRUCTION, _clip(1.0))
    weight = qwen_conditioner.model.model.language_model.norm.weight
    # RMSNorm output divided by its weight has unit RMS per token, short of 1 only by eps 1e-6
    # against the token's mean square (0.998 at worst here); the layer outputs before the norm
    # have an RMS of at most ~0.1 in this random model.
    unit = (layers[-1] / weight).pow(2).mean(-1).sqrt()
    torch.testing.assert_close(unit, torch.ones_like(unit), rtol=0, atol=1e-2)
    assert all(float(h.pow(2).mean(-1).sqrt().max()) < 0.5 for h in layers[:-1])


def test_hidden_states_equal_the_stock_thinker_forward(qwen_conditioner, qwen_snapshot):
    """Same tensors as transformers' unmodified thinker (vision tower, lm_head and all)."""
    thinker_config = json.loads((qwen_snapshot / "config.json").read_text())["thinker_config"]
    stock = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(
        qwen_snapshot, config=Qwen2_5OmniThinkerConfig.from_dict(thinker_config)
    )
    audio = _clip(2.0, seed=1)
    with torch.no_grad():
        want = stock(**qwen_conditioner.prepare_inputs(INSTRUCTION, audio), output_hidden_states=True, use_cache=False)
    got, _ = qwen_conditioner.hidden_states(INSTRUCTION, audio)
    assert len(want.hidden_states) == TEXT_LAYERS + 1
    for layer, (ours, theirs) in enumerate(zip(got, want.hidden_states[1:], strict=True), start=1):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0, msg=f"layer {layer}")


def test_fused_condition_matches_a_direct_computation(qwen_conditioner):
    layers, _ = qwen_conditioner.hidden_states(INSTRUCTION, _clip(1.0))
    generator = torch.Generator().manual_seed(3)
    layer_weights = torch.randn(TEXT_LAYERS, generator=generator)
    layer_scale = torch.tensor([2.5])
    fused = fuse_hidden_states(layers, layer_weights, layer_scale)

    stacked = torch.stack(layers).double()  # [L, 1, nt, D]
    mean = stacked.mean(-1, keepdim=True)
    var = (stacked - mean).pow(2).mean(-1, keepdim=True)  # biased, as LayerNorm uses
    normed = (stacked - mean) / torch.sqrt(var + 1e-5)
    weights = layer_weights.double().exp() / layer_weights.double().exp().sum()
    want = 2.5 * torch.einsum("l,lbtd->btd", weights, normed)

    assert fused.dtype == torch.float32 and fused.shape == layers[0].shape
    # float32 LayerNorm and sum against a float64 reference: the values are O(1), so a few ULP.
    torch.testing.assert_close(fused.double(), want, rtol=1e-5, atol=1e-5)


# --- what is (not) loaded -----------------------------------------------------------------------


def test_vision_tower_and_lm_head_stay_on_disk(qwen_conditioner, qwen_snapshot):
    with safe_open(str(qwen_snapshot / SHARDS[0]), "pt") as f:
        on_disk = {key: f.get_slice(key).get_shape() for key in f.keys()}
    assert any(key.startswith("thinker.visual.") for key in on_disk) and "thinker.lm_head.weight" in on_disk
    thinker = qwen_conditioner.model
    names = [name for name, _ in thinker.named_parameters()] + [name for name, _ in thinker.named_buffers()]
    assert not [name for name in names if "visual" in name or "lm_head" in name]
    assert thinker.model.visual is None and isinstance(thinker.lm_head, torch.nn.Identity)
    assert not any("Vision" in type(module).__name__ for module in thinker.modules())
    kept = [shape for key, shape in on_disk.items() if key.startswith(("thinker.model.", "thinker.audio_tower."))]
    assert sum(p.numel() for p in thinker.parameters()) == sum(int(np.prod(shape)) for shape in kept)


def test_tied_embedding_config_loads_the_same_weights(qwen_conditioner, qwen_snapshot, tmp_path):
    directory = _copy(qwen_snapshot, tmp_path)
    _edit_config(directory, tie_word_embeddings=True)
    tied = QwenConditioner.from_pretrained(directory)
    assert isinstance(tied.model.lm_head, torch.nn.Identity)
    got, _ = tied.hidden_states(INSTRUCTION, None)
    want, _ = qwen_conditioner.hidden_states(INSTRUCTION, None)
    torch.testing.assert_close(got[-1], want[-1], rtol=0, atol=0)


def test_bfloat16_load_runs_the_audio_path_in_bfloat16(qwen_snapshot):
    bf16 = QwenConditioner.from_pretrained(qwen_snapshot, dtype=torch.bfloat16)
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    layers, _ = bf16.hidden_states(INSTRUCTION, _clip(1.0))
    assert all(h.dtype == torch.bfloat16 and bool(h.isfinite().all()) for h in layers)


def test_snapshot_writer_is_deterministic(tmp_path):
    first = write_tiny_qwen_snapshot(tmp_path / "first")
    second = write_tiny_qwen_snapshot(tmp_path / "second")
    names = sorted(path.name for path in first.iterdir())
    assert names == sorted(path.name for path in second.iterdir()) and len(names) == 9
    assert all((first / name).read_bytes() == (second / name).read_bytes() for name in names)


# --- broken snapshots ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["config.json", "preprocessor_config.json", "tokenizer_config.json", SHARDS[1], "model.safetensors.index.json"],
)
def test_missing_snapshot_file_is_named(qwen_snapshot, tmp_path, name):
    directory = _copy(qwen_snapshot, tmp_path)
    (directory / name).unlink()
    with pytest.raises(CheckpointError, match=rf"lacks .*{name}.*hf download Qwen/Qwen2\.5-Omni-3B --local-dir"):
        QwenConditioner.from_pretrained(directory)


def test_missing_snapshot_folder_says_how_to_get_it(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist.*hf download Qwen/Qwen2.5-Omni-3B"):
        QwenConditioner.from_pretrained(tmp_path / "nowhere")


def test_missing_thinker_weight_is_refused(qwen_snapshot, tmp_path):
    directory = _copy(qwen_snapshot, tmp_path)
    tensors = load_file(str(directory / SHARDS[0]))
    del tensors["thinker.model.norm.weight"]
    save_file(tensors, str(directory / SHARDS[0]), metadata={"format": "pt"})
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    del index["weight_map"]["thinker.model.norm.weight"]
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"1 missing keys: model\.language_model\.norm\.weight"):
        QwenConditioner.from_pretrained(directory)


def test_tokenizer_from_another_model_is_refused(qwen_snapshot, tmp_path):
    directory = _copy(qwen_snapshot, tmp_path)
    _edit_config(directory, audio_token_index=5)
    with pytest.raises(CheckpointError, match="<\\|AUDIO\\|>"):
        QwenConditioner.from_pretrained(directory)
