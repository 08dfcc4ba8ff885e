"""Loading the Audex thinker and XCodec1 from the real on-disk layout, and the errors users see."""

import json
import math
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

from auk_app.demo.audex_snapshot import SHARD_NAME
from auk_app.audex.thinker import arcee_config, load_thinker
from auk_app.audex.xcodec import load_xcodec
from auk_app.errors import CheckpointError
from tests.conftest import REPO


@pytest.fixture
def snapshot(demo_snapshot, tmp_path):
    """A private copy of the demo snapshot that a test may damage."""
    shutil.copytree(demo_snapshot.audex_root.parent, tmp_path / "snap")
    return tmp_path / "snap"


def _load(root):
    return load_thinker(root / "audex", device="cpu", dtype=torch.float32)


def _edit_json(path, **changes):
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def _nemotron_dense_reference(state, config, ids):
    """The NemotronDense LM written out in plain torch: Llama body, relu² MLP without gate, NeoX RoPE, GQA."""
    heads, kv_heads, head_dim = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    eps, theta = config["norm_eps"], config["rope_parameters"]["rope_theta"]
    w = {k: v.float() for k, v in state.items()}
    n = len(ids)

    def rms(x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * inv_freq[None]
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rope(x):  # [heads, n, head_dim], rotate-half
        half = head_dim // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin

    causal = torch.full((n, n), float("-inf")).triu(1)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"])
        q = rope((h @ w[p + "self_attn.q_proj.weight"].T).view(n, heads, head_dim).transpose(0, 1))
        k = rope((h @ w[p + "self_attn.k_proj.weight"].T).view(n, kv_heads, head_dim).transpose(0, 1))
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(n, kv_heads, head_dim).transpose(0, 1)
        k, v = k.repeat_interleave(heads // kv_heads, 0), v.repeat_interleave(heads // kv_heads, 0)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(head_dim) + causal, -1) @ v
        x = x + att.transpose(0, 1).reshape(n, heads * head_dim) @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        x = x + torch.relu(h @ w[p + "mlp.up_proj.weight"].T).square() @ w[p + "mlp.down_proj.weight"].T
    return rms(x, w["model.norm.weight"]) @ w["lm_head.weight"].T


def test_arcee_matches_nemotron_dense_math(pipeline, demo_snapshot):
    config = json.loads((demo_snapshot.thinker_dir / "config.json").read_text())
    state = load_file(str(demo_snapshot.audex_root / "checkpoint_folder_full" / SHARD_NAME))
    ids = pipeline.sampler.thinker.tokenizer.encode("<|im_start|>user\nrain falling on a tin roof<audiogen_start>")
    ids += [pipeline.sampler.thinker.vocab.phase_token_ids[i % 4][i * 37] for i in range(12)]
    with torch.no_grad():
        got = pipeline.sampler.thinker.model(torch.tensor([ids])).logits[0].float()
    want = _nemotron_dense_reference(state, config, ids)
    # float32 both ways; only the op order differs (measured ~1e-6 at logit scale ~1).
    assert torch.allclose(got, want, rtol=0, atol=1e-4)


def test_config_mapping_reads_every_field():
    config = arcee_config(
        {"hidden_size": 2048, "intermediate_size": 9216, "num_hidden_layers": 28, "num_attention_heads": 16,
         "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-5, "rope_theta": 1e8, "vocab_size": 205312},
        source="config.json",
    )
    assert (config.hidden_size, config.intermediate_size, config.num_hidden_layers) == (2048, 9216, 28)
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (16, 8, 128)
    assert (config.vocab_size, config.rms_norm_eps, config.max_position_embeddings) == (205312, 1e-5, 131072)
    assert config.rope_parameters["rope_theta"] == 1e8 and config.hidden_act == "relu2"
    assert not (config.tie_word_embeddings or config.attention_bias or config.mlp_bias)


def test_loads_from_root_or_audiogen_folder_and_from_a_local_shard(snapshot):
    assert _load(snapshot).vocab.start_tid == load_thinker(
        snapshot / "audex" / "checkpoint_folder_audiogen", device="cpu", dtype=torch.float32
    ).vocab.start_tid
    audex = snapshot / "audex"
    shutil.move(audex / "checkpoint_folder_full" / SHARD_NAME, audex / "checkpoint_folder_audiogen")
    assert _load(snapshot).model.lm_head.weight.dtype == torch.float32


def test_loading_says_nothing_about_an_unknown_model_type(demo_snapshot):
    # A fresh process: transformers prints some warnings only once per process.
    code = ("import sys; from auk_app.audex.thinker import load_thinker; "
            "load_thinker(sys.argv[1], device='cpu', dtype=__import__('torch').float32)")
    done = subprocess.run([sys.executable, "-c", code, str(demo_snapshot.audex_root)], capture_output=True, text=True,
                          timeout=120, cwd=REPO, check=True)
    assert "model of type" not in done.stderr


def test_bf16_weights_keep_rope_in_float32(pipeline, demo_snapshot):
    thinker = load_thinker(demo_snapshot.audex_root, device="cpu", dtype=torch.bfloat16)
    assert {p.dtype for p in thinker.model.parameters()} == {torch.bfloat16}
    assert torch.equal(thinker.model.model.rotary_emb.inv_freq, pipeline.sampler.thinker.model.model.rotary_emb.inv_freq)


def test_missing_folder(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_thinker(tmp_path / "nowhere", device="cpu", dtype=torch.float32)


def test_missing_files_are_named_together(snapshot):
    (snapshot / "audex" / "checkpoint_folder_audiogen" / "tokenizer.json").unlink()
    (snapshot / "audex" / "checkpoint_folder_audiogen" / "model.safetensors.index.json").unlink()
    with pytest.raises(CheckpointError, match=r"missing tokenizer\.json, model\.safetensors\.index\.json"):
        _load(snapshot)


def test_missing_shard_names_file_and_folders(snapshot):
    (snapshot / "audex" / "checkpoint_folder_full" / SHARD_NAME).unlink()
    where = r"\(looked in .*checkpoint_folder_audiogen and .*checkpoint_folder_full\)"
    with pytest.raises(CheckpointError, match=rf"{SHARD_NAME} {where}"):
        _load(snapshot)


def test_truncated_shard(snapshot):
    shard = snapshot / "audex" / "checkpoint_folder_full" / SHARD_NAME
    shard.write_bytes(shard.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        _load(snapshot)


def test_renamed_key_is_reported_as_missing_and_unexpected(snapshot):
    shard = snapshot / "audex" / "checkpoint_folder_full" / SHARD_NAME
    index = snapshot / "audex" / "checkpoint_folder_audiogen" / "model.safetensors.index.json"
    state = load_file(str(shard))
    state["model.embeddings.weight"] = state.pop("model.embed_tokens.weight")
    save_file(state, str(shard))
    _edit_json(index, weight_map={key: SHARD_NAME for key in state})
    with pytest.raises(CheckpointError) as error:
        _load(snapshot)
    assert "1 missing keys: model.embed_tokens.weight" in str(error.value)
    assert "1 unexpected keys: model.embeddings.weight" in str(error.value)


def test_wrong_shapes_are_reported(snapshot):
    _edit_json(snapshot / "audex" / "checkpoint_folder_audiogen" / "config.json", intermediate_size=96)
    shape = r"mlp\.down_proj\.weight \(file \(64, 128\), model \(64, 96\)\)"
    with pytest.raises(CheckpointError, match=rf"keys with the wrong shape: .*{shape}"):
        _load(snapshot)


@pytest.mark.parametrize(
    "changes, message",
    [({"norm_eps": None}, "lacks the fields norm_eps"),
     ({"hidden_size": None, "vocab_size": None}, "lacks the fields hidden_size, vocab_size"),
     ({"hidden_act": "silu"}, "hidden_act='silu' \\(need 'relu2'\\)"),
     ({"tie_word_embeddings": True}, "tie_word_embeddings=True"),
     ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e8, "partial_rotary_factor": 0.5}},
      "partial_rotary_factor=0.5"),
     ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e8}}, "rope_type='yarn'"),
     ({"vocab_size": 128}, "has 8370 ids but the model only 128 rows")],
)
def test_config_problems_are_named(snapshot, changes, message):
    _edit_json(snapshot / "audex" / "checkpoint_folder_audiogen" / "config.json", **changes)
    with pytest.raises(CheckpointError, match=message):
        _load(snapshot)


def test_xcodec_loads_in_float32(pipeline):
    assert {p.dtype for p in pipeline.codec.parameters()} == {torch.float32}


def test_xcodec_missing_file(snapshot):
    (snapshot / "xcodec" / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="missing model.safetensors"):
        load_xcodec(snapshot / "xcodec", device="cpu")


def test_xcodec_wrong_keys(snapshot):
    weights = snapshot / "xcodec" / "model.safetensors"
    state = load_file(str(weights))
    del state["fc2.weight"]
    state["extra.weight"] = torch.zeros(1)
    save_file(state, str(weights))
    keys = r"1 missing keys: fc2\.weight; 1 unexpected keys: extra\.weight"
    with pytest.raises(CheckpointError, match=rf"XCodec1 codec .*{keys}"):
        load_xcodec(snapshot / "xcodec", device="cpu")
