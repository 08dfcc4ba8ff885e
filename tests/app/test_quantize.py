"""``--quantize``: which layers each mode quantizes, what is refused at start and how, that the
demo model, a tiny release with its Qwen thinker and the real-size DiT and thinker load and run
quantized, and that /model_info and the manifest say what ran."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from app import main as app_main
from auk_app.auk.checkpoint import load_auk_checkpoint, read_auk_checkpoint
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.pipeline import AuKPipeline
from auk_app.auk.request import EditRequest
from auk_app.auk.vae import AuKVAE
from auk_app.config import QUANTIZE_CHOICES, Limits
from auk_app.demo import DEMO_DIR
from auk_app.job import run_request
from auk_app.errors import InputError
from auk_app.quantize import DIT_BLOCKS, TEXT_ENCODER_BLOCKS, Quantization, pick_quantization, weight_bytes
from auk_app.runtime import PRECISIONS, GraphCache, storage_tensors, weight_addresses
from auk_app.service import Studio, StudioConfig
from bench.bench_quantize import materialise, real_dit, real_thinker
from tests.conftest import fixture_config
from tests.ports import free_port
from tests.qwen_snapshot import TEXT_HIDDEN, TEXT_LAYERS
from training.checkpoint_writer import write_auk_checkpoint

CPU = torch.device("cpu")
FLOAT32 = PRECISIONS["float32"]
INT4_ON_CPU = ("--quantize int4 is not supported on the CPU: torchao's 4-bit weight-only kernel runs on CUDA GPUs "
               "only, so use --quantize int8 here.")


def _linears(module: torch.nn.Module) -> dict[str, torch.nn.Linear]:
    return {name: layer for name, layer in module.named_modules() if isinstance(layer, torch.nn.Linear)}


def _is_quantized(layer: torch.nn.Linear) -> bool:
    return len(storage_tensors(layer.weight)) > 1  # int8 data, scale and zero point


# --- modes and refusals --------------------------------------------------------------------------


def test_the_modes_and_none_by_default():
    assert QUANTIZE_CHOICES == ("none", "int8", "int4")
    assert pick_quantization(CPU, FLOAT32, None).mode == pick_quantization(CPU, FLOAT32, "none").mode == "none"
    assert pick_quantization(CPU, FLOAT32, "int8").mode == "int8"
    with pytest.raises(InputError, match="Unknown quantization 'int3'; choose one of: none, int8, int4."):
        pick_quantization(CPU, FLOAT32, "int3")


def test_int4_on_the_cpu_is_refused_in_one_sentence_naming_the_mode_and_the_device():
    with pytest.raises(InputError) as refused:
        pick_quantization(CPU, PRECISIONS["bfloat16"], "int4")
    sentence = str(refused.value)
    assert sentence == INT4_ON_CPU and sentence.count(". ") == 0 and sentence.endswith(".")


def test_the_app_refuses_int4_on_the_cpu_at_start_with_that_sentence(capsys):
    with pytest.raises(SystemExit) as stopped:
        app_main(["--quantize", "int4", "--device", "cpu", "--port", str(free_port())])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == f"AuK Studio cannot start: {INT4_ON_CPU}\n"


# --- which layers ---------------------------------------------------------------------------------


def _demo_dit_linears(model) -> tuple[set[str], set[str]]:
    """AuK-Tiny's DiT linears: (the attention and feed-forwards of its blocks, everything else)."""
    names = set(_linears(model.dit))
    blocks = {n for n in names if n.startswith(("transformer_blocks.", "single_transformer_blocks."))
              and ".attn_norm" not in n}
    return blocks, names - blocks


def test_int8_quantizes_the_dits_block_linears_and_keeps_embeddings_adaln_and_the_head():
    model = load_auk_checkpoint(DEMO_DIR)
    released_keys = set(model.dit.state_dict())
    before = weight_bytes(model.dit)
    blocks, kept = _demo_dit_linears(model)
    assert kept >= {"txt_proj", "audio_embed.linear", "time_embed.time_mlp.0", "norm_out.linear", "proj_out",
                    "transformer_blocks.0.attn_norm_x.linear", "single_transformer_blocks.2.attn_norm.linear"}

    names = Quantization("int8").apply(model.dit, DIT_BLOCKS)

    assert set(names) == blocks and len(names) == 1 * 8 + 3 * 4  # a double block has 8, a single one 4
    linears = _linears(model.dit)
    assert all(_is_quantized(linears[n]) for n in blocks)
    assert not any(_is_quantized(linears[n]) or linears[n].weight.dtype != torch.float32 for n in kept)
    assert set(model.dit.state_dict()) == released_keys  # the released names, nothing added or renamed
    # Each quantized weight: 4 bytes a weight become 1, plus a float32 scale and an int8 zero point a row.
    saved = sum(3 * linears[n].in_features * linears[n].out_features - 5 * linears[n].out_features for n in blocks)
    assert before - weight_bytes(model.dit) == saved


def test_int8_moves_the_demo_dits_velocity_by_well_under_one_percent():
    model = load_auk_checkpoint(DEMO_DIR)
    generator = torch.Generator().manual_seed(0)
    x, text = torch.randn(1, 50, model.dit.latent_dim, generator=generator), torch.randn(1, 8, 384, generator=generator)
    with torch.inference_mode():
        want = model.dit(x, text, torch.tensor(0.3), cfg_infer=True)
        Quantization("int8").apply(model.dit, DIT_BLOCKS)
        got = model.dit(x, text, torch.tensor(0.3), cfg_infer=True)
    error = float((got - want).norm() / want.norm())
    # Per-row int8 rounds a weight by at most half of 1/127 of its row's largest; measured 6.5e-3 here.
    assert 0 < error < 1e-2, error


def test_none_leaves_every_layer_as_it_is():
    model = load_auk_checkpoint(DEMO_DIR)
    assert Quantization("none").apply(model.dit, DIT_BLOCKS) == []
    assert not any(_is_quantized(layer) for layer in _linears(model.dit).values())


def test_a_quantized_weights_addresses_are_its_inner_tensors_and_the_graph_cache_sees_them_move():
    layer = torch.nn.Linear(64, 32)
    Quantization("int8").apply(torch.nn.Sequential(layer), re.compile(""))
    inner = storage_tensors(layer.weight)
    assert [t.dtype for t in inner] == [torch.int8, torch.float32, torch.int8] and layer.weight.data_ptr() == 0
    assert weight_addresses(layer) == (*(t.data_ptr() for t in inner), layer.bias.data_ptr())
    cache = GraphCache(2)
    cache.weights_stayed(layer)
    layer.weight.qdata = layer.weight.qdata.clone()  # the int8 data moved: a CUDA graph would read freed memory
    assert not cache.weights_stayed(layer)


# --- pipelines and the app -----------------------------------------------------------------------


DIT = dict(dim=32, heads=2, dim_head=16, ff_mult=2.0, latent_dim=64, text_hidden_dim=TEXT_HIDDEN, num_layers=1,
           num_single_layers=1)


def test_a_release_with_its_qwen_thinker_edits_with_int8_weights(tmp_path, qwen_snapshot):
    torch.manual_seed(0)
    vae_config = fixture_config("vae_config.json")
    write_auk_checkpoint(tmp_path / "AuK", layout="release", dit=AuKTransformer(**DIT), dit_config=DIT,
                         vae=AuKVAE.from_config(vae_config), vae_config=vae_config,
                         layer_weights=torch.randn(TEXT_LAYERS), layer_scale=torch.ones(1))
    pipeline = AuKPipeline(read_auk_checkpoint(tmp_path / "AuK"), text_encoder_path=qwen_snapshot,
                           limits=Limits(max_input_seconds=3.0), quantize="int8")
    wav = (0.3 * np.sin(2 * np.pi * 330 * np.arange(24000) / 24000)).astype(np.float32)
    result = pipeline.generate(EditRequest("Raise the pitch by 2 semitones.", audio=(wav, 24000), seed=1, nfe=2))

    assert result.record.quantize == "int8" and result.wav.shape == (24000,) and np.isfinite(result.wav).all()
    thinker = _linears(pipeline._conditioner.model)
    quantized = {n for n, layer in thinker.items() if _is_quantized(layer)}
    assert quantized == {n for n in thinker if TEXT_ENCODER_BLOCKS.match(n)}
    # 4 decoder layers of 7 linears, 2 audio-encoder layers of 6; the audio tower's output projection stays.
    assert len(quantized) == 4 * 7 + 2 * 6 and "model.audio_tower.proj" in set(thinker) - quantized
    embeddings = pipeline._conditioner.model.model.language_model.embed_tokens.weight
    assert type(embeddings) is torch.nn.Parameter and embeddings.dtype == torch.float32


def test_the_demo_studio_reports_int8_in_model_info_and_the_record():
    from auk_app.ui.text import serving_line

    studio = Studio(StudioConfig(quantize="int8"))
    assert studio.info()["quantize"] == "int8" and Studio().info()["quantize"] == "none"
    assert "on cpu, float32 with int8 block weights;" in serving_line(studio.info())
    tone = (0.2 * np.sin(2 * np.pi * 220 * np.arange(48000) / 24000)).astype(np.float32)
    result, _ = run_request(studio, EditRequest("Increase the volume by 6 dB.", audio=(tone, 24000), seed=0), "demo")
    assert result.record.quantize == "int8" and result.record.dtype == "float32"
    conditioner = studio.pipeline(studio.entry("demo"))._conditioner.model
    assert sum(_is_quantized(layer) for layer in _linears(conditioner).values()) == 6 * 6  # MiniLM's 6 layers


@pytest.mark.slow
def test_the_real_size_dit_and_thinker_load_and_run_in_int8_within_six_and_a_half_gb():
    dit = real_dit()
    assert len(materialise(dit, torch.bfloat16, Quantization("int8"), DIT_BLOCKS)) == 10 * 8 + 20 * 4
    dit_bytes = weight_bytes(dit)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        velocity = dit(torch.randn(1, 10, 64, dtype=torch.bfloat16), torch.randn(1, 4, 2048, dtype=torch.bfloat16),
                       torch.tensor(0.5))
    assert velocity.shape == (1, 10, 64) and torch.isfinite(velocity).all()
    del dit
    thinker = real_thinker()
    assert len(materialise(thinker, torch.bfloat16, Quantization("int8"), TEXT_ENCODER_BLOCKS)) == 36 * 7 + 32 * 6
    thinker_bytes = weight_bytes(thinker)
    with torch.inference_mode():
        hidden = thinker.model.language_model(input_ids=torch.arange(8)[None], output_hidden_states=True)
    assert len(hidden.hidden_states) == 37 and torch.isfinite(hidden.last_hidden_state).all()
    # In bfloat16 they are 3.06 + 7.45 GB; the block linears hold 0.94 B and 3.40 B parameters.
    assert dit_bytes < 2.13e9 and thinker_bytes < 4.06e9 and dit_bytes + thinker_bytes <= 6.5e9


def test_audex_tiny_samples_phase_valid_streams_with_an_int8_lm():
    from auk_app.knobs import audex_request
    from auk_app.quantize import LM_BLOCKS

    studio = Studio(StudioConfig(quantize="int8"))
    request = audex_request(dict(caption="A 440 Hz tone for 0.5 seconds.", seed=0, randomize_seed=False),
                            studio.config.limits, seconds=1.0)
    made = studio.text_to_audio(request)
    assert made.model["quantize"] == "int8" and made.result.report["phase_valid"]
    lm = _linears(studio.audex().sampler.thinker.model)
    quantized = {n for n, layer in lm.items() if _is_quantized(layer)}
    assert quantized == {n for n in lm if LM_BLOCKS.match(n)} and "lm_head" in set(lm) - quantized


def test_the_gpu_study_runs_each_mode_the_cpu_takes_on_a_small_stack():
    from bench.bench_quantize import SMOKE, gpu_study

    study = gpu_study(CPU, SMOKE, repeats=1)
    none, int8, int4 = (study["modes"][mode] for mode in ("none", "int8", "int4"))
    assert int4 == {"refused": INT4_ON_CPU}
    # 1 double block of 8 block linears, 1 single block of 4; 2 decoder layers of 7, 1 audio layer of 6.
    assert (none["quantized_layers"], int8["quantized_layers"]) == (0, 8 + 4 + 2 * 7 + 6)
    assert int8["weight_bytes"] < none["weight_bytes"]
    assert all(mode[f"{name}_edit_seconds"] > 0 and mode[f"{name}_peak_allocated_bytes"] is None
               for mode in (none, int8) for name in ("base", "flash"))
