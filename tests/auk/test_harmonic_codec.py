"""The demo's harmonic-plus-noise codec: what its channels mean, and how it loads."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from auk_app import AuKTransformer, load_auk_checkpoint
from auk_app.demo.harmonic_codec import HarmonicCodecConfig, HarmonicNoiseCodec
from auk_app.errors import CheckpointError
from training.checkpoint_writer import write_auk_checkpoint
from training.codec import build_codec, fit_statistics
from training.data import heldout_cases
from training.measures import cents, f0_hz, rms_db, spectral_snr_db
from training.speech import speech_clip

SR = 24_000


@pytest.fixture(scope="module")
def codec():
    codec = build_codec()
    fit_statistics(codec, [_tone(2.0, 200.0), _tone(1.0, 500.0), _noise(1.0, 0.05)])
    return codec


def _tone(seconds, f0, amplitudes=(0.3, 0.15, 0.08, 0.04)):
    t = np.arange(round(seconds * SR)) / SR
    return sum(a * np.sin(2 * np.pi * (k + 1) * f0 * t + k) for k, a in enumerate(amplitudes)).astype(np.float32)


def _noise(seconds, rms, seed=0):
    return (rms * np.random.default_rng(seed).standard_normal(round(seconds * SR))).astype(np.float32)


def _round_trip(codec, wav):
    out = codec.decode(codec.encode(torch.from_numpy(wav)[None]))[0].numpy()
    assert out.size == codec.frames_for(wav.size) * 480 >= wav.size
    return out[: wav.size]


def test_a_tone_comes_back_with_its_pitch_level_and_spectrum(codec):
    wav = _tone(2.3, 311.0)
    out = _round_trip(codec, wav)
    assert abs(cents(f0_hz(out), f0_hz(wav))) < 5
    assert abs(rms_db(out) - rms_db(wav)) < 0.3
    assert spectral_snr_db(out, wav) > 25


def test_speech_stays_speech_through_the_codec(codec):
    wav, _ = speech_clip(np.random.default_rng(3), 3 * SR, "heldout")
    wav = (0.5 * wav).astype(np.float32)
    out = _round_trip(codec, wav)
    frames = lambda x: np.sqrt(np.mean(x[: x.size // 480 * 480].reshape(-1, 480) ** 2, axis=1))  # noqa: E731
    assert np.corrcoef(frames(out), frames(wav))[0, 1] > 0.9
    assert abs(rms_db(out) - rms_db(wav)) < 1.0
    assert spectral_snr_db(out, wav) > 8


def test_volume_is_an_offset_of_the_amplitude_channels(codec):
    wav = _tone(1.5, 250.0) + _noise(1.5, 0.01)
    quiet, loud = codec.analyse(wav), codec.analyse(wav * 10 ** (6 / 20))
    amplitude = np.r_[codec.harmonic_channels.start : codec.noise_channels.stop]
    active = quiet[:, amplitude] > np.log10(codec.floor) + 0.5
    assert np.allclose((loud - quiet)[:, amplitude][active], 0.3, atol=0.01)  # log10 of 6 dB in amplitude
    assert np.allclose(loud[:, codec.f0_channels], quiet[:, codec.f0_channels], atol=1e-3)


@pytest.mark.parametrize("semitones", [2, -3, 0.5])
def test_a_pitch_shift_moves_f0_by_the_interval(codec, semitones):
    wav = _tone(2.0, 262.0)
    latents = codec.encode(torch.from_numpy(wav)[None])
    out = codec.decode(codec.shift_pitch(latents, semitones))[0].numpy()[: wav.size]
    assert abs(cents(f0_hz(out), f0_hz(wav)) - 100 * semitones) < 5
    assert abs(rms_db(out) - rms_db(wav)) < 0.3


def _circle(codec, latents, period):
    """The normalised channels of one F0 circle, as [..., copies, 2] (cos, sin)."""
    index = codec.f0_circles.index(period)
    pairs = latents[..., codec.fine_f0_channels].unflatten(-1, (len(codec.f0_circles), -1, 2))
    return pairs[..., index, :, :]


def test_whole_semitones_leave_the_one_semitone_circle_and_turn_the_four_semitone_one(codec):
    """The 1-semitone circle is a copy for every shift the app offers; the 4-semitone circle
    turns by a quarter per semitone (a copy for ±4)."""
    latents = codec.encode(torch.from_numpy(_tone(1.0, 390.0))[None])
    raw = lambda x: x * codec.latent_std + codec.latent_mean  # noqa: E731
    for semitones in (-3, 2, 4):
        shifted = codec.shift_pitch(latents, semitones)
        assert torch.allclose(_circle(codec, shifted, 1.0), _circle(codec, latents, 1.0), atol=1e-4)
        before, after = (torch.view_as_complex(_circle(codec, raw(x), 4.0).contiguous()) for x in (latents, shifted))
        turn = torch.angle(after / before)
        expected = torch.tensor(2 * np.pi * semitones / 4)
        assert torch.allclose(torch.remainder(turn - expected + np.pi, 2 * np.pi) - np.pi, torch.zeros(()), atol=1e-4)
        assert not torch.allclose(shifted[..., codec.f0_channels], latents[..., codec.f0_channels], atol=0.1)


def _decoded_cents(codec, wav, coarse_error=0.0, turn_cents=0.0):
    """F0 of the decoded clip against the clip's, after moving the coarse log F0 by
    ``coarse_error`` cents and turning the 4-semitone circle as far as ``turn_cents`` would."""
    latents = codec.encode(torch.from_numpy(wav)[None])
    latents[..., codec.f0_channels] += coarse_error / 1200 / codec.latent_std[codec.f0_channels]
    raw = latents * codec.latent_std + codec.latent_mean
    angle = 2 * np.pi * turn_cents / 400
    cos, sin = _circle(codec, raw, 4.0).unbind(-1)
    turned = torch.stack((np.cos(angle) * cos - np.sin(angle) * sin, np.sin(angle) * cos + np.cos(angle) * sin), -1)
    pairs = raw[..., codec.fine_f0_channels].unflatten(-1, (len(codec.f0_circles), -1, 2))
    pairs[..., codec.f0_circles.index(4.0), :, :] = turned
    raw[..., codec.fine_f0_channels] = pairs.flatten(-3)
    out = codec.decode((raw - codec.latent_mean) / codec.latent_std)[0].numpy()[: wav.size]
    return cents(f0_hz(out), f0_hz(wav))


@pytest.mark.parametrize(("coarse_error", "heard"), [(150, 0), (-190, 0), (250, 400), (-210, -400)])
def test_the_circles_set_f0_when_the_coarse_one_is_within_two_semitones(codec, coarse_error, heard):
    """Where a DiT makes log F0 rather than copying it, it lands 40..170 cents low; the decoder
    takes the 4-semitone span nearest to it, so only errors past two semitones are heard."""
    assert abs(_decoded_cents(codec, _tone(1.5, 233.0), coarse_error=coarse_error) - heard) < 5


@pytest.mark.parametrize(("turn", "heard"), [(40, 0), (-45, 0), (60, 100)])
def test_the_one_semitone_circle_sets_f0_when_the_four_semitone_one_is_within_half_a_semitone(codec, turn, heard):
    """A pitch edit turns the 4-semitone circle (a model's turn may be off); the 1-semitone
    circle, a plain copy, then places F0 within the semitone the turned circle points to."""
    assert abs(_decoded_cents(codec, _tone(1.5, 233.0), turn_cents=turn) - heard) < 5


def test_lowering_the_noise_bands_removes_noise(codec):
    clean = _tone(2.0, 330.0)
    noisy = clean + _noise(2.0, float(np.sqrt(np.mean(clean**2))) / 10 ** (5 / 20))
    raw = codec.analyse(noisy).astype(np.float64)
    raw[:, codec.noise_channels] = np.log10(codec.floor)
    out = codec.synthesise(raw).numpy()[: clean.size]
    assert spectral_snr_db(out, clean) > spectral_snr_db(noisy, clean) + 6  # measured +8


def test_a_tone_in_white_noise_keeps_its_pitch(codec):
    """At 5 dB SNR noise wiggles YIN's curve, and its first wiggle in the period's basin reads
    25..60 cents sharp (27 here); the basin's lowest point and the harmonic refinement each
    bring it within 10."""
    clean = _tone(2.5, 214.2)
    noisy = clean + _noise(2.5, float(np.sqrt(np.mean(clean**2))) / 10 ** (5 / 20), seed=4)
    f0 = [np.median(codec.analyse(wav)[10:-10, codec.f0_channels]) for wav in (clean, noisy)]
    assert abs(1200 * (f0[1] - f0[0])) < 10
    assert abs(1200 * f0[0] - cents(214.2, 220.0)) < 3


def test_a_tone_in_white_noise_keeps_its_harmonics(codec):
    """A held-out denoising clip (a decaying 576 Hz tone at 5 dB SNR in white noise): YIN on the
    whole band keeps only 52 % of the tone's voiced frames (the others carry no harmonics, so
    denoising cannot copy them); below 4 kHz it keeps 77 % (the rest is the tail, where the tone
    has decayed into the noise)."""
    case = heldout_cases("denoise", 4, 0, "tone")[3]
    voiced = [codec.analyse(wav)[:, codec.harmonic_channels.start] > np.log10(codec.floor) + 1
              for wav in (case.target, case.source)]
    assert voiced[0].mean() > 0.95
    assert voiced[1][voiced[0]].mean() > 0.7


def test_harmonics_that_noise_could_explain_are_left_out(codec):
    """A two-partial tone in noise: the lobes of harmonics 3..40 hold noise only, which
    spectral subtraction alone leaves as random remainders (tones at the noise's level)."""
    clean = _tone(2.0, 300.0, amplitudes=(0.3, 0.15))
    noisy = clean + _noise(2.0, 0.05, seed=5)
    harmonics = codec.analyse(noisy)[5:-5, codec.harmonic_channels]
    assert np.all(harmonics[:, :2] > np.log10(codec.floor) + 1)
    assert np.mean(harmonics[:, 2:] > np.log10(codec.floor) + 1) < 0.05


def test_the_length_code_names_the_frame_count(codec):
    """The reference's valid frames (whole hops), which is how far the DiT places the target."""
    raw = codec.analyse(_tone(1.01, 200.0))  # 24240 samples: 50 whole hops and a partial frame
    assert raw.shape[0] == 51
    assert np.allclose(raw[:, codec.code_channels], codec.length_code(50)[None], atol=1e-6)
    assert not np.allclose(codec.length_code(50), codec.length_code(51), atol=0.1)


def test_silence_and_a_single_hop_are_safe(codec):
    for wav in (np.zeros(SR, np.float32), _tone(0.02, 400.0)):
        latents = codec.encode(torch.from_numpy(wav)[None])
        assert torch.isfinite(latents).all()
        out = codec.decode(latents)
        assert torch.isfinite(out).all() and out.abs().max() <= 1.0
    assert codec.decode(codec.encode(torch.zeros(1, SR))).abs().max() == 0


def _write_demo_like(directory, codec):
    dit_config = {"dim": 32, "heads": 2, "dim_head": 16, "ff_mult": 2.0, "latent_dim": codec.latent_dim,
                  "text_hidden_dim": 8, "num_layers": 1, "num_single_layers": 1, "attn_mask_enabled": True}
    from training.codec import CODEC_CONFIG

    return write_auk_checkpoint(
        directory, layout="assembled", dit=AuKTransformer(**dit_config), dit_config=dit_config, vae=codec,
        vae_config=CODEC_CONFIG, layer_weights=torch.zeros(6), layer_scale=torch.ones(1),
        text_encoder={"kind": "minilm"},
    )


def test_the_loader_builds_the_codec_its_config_names(tmp_path, codec):
    _write_demo_like(tmp_path, codec)
    assert json.loads((tmp_path / "config.json").read_text())["vae"]["codec"] == "harmonic_noise"
    model = load_auk_checkpoint(tmp_path)
    assert isinstance(model.vae, HarmonicNoiseCodec)
    assert model.checkpoint.hop == 480 and model.checkpoint.sample_rate == SR
    assert torch.equal(model.vae.latent_std, codec.latent_std)


def test_codec_key_and_setting_errors_are_named(tmp_path, codec):
    _write_demo_like(tmp_path, codec)
    tensors = load_file(str(tmp_path / "vae.safetensors"))
    tensors["extra"] = tensors.pop("latent_std")
    save_file(tensors, str(tmp_path / "vae.safetensors"))
    with pytest.raises(CheckpointError, match="missing keys: latent_std.*unexpected keys: extra"):
        load_auk_checkpoint(tmp_path)

    config = json.loads((tmp_path / "config.json").read_text())
    config["vae"]["model_init_kwargs"]["harmonics"] = 41
    (tmp_path / "config.json").write_text(json.dumps(config))
    wider = codec.latent_dim + 1
    save_file({"latent_mean": torch.zeros(wider), "latent_std": torch.ones(wider)}, str(tmp_path / "vae.safetensors"))
    with pytest.raises(CheckpointError, match=f"{wider} latent channels, the DiT takes {codec.latent_dim}"):
        load_auk_checkpoint(tmp_path)

    config["vae"]["model_init_kwargs"]["wobble"] = 1
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="wobble"):
        load_auk_checkpoint(tmp_path)

    config["vae"]["codec"] = "mp3"
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"vae.codec must be one of .*auk_app.demo.register\(\)"):
        load_auk_checkpoint(tmp_path)


def test_codec_settings_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="one coarse and one fine F0 copy"):
        HarmonicNoiseCodec(HarmonicCodecConfig(f0_fine_copies=0))
    with pytest.raises(ValueError, match=r"largest first, not \[1.0, 4.0\]"):
        HarmonicNoiseCodec(HarmonicCodecConfig(f0_circle_semitones=(1.0, 4.0)))
    with pytest.raises(ValueError, match=r"between the highest F0 \(1100 Hz\) and the Nyquist frequency \(12000 Hz\), not 500 Hz"):
        HarmonicNoiseCodec(HarmonicCodecConfig(yin_lowpass_hz=500.0))
