"""Streamed decodes in bounded memory against one whole decode: the fixtures' tiny VAE (real rates)
and the demo model's codec."""

import numpy as np
import pytest
import torch

from auk_app import AuKVAE
from auk_app.auk.checkpoint import load_auk_checkpoint
from auk_app.auk.stream_decode import ContextStreamDecoder, decoder_context, stream_decoder
from tests.conftest import FIXTURES, REPO, assert_matches_reference, fixture_config


@pytest.fixture(scope="module")
def fixture_vae():
    vae = AuKVAE.from_config(fixture_config("vae_config.json"))
    vae.load_weights(FIXTURES / "vae_weights.safetensors")
    return vae.eval()


@pytest.fixture(scope="module")
def demo_codec():
    return load_auk_checkpoint(REPO / "assets" / "AuK-Tiny").vae


def _streamed(decoder, latents: torch.Tensor, piece: int) -> np.ndarray:
    """``latents`` [n, L] pushed ``piece`` frames at a time."""
    parts = [decoder.push(latents[i : i + piece]) for i in range(0, latents.shape[0], piece)]
    return np.concatenate([*parts, decoder.end()])


def _eager(vae):
    return lambda latents: vae.decode(latents, clamp=False)


@pytest.fixture(scope="module")
def decoded(fixture_vae):
    """130 seeded frames (2.6 s at the real rates) and their whole decode."""
    latents = torch.randn(130, 64, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        return latents, fixture_vae.decode(latents[None], clamp=False)[0]


def test_the_context_bounds_the_decoders_receptive_field(fixture_vae, decoded):
    # One frame nudged: the samples it moves lie within the context of the frames they belong to.
    before, after = decoder_context(fixture_vae)
    latents, whole = decoded
    nudged = latents.clone()
    nudged[70] += 1.0
    with torch.inference_mode():
        moved = (fixture_vae.decode(nudged[None], clamp=False)[0] - whole).abs() > 0
    frames = torch.nonzero(moved).flatten() // fixture_vae.hop_size
    assert 70 - after <= int(frames.min()) and int(frames.max()) <= 70 + before
    assert int(frames.max()) - 70 >= before - 10  # and not by much: the decoder does reach back that far


@pytest.mark.parametrize("piece, chunk", [(1, 60), (130, 45)])  # one frame a push; several chunks a push
def test_a_chunked_decode_of_the_fixture_vae_gives_the_whole_decodes_samples(fixture_vae, decoded, piece, chunk):
    latents, whole = decoded
    before, after = decoder_context(fixture_vae)
    with torch.inference_mode():
        streamed = _streamed(ContextStreamDecoder(_eager(fixture_vae), 480, before=before, after=after,
                                                  chunk_frames=chunk), latents, piece)
    assert_matches_reference(torch.from_numpy(streamed), whole)  # the fixtures' bound, 1e-5 + 1e-5·|ref|


def test_chunks_without_their_context_do_not(fixture_vae, decoded):
    latents, whole = decoded
    with torch.inference_mode():
        streamed = _streamed(ContextStreamDecoder(_eager(fixture_vae), 480, before=0, after=0, chunk_frames=60),
                             latents, 17)
    assert np.abs(streamed - whole.numpy()).max() > 0.1


def test_stream_decoder_uses_the_context_for_the_vae_and_the_codecs_own_stream_for_the_demo(fixture_vae, demo_codec):
    assert isinstance(stream_decoder(fixture_vae, _eager(fixture_vae)), ContextStreamDecoder)
    assert type(stream_decoder(demo_codec, _eager(demo_codec))).__name__ == "HarmonicStream"


@pytest.mark.parametrize("piece", [1, 7, 120])
def test_the_demo_codecs_stream_gives_its_whole_decodes_samples(demo_codec, piece):
    # Real sound: a gliding, swelling tone in noise, so phase, harmonics and noise bands all move.
    rate = demo_codec.sample_rate
    t = np.arange(int(7.37 * rate)) / rate
    tone = 0.3 * np.sin(2 * np.pi * 220 * t + 3 * np.sin(2 * np.pi * 0.5 * t)) * (1 + 0.5 * np.sin(2 * np.pi * 0.3 * t))
    wav = tone + 0.02 * np.random.default_rng(0).standard_normal(t.size)
    latents = demo_codec.encode(torch.tensor(wav, dtype=torch.float32)[None])[0]
    whole = demo_codec.decode(latents[None], clamp=False)[0]
    streamed = _streamed(stream_decoder(demo_codec, _eager(demo_codec)), latents, piece)
    assert_matches_reference(torch.from_numpy(streamed), whole)


def test_the_demo_codecs_stream_holds_a_chunk_and_not_the_recording(demo_codec):
    stream = demo_codec.stream()
    latents = torch.zeros(400, demo_codec.latent_dim)
    for start in range(0, 400, 50):
        stream.push(latents[start : start + 50])
        assert stream._rows.shape[0] <= 2 and stream._white.size <= 2 * demo_codec.hop_size
