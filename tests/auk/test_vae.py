"""AuKVAE against the reference fixtures, the released weight-norm layout and the real size."""

import torch
from safetensors.torch import load_file, save_file

from auk_app import AuKVAE
from auk_app.auk.vae import SnakeBeta
from tests.conftest import FIXTURES, assert_matches_reference, fixture_config, load_case


def _fixture_vae():
    vae = AuKVAE.from_config({**fixture_config("vae_config.json"), "flow_hidden_channels": 256})
    assert vae.load_weights(FIXTURES / "vae_weights.safetensors") == ([], [])
    return vae.eval()


def test_encode_matches_reference(fixture_model):
    meta, tensors = load_case("vae_k_encode")
    with torch.no_grad():
        latents = fixture_model.vae.encode(tensors["input.wav"])
    assert_matches_reference(latents, tensors["output.latents"])


def test_decode_matches_reference(fixture_model):
    meta, tensors = load_case("vae_l_decode")
    with torch.no_grad():
        wav = fixture_model.vae.decode(tensors["input.latents"])
    assert_matches_reference(wav, tensors["output.wav"])
    assert wav.abs().max() <= 1.0
    clamped = (wav.abs() == 1.0).float().mean().item()
    assert abs(clamped - meta["results"]["fraction_clamped"]) < 1e-3


def test_snake_beta_is_the_formula_on_exp_parameters():
    snake = SnakeBeta(5)
    with torch.no_grad():
        snake.alpha.copy_(0.2 * torch.randn(5))
        snake.beta.copy_(0.2 * torch.randn(5))
        x = 3 * torch.randn(2, 5, 40)
        alpha, beta = snake.alpha.exp()[None, :, None], snake.beta.exp()[None, :, None]
        want = x + 1.0 / (beta + 1e-9) * torch.sin(alpha * x) ** 2
        assert torch.equal(snake(x), want)


def test_geometry_attributes():
    vae = AuKVAE.from_config(fixture_config("vae_config.json"))
    assert (vae.sample_rate, vae.hop_size, vae.latent_dim) == (24000, 480, 64)


def test_flow_tensors_ignored_and_not_reported(tmp_path):
    tensors = load_file(str(FIXTURES / "vae_weights.safetensors"))
    tensors["flow.flows.0.pre.weight"] = torch.zeros(256, 32, 1)
    tensors["flow.flows.0.enc.in_layers.0.weight_v"] = torch.zeros(512, 256, 5)
    save_file(tensors, str(tmp_path / "vae.safetensors"))
    vae = AuKVAE.from_config(fixture_config("vae_config.json"))
    assert vae.load_weights(tmp_path / "vae.safetensors") == ([], [])


def test_folding_leaves_plain_weights_and_is_idempotent():
    vae = _fixture_vae()
    keys = vae.state_dict().keys()
    assert not any(k.endswith(("weight_g", "weight_v")) for k in keys)
    assert "conv_pre.weight" in keys and "audio_encoder.generator.0.layer.weight" in keys
    before = {k: v.clone() for k, v in vae.state_dict().items()}
    vae.remove_weight_norm()
    after = vae.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_unfolded_module_computes_the_same_codec():
    meta, tensors = load_case("vae_l_decode")
    vae = AuKVAE.from_config(fixture_config("vae_config.json"))
    vae.load_weights(FIXTURES / "vae_weights.safetensors", fold_weight_norm=False)
    assert "conv_pre.weight_g" in vae.state_dict()
    with torch.no_grad():
        assert_matches_reference(vae.decode(tensors["input.latents"]), tensors["output.wav"])


def test_missing_and_unexpected_keys_are_reported(tmp_path):
    tensors = load_file(str(FIXTURES / "vae_weights.safetensors"))
    del tensors["conv_pre.bias"]
    tensors["conv_extra.weight"] = torch.zeros(3)
    save_file(tensors, str(tmp_path / "vae.safetensors"))
    vae = AuKVAE.from_config(fixture_config("vae_config.json"))
    assert vae.load_weights(tmp_path / "vae.safetensors") == (["conv_pre.bias"], ["conv_extra.weight"])


def test_a_leftover_of_136_samples_or_more_makes_one_extra_frame():
    vae = _fixture_vae()
    frames = {}
    with torch.no_grad():
        for leftover in (0, 135, 136, 479):
            mean, std = vae.posterior(torch.randn(1, 3 * 480 + leftover))
            assert std.shape == mean.shape
            frames[leftover] = mean.shape[2]
    # strides 2, 2, 2, 3, 4, 5 with kernel 2f and padding f − 1: a frame once ⌊r/8⌋ reaches 17
    assert frames == {0: 3, 135: 3, 136: 4, 479: 4}


def test_posterior_sampling_is_seeded_and_differs_from_the_mean():
    meta, tensors = load_case("vae_k_encode")
    vae = _fixture_vae()
    with torch.no_grad():
        draw = lambda seed: vae.encode(tensors["input.wav"], sample=True, generator=torch.Generator().manual_seed(seed))  # noqa: E731
        a, b, c = draw(1), draw(1), draw(2)
        mean = vae.encode(tensors["input.wav"])
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert (a - mean).abs().max() > 1e-3


def test_released_configuration_builds_on_meta_device():
    released = {
        "upsample_rates": [5, 4, 3, 2, 2, 2], "upsample_kernel_sizes": [10, 8, 6, 4, 4, 4],
        "upsample_initial_channel": 1536, "resblock_kernel_sizes": [3, 7, 11],
        "resblock_dilation_sizes": [[1, 3, 5]] * 3, "downsample_rates": [2, 2, 2, 3, 4, 5],
        "downsample_channels": [12, 24, 48, 96, 192, 384, 768], "snake_logscale": True,
        "latent_dim": 64, "use_vae": True, "causal": True, "flow_hidden_channels": 256, "act_causal": True,
    }
    with torch.device("meta"):
        vae = AuKVAE.from_config(released)
    params = sum(p.numel() for p in vae.parameters())
    # ≈147 M inference parameters per the release notes (159.3 M in the file incl. the 12.4 M flow).
    assert 140_000_000 < params < 155_000_000
    assert vae.hop_size == 480
