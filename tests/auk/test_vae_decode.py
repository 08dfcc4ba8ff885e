"""The fast VAE decode (compiled, bucketed, graphed on CUDA) against the eager AuKVAE.decode."""

import gc
import logging

import pytest
import torch
from torch._dynamo.exc import TorchDynamoException

from auk_app import AuKVAE
from auk_app.auk import vae_decode
from auk_app.auk.vae import DownSample1d, UpSample1d
from auk_app.auk.vae_decode import FastDecoder, _lowpass_fir, _upsample_fir, decoder, fast_decode
from tests.conftest import FIXTURES, assert_matches_reference, fixture_config, load_case, requires_cuda

# Same math, another summation order (the FIR slices, cuDNN/oneDNN at another length): float32 rounding.
TIGHT = dict(atol=2e-6, rtol=0)


def _fixture_vae(device="cpu"):
    vae = AuKVAE.from_config(fixture_config("vae_config.json")).to(device)
    vae.load_weights(FIXTURES / "vae_weights.safetensors")
    return vae.eval()


def _eager(vae, latents):
    with torch.no_grad():
        return vae.decode(latents)


def test_fir_slices_compute_the_resampling_convolutions():
    up, down = UpSample1d(), DownSample1d()
    x, z = torch.randn(2, 5, 37), torch.randn(2, 5, 74)
    torch.testing.assert_close(_upsample_fir(x, up.filter, up.geometry), up(x), **TIGHT)
    torch.testing.assert_close(_lowpass_fir(z, down.lowpass.filter, down.lowpass.geometry), down(z), **TIGHT)


def test_padding_to_a_bucket_keeps_every_valid_sample():
    # The eager path of the padded decode: the tail hold and zeroed conv_pre input undo the padding.
    vae = _fixture_vae()
    fast = FastDecoder(vae, compile=False, bucket_frames=8)
    for frames in (5, 13):
        latents = torch.randn(1, frames, 64)
        want = _eager(vae, latents)
        torch.testing.assert_close(fast(latents, static=True), want, **TIGHT)
        torch.testing.assert_close(fast(latents), want, **TIGHT)
    assert len(fast) == 2  # buckets 8 and 16


def test_compiled_decode_matches_eager_and_the_reference():
    _, tensors = load_case("vae_l_decode")
    vae = _fixture_vae()
    fast = FastDecoder(vae, bucket_frames=8)
    assert_matches_reference(fast(tensors["input.latents"]), tensors["output.wav"])
    for frames in (5, 13):  # padded to 8 and 16 frames: no new compile, the length is symbolic
        latents = torch.randn(1, frames, 64)
        torch.testing.assert_close(fast(latents, static=True), _eager(vae, latents), **TIGHT)


def test_a_failed_compile_falls_back_to_eager_once(monkeypatch, caplog):
    def broken(*args):
        raise TorchDynamoException("no C++ compiler")

    monkeypatch.setattr(vae_decode, "_COMPILED", broken)
    vae = _fixture_vae()
    fast = FastDecoder(vae)
    latents = torch.randn(2, 6, 64)
    with caplog.at_level(logging.WARNING, logger="auk_app.auk.vae_decode"):
        first, second = fast(latents), fast(latents)
    assert [r.getMessage() for r in caplog.records] == [
        "VAE decode: torch.compile failed (TorchDynamoException: no C++ compiler); decoding eagerly"
    ]
    torch.testing.assert_close(first, _eager(vae, latents), **TIGHT)
    assert torch.equal(first, second)


def test_fast_decode_off_cuda_is_the_eager_decode():
    vae = _fixture_vae()
    latents = torch.randn(1, 9, 64)
    assert torch.equal(fast_decode(vae, latents), _eager(vae, latents))
    assert not vae_decode._DECODERS  # nothing compiled or kept


def test_one_decoder_per_vae_held_weakly():
    a, b = _fixture_vae(), _fixture_vae()
    assert decoder(a) is decoder(a) and decoder(a) is not decoder(b)
    del a
    gc.collect()
    assert list(vae_decode._DECODERS) == [b]


@requires_cuda
def test_graph_replay_matches_eager_on_cuda(monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # TF32 rounding would hide a real gap
    vae = _fixture_vae("cuda")
    fast = decoder(vae)
    for frames in (37, 50, 37, 12):  # the first decode runs ungraphed; then buckets 50 and 50 again
        latents = torch.randn(2, frames, 64, device="cuda")
        torch.testing.assert_close(fast_decode(vae, latents), _eager(vae, latents), **TIGHT)
    assert len(fast) == 1
    _, tensors = load_case("vae_l_decode")
    assert_matches_reference(fast_decode(vae, tensors["input.latents"].cuda()).cpu(), tensors["output.wav"])


@requires_cuda
def test_moved_weights_drop_the_graphs_on_cuda():
    vae = _fixture_vae("cuda")
    fast = decoder(vae)
    latents = torch.randn(1, 20, 64, device="cuda")
    fast(latents), fast(latents)
    assert len(fast) == 1
    vae.cpu().cuda()
    want = _eager(vae, latents)
    got = fast(latents)
    assert len(fast) == 0
    torch.testing.assert_close(got, want, atol=1e-3, rtol=0)


def test_an_error_that_is_no_compile_failure_is_raised_not_hidden(monkeypatch):
    def out_of_memory(*args):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(vae_decode, "_COMPILED", out_of_memory)
    vae = _fixture_vae()  # held here: the decoder holds it weakly
    fast = FastDecoder(vae)
    with pytest.raises(RuntimeError, match="out of memory"):
        fast(torch.randn(1, 6, 64))
    assert fast._activation is out_of_memory  # still the compiled activation: nothing was given up


def test_a_decoder_that_looks_further_ahead_is_not_padded():
    config = {**fixture_config("vae_config.json"), "act_causal": False}
    with pytest.raises(ValueError, match="looks ahead"):
        FastDecoder(AuKVAE.from_config(config))
