"""The demo model's codec: a short-time Fourier codec written into AuKVAE's own layers.

Why not a trained BigVGAN-style VAE: a decoder of that family is equivariant to shifts of one
hop, so a latent that stays constant over a stationary tone can only decode to frequencies on
the 50 Hz frame-rate grid. Off-grid pitch needs latents that carry phase, and learning such a
codec from scratch did not converge on two CPU cores (after 1,000 steps of a 1.2 M-parameter
decoder the pitch of test tones was still more than an octave off). So the demo codec is
*constructed*: every latent frame holds the complex STFT of a 960-sample sqrt-Hann window
(bins 1..96, 25 Hz apart: 25 Hz to 2.4 kHz) as real and imaginary parts, and the decoder is
the matching weighted overlap-add, which reconstructs that band exactly. Only the latent
statistics are fitted to data (:func:`fit_statistics`).

How the layers are set so that the nonlinear parts pass the signal through unchanged:
* encoder input conv emits (x, -x); LeakyReLU(0.2) then gives r(x), r(-x) with
  r(x) - r(-x) = 1.2·x exactly, which the strided analysis conv undoes;
* the analysis conv adds 4096 to every coefficient (|coefficient| ≤ 611 for |x| ≤ 1), so the
  following LeakyReLU sees positive values only and is the identity; the head removes it;
* residual stacks and AMP blocks have zero output convolutions (weight_g = 0), so each
  residual branch adds exactly zero;
* SnakeBeta uses α = e^-12, making sin²(αx)/β < 1e-10 for |x| ≤ 1;
* the decoder synthesises 40 polyphase components at 600 Hz (transposed conv 1), which
  transposed conv 2 interleaves into 24 kHz; conv_pre advances one frame so the output lines
  up with the input, up to the 2-sample (0.08 ms) delay of the alias-free low-pass.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from auk_app.auk.vae import AuKVAE

HOP = 480
WINDOW = 2 * HOP  # 960 samples, 40 ms
BINS = tuple(range(1, 97))  # 25 Hz .. 2.4 kHz: five partials of tones up to 480 Hz, four up to 600 Hz
LATENT_DIM = 2 * len(BINS)  # real and imaginary parts
POLYPHASE = 40  # transposed conv 2 stride; transposed conv 1 stride is HOP / POLYPHASE = 12
POSITIVE_SHIFT = 4096.0
LOG_STD = -8.0  # posterior std e^-8 ≈ 3e-4 against coefficients of order 1..600
SNAKE_LOG_ALPHA = -12.0

CODEC_CONFIG = {
    "downsample_rates": [HOP],
    "downsample_channels": [2, LATENT_DIM],
    "upsample_rates": [HOP // POLYPHASE, POLYPHASE],
    "upsample_kernel_sizes": [2 * HOP // POLYPHASE, 2 * POLYPHASE],
    "upsample_initial_channel": LATENT_DIM,
    "resblock_kernel_sizes": [1],
    "resblock_dilation_sizes": [[1]],
    "latent_dim": LATENT_DIM,
    "snake_logscale": True,
    "use_vae": True,
    "causal": True,
    "act_causal": True,
    "sample_rate": 24000,
}


def _analysis_kernels() -> torch.Tensor:
    """[LATENT_DIM, WINDOW]: rows (Re, Im) of sqrt-Hann windowed e^{-i2π b τ / WINDOW}."""
    tau = torch.arange(WINDOW, dtype=torch.float64)
    window = torch.hann_window(WINDOW, periodic=True, dtype=torch.float64).sqrt()
    angles = 2 * math.pi * torch.tensor(BINS, dtype=torch.float64)[:, None] * tau[None] / WINDOW
    return torch.cat((window * torch.cos(angles), -window * torch.sin(angles)))


def _synthesis_kernels() -> torch.Tensor:
    """[LATENT_DIM, WINDOW]: the overlap-add inverse of the analysis for bins 1..144."""
    tau = torch.arange(WINDOW, dtype=torch.float64)
    window = torch.hann_window(WINDOW, periodic=True, dtype=torch.float64).sqrt()
    angles = 2 * math.pi * torch.tensor(BINS, dtype=torch.float64)[:, None] * tau[None] / WINDOW
    scale = 2.0 / WINDOW
    return torch.cat((scale * window * torch.cos(angles), -scale * window * torch.sin(angles)))


def _set(conv, weight: torch.Tensor | None, bias: torch.Tensor | None = None) -> None:
    """Write an effective weight into a weight-normed conv; ``None`` makes it exactly zero.

    A zero slice keeps a non-zero direction (weight_v = 1) with weight_g = 0, because the
    fold divides by ‖weight_v‖.
    """
    with torch.no_grad():
        v = torch.zeros_like(conv.weight_v) if weight is None else weight.float()
        norm = v.reshape(v.shape[0], -1).norm(dim=1).reshape(conv.weight_g.shape)
        dead = norm == 0
        conv.weight_v.copy_(torch.where(dead, torch.ones_like(v), v))
        conv.weight_g.copy_(norm)
        if conv.bias is not None:
            conv.bias.copy_(torch.zeros_like(conv.bias) if bias is None else bias.float())


def build_codec() -> AuKVAE:
    """The constructed codec, weight norm unfolded (as a release stores it), statistics unset."""
    vae = AuKVAE.from_config(CODEC_CONFIG)
    encoder = vae.audio_encoder.generator
    _set(encoder[0].layer, torch.tensor([[[0.0, 1.0, 0.0]], [[0.0, -1.0, 0.0]]]))
    analysis = _analysis_kernels() / 1.2
    _set(encoder[2].layer, torch.stack((analysis, -analysis), dim=1), torch.full((LATENT_DIM,), POSITIVE_SHIFT))
    for unit in encoder[3].layers:
        _set(unit[1], None)
        _set(unit[3], None)
    head = torch.zeros(2 * LATENT_DIM, LATENT_DIM, 3)
    head[torch.arange(LATENT_DIM), torch.arange(LATENT_DIM), 1] = 1.0
    head_bias = torch.cat((torch.full((LATENT_DIM,), -POSITIVE_SHIFT), torch.full((LATENT_DIM,), LOG_STD)))
    _set(encoder[5].layer, head, head_bias)

    conv_pre = torch.zeros(LATENT_DIM, LATENT_DIM, 7)
    conv_pre[torch.arange(LATENT_DIM), torch.arange(LATENT_DIM), 4] = 1.0  # tap +1: frame j uses latent j+1
    _set(vae.conv_pre, conv_pre)
    stride = HOP // POLYPHASE
    synthesis = _synthesis_kernels().reshape(LATENT_DIM, 2 * stride, POLYPHASE)  # τ = 40q + p
    up1 = torch.zeros(LATENT_DIM, LATENT_DIM // 2, 2 * stride)
    up1[:, :POLYPHASE, :] = synthesis.permute(0, 2, 1)
    _set(vae.ups[0][0], up1)
    up2 = torch.zeros(LATENT_DIM // 2, LATENT_DIM // 4, 2 * POLYPHASE)
    up2[torch.arange(POLYPHASE), 0, torch.arange(POLYPHASE)] = 1.0
    _set(vae.ups[1][0], up2)
    for block in vae.resblocks:
        for conv in block.convs1:
            _set(conv, None)
        for conv in block.convs2:
            _set(conv, None)
    for module in vae.modules():
        if module.__class__.__name__ == "SnakeBeta":
            with torch.no_grad():
                module.alpha.fill_(SNAKE_LOG_ALPHA)
                module.beta.zero_()
    post = torch.zeros(1, LATENT_DIM // 4, 7)
    post[0, 0, 6] = 1.0  # causal taps 0..6 read x[t-6..t]: index 6 passes x[t] through
    _set(vae.conv_post, post)
    return vae


def fit_statistics(vae: AuKVAE, clips: list[np.ndarray]) -> None:
    """Zero mean and one shared scale for every channel: the 75th percentile of the clips' raw
    latent RMS, so most clips sit at or below the flow's unit noise and loud partials stay
    within about ±10.

    One scale for all channels (rather than per-channel statistics as in the release) keeps
    squared latent errors proportional to waveform energy (Parseval), which is what the level
    and spectral measures weigh; per-channel scaling would inflate the near-empty high bins.
    """
    with torch.no_grad():
        vae.global_mean.zero_()
        vae.global_log_std.fill_(1.0)
        rms = [vae.encode(torch.from_numpy(c.astype(np.float32))[None]).pow(2).mean().sqrt().item() for c in clips]
        vae.global_log_std.fill_(float(np.percentile(rms, 75)) ** 2)  # the release stores a variance here
