"""Both checkpoint layouts load through one entry point; bad files give one clear error."""

import json

import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file

from auk_app import FLASH_T_GRID, AuKTransformer, AuKVAE, load_auk_checkpoint
from auk_app.auk.checkpoint import Capabilities, read_auk_checkpoint
from auk_app.auk.configs import Recipe
from training.checkpoint_writer import write_auk_checkpoint
from auk_app.errors import CheckpointError
from tests.conftest import REPO, fixture_config
from training.train_dit import LONG_SECONDS

TINY_DIT = dict(fixture_config("dit_config.json"), text_hidden_dim=24)


def _write(directory, *, layout="release", variant="base", dit_config=TINY_DIT, flow=True):
    torch.manual_seed(0)
    vae_config = fixture_config("vae_config.json")
    write_auk_checkpoint(
        directory, layout=layout, variant=variant, name="AuK",
        dit=AuKTransformer(**dit_config), dit_config=dit_config,
        vae=AuKVAE.from_config(vae_config), vae_config=vae_config,
        layer_weights=torch.randn(36), layer_scale=torch.tensor([1.5]),
    )
    if flow:  # a real release also carries the training-only flow
        vae_file = directory / "vae.safetensors"
        tensors = load_file(str(vae_file))
        tensors["flow.flows.0.post.weight"] = torch.zeros(32, 256, 1)
        save_file(tensors, str(vae_file))
    return directory


@pytest.mark.parametrize("layout", ["release", "assembled"])
@pytest.mark.parametrize("variant", ["base", "flash"])
def test_both_layouts_load(tmp_path, layout, variant):
    _write(tmp_path, layout=layout, variant=variant)
    if layout == "release":
        expected = {"base": "auk_base.safetensors", "flash": "auk_flash.safetensors"}[variant]
        assert (tmp_path / expected).is_file() and (tmp_path / "config.yaml").is_file()
        assert "transformer.proj_out.weight" in load_file(str(tmp_path / expected))
    model = load_auk_checkpoint(tmp_path)
    ckpt = model.checkpoint
    assert (ckpt.layout, ckpt.variant) == (layout, variant)
    assert model.layer_weights.shape == (36,) and model.layer_scale.tolist() == [1.5]
    assert "conv_pre.weight" in model.vae.state_dict()
    if variant == "flash":
        assert ckpt.defaults.t_grid == FLASH_T_GRID and ckpt.defaults.fixed
        assert (ckpt.defaults.nfe, ckpt.defaults.cfg, ckpt.defaults.sway) == (4, 0.0, None)
    else:
        assert ckpt.defaults == Recipe(nfe=32, cfg=2.0, sway=-1.0, noise_scale=1.0, start="noise")
    assert model.dit.rotary_embed.inv_freq.dtype == torch.float32


@pytest.mark.parametrize(("declared", "loaded"), [(0.5, 0.5), (0, None), (1.5, None), ("warm", None)])
def test_an_assembled_config_may_declare_a_noise_scale_within_0_and_1(tmp_path, declared, loaded):
    _write(tmp_path, layout="assembled")
    config = json.loads((tmp_path / "config.json").read_text())
    config["defaults"]["noise_scale"] = declared
    (tmp_path / "config.json").write_text(json.dumps(config))
    if loaded is None:
        with pytest.raises(CheckpointError, match="noise_scale"):
            read_auk_checkpoint(tmp_path)
    else:
        assert read_auk_checkpoint(tmp_path).defaults.noise_scale == loaded


@pytest.mark.parametrize("declared", ["source", "noise", "reference", None])
def test_an_assembled_config_may_declare_the_flow_starts_at_the_source(tmp_path, declared):
    _write(tmp_path, layout="assembled")
    config = json.loads((tmp_path / "config.json").read_text())
    config["defaults"]["start"] = declared
    (tmp_path / "config.json").write_text(json.dumps(config))
    if declared in ("source", "noise"):
        assert read_auk_checkpoint(tmp_path).defaults.start == declared
    else:
        with pytest.raises(CheckpointError, match="start must be one of"):
            read_auk_checkpoint(tmp_path)


@pytest.mark.parametrize("layout", ["release", "assembled"])
def test_capabilities_default_to_the_releases_and_a_config_may_narrow_them(tmp_path, layout):
    _write(tmp_path / "plain", layout=layout)
    assert read_auk_checkpoint(tmp_path / "plain").capabilities == Capabilities(None, ("en", "zh"), 30.0)
    _write(tmp_path, layout="assembled")
    config = json.loads((tmp_path / "config.json").read_text())
    config["capabilities"] = {"tasks": ["volume", "enhance:Remove noise"], "languages": ["en"]}
    (tmp_path / "config.json").write_text(json.dumps(config))
    narrowed = Capabilities(("volume", "enhance:Remove noise"), ("en",), 30.0)
    assert read_auk_checkpoint(tmp_path).capabilities == narrowed
    config["capabilities"] = {"languages": ["fr"]}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="capabilities.languages"):
        read_auk_checkpoint(tmp_path)


@pytest.mark.parametrize("layout", ["release", "assembled"])
def test_a_config_declares_its_longest_training_clip_and_a_release_without_one_gets_30_s(tmp_path, layout):
    _write(tmp_path / "plain", layout=layout)
    assert read_auk_checkpoint(tmp_path / "plain").capabilities.max_clip_seconds == 30.0
    _write(tmp_path, layout=layout)
    for declared, loaded in ((6, 6.0), (12.5, 12.5), (0, None), (-1, None), ("6", None), (True, None), (None, None)):
        _set_capabilities(tmp_path, layout, {"max_clip_seconds": declared})
        if loaded is None:
            with pytest.raises(CheckpointError, match="capabilities.max_clip_seconds must be a positive number"):
                read_auk_checkpoint(tmp_path)
        else:
            assert read_auk_checkpoint(tmp_path).capabilities.max_clip_seconds == loaded


def test_the_demo_model_declares_the_6_s_clips_it_was_trained_on():
    assert read_auk_checkpoint(REPO / "assets" / "AuK-Tiny").capabilities.max_clip_seconds == LONG_SECONDS[1] == 6.0


def _set_capabilities(directory, layout, capabilities):
    if layout == "assembled":
        config = json.loads((directory / "config.json").read_text())
        config["capabilities"] = capabilities
        (directory / "config.json").write_text(json.dumps(config))
    else:
        config = yaml.safe_load((directory / "config.yaml").read_text())
        config["model"]["capabilities"] = capabilities
        (directory / "config.yaml").write_text(yaml.safe_dump(config))


def test_release_config_references_are_resolved(tmp_path):
    _write(tmp_path)
    text = (tmp_path / "config.yaml").read_text()
    assert "${model.vae.latent_dim}" in text
    assert read_auk_checkpoint(tmp_path).codec_config.latent_dim == 64


def test_bf16_weights_keep_the_stored_frequencies(tmp_path):
    _write(tmp_path)
    model = load_auk_checkpoint(tmp_path, dtype=torch.bfloat16)
    stored = load_file(str(tmp_path / "auk_base.safetensors"))["transformer.rotary_embed.inv_freq"]
    assert torch.equal(model.dit.rotary_embed.inv_freq, stored)  # float32, not rounded to bf16
    assert model.dit.proj_out.weight.dtype == torch.bfloat16
    assert model.vae.conv_pre.weight.dtype == torch.float32


def test_truncated_file_names_the_file(tmp_path):
    _write(tmp_path)
    dit_file = tmp_path / "auk_base.safetensors"
    dit_file.write_bytes(dit_file.read_bytes()[:-1000])
    with pytest.raises(CheckpointError, match="auk_base.safetensors.*download it again"):
        load_auk_checkpoint(tmp_path)


def test_mislabelled_variant_is_refused(tmp_path):
    _write(tmp_path, variant="base")
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["model"]["name"] = "AuK-Flash"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(CheckpointError, match="lacks auk_flash.safetensors.*does not match"):
        read_auk_checkpoint(tmp_path)


def test_shape_mismatch_names_the_keys(tmp_path):
    _write(tmp_path, layout="assembled")
    config = json.loads((tmp_path / "config.json").read_text())
    config["dit"]["dim"] = 32  # the file holds a dim-48 DiT
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"auk.safetensors does not match the AuK DiT: 58 keys with the wrong shape: audio_embed"):
        load_auk_checkpoint(tmp_path)


def test_missing_and_unexpected_dit_keys_are_named(tmp_path):
    _write(tmp_path, layout="assembled")
    tensors = load_file(str(tmp_path / "auk.safetensors"))
    del tensors["transformer.norm_out.linear.bias"]
    tensors["transformer.extra.weight"] = torch.zeros(2)
    save_file(tensors, str(tmp_path / "auk.safetensors"))
    with pytest.raises(CheckpointError) as error:
        load_auk_checkpoint(tmp_path)
    assert "missing keys: norm_out.linear.bias" in str(error.value)
    assert "unexpected keys: extra.weight" in str(error.value)


@pytest.mark.parametrize(("layout", "file", "key", "message"), [
    ("assembled", "auk.safetensors", "layer_scale", "missing keys: layer_scale"),
    ("release", "vae.safetensors", "conv_post.weight_g",
     "vae.safetensors does not match the AuK VAE: 1 missing keys: conv_post.weight_g"),
])
def test_a_missing_tensor_is_named(tmp_path, layout, file, key, message):
    _write(tmp_path, layout=layout)
    tensors = load_file(str(tmp_path / file))
    del tensors[key]
    save_file(tensors, str(tmp_path / file))
    with pytest.raises(CheckpointError, match=message):
        load_auk_checkpoint(tmp_path)


def test_missing_files_and_unknown_directories(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        read_auk_checkpoint(tmp_path / "nowhere")
    with pytest.raises(CheckpointError, match="is not an AuK checkpoint"):
        read_auk_checkpoint(tmp_path)
    _write(tmp_path)
    (tmp_path / "vae.safetensors").unlink()
    with pytest.raises(CheckpointError, match="lacks vae.safetensors"):
        read_auk_checkpoint(tmp_path)


def test_pickle_files_are_never_read(tmp_path):
    _write(tmp_path)
    (tmp_path / "auk_base.safetensors").write_bytes(b"\x80\x04\x95 pickle bytes")
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        load_auk_checkpoint(tmp_path)


def test_the_writer_refuses_an_unknown_layout_before_making_the_directory(tmp_path):
    with pytest.raises(ValueError, match="layout must be 'release' or 'assembled', not 'zip'"):
        _write(tmp_path / "checkpoint", layout="zip")
    assert not (tmp_path / "checkpoint").exists()


_LOAD_AND_LIST_DEMO_MODULES = """
import sys
from auk_app.auk.checkpoint import load_auk_checkpoint
from auk_app.auk.conditioner import load_conditioner
from auk_app.errors import CheckpointError

model = load_auk_checkpoint(sys.argv[1])
assert type(model.vae).__name__ == "AuKVAE" and model.checkpoint.text_encoder.reads_audio
try:  # the release's text encoder is looked up too; there is no Qwen snapshot here
    load_conditioner(model.checkpoint.text_encoder, None)
except CheckpointError:
    pass
print(sorted(name for name in sys.modules if name == "auk_app.demo" or name.startswith("auk_app.demo.")))
"""


@pytest.mark.parametrize("layout", ["release", "assembled"])
def test_loading_a_release_imports_nothing_of_the_demo(tmp_path, layout):
    """The codec and text-encoder registry imports the demo's harmonic codec and MiniLM only for a
    checkpoint that names them; a fresh interpreter loads a BigVGAN-flow + Qwen checkpoint without them."""
    import subprocess
    import sys
    from pathlib import Path

    _write(tmp_path, layout=layout, flow=False)
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _LOAD_AND_LIST_DEMO_MODULES, str(tmp_path)], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_demo_enters_its_kinds_when_asked_and_the_docs_snippet_loads_auk_tiny():
    """Importing the demo package enters nothing; ``demo.register()`` enters AuK-Tiny's codec and text
    encoder and Audex-Tiny's codec (twice changes nothing), and the long-recordings page's snippet,
    run as written in a fresh process, loads AuK-Tiny by its folder."""
    import re
    import subprocess
    import sys

    probe = ("import auk_app.demo as d, auk_app.auk.registry as r, auk_app.audex.codecs as c; "
             "assert 'harmonic_noise' not in r.CODECS and 'audex_events' not in c.CODECS; d.register(); d.register(); "
             "assert 'harmonic_noise' in r.CODECS and 'minilm' in r.TEXT_ENCODERS and 'audex_events' in c.CODECS")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    snippet = re.search(r"```python\n(.*?)\nresult = ", (REPO / "docs" / "long-recordings.md").read_text(), re.S).group(1)
    snippet += "\nassert pipeline.checkpoint.codec_config.__class__.__name__ == 'HarmonicCodecConfig'"
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]