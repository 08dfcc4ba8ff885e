"""The demo model's codec: harmonic-plus-noise settings and the fit of its latent statistics.

Why a parametric codec (auk_app/demo/harmonic_codec.py) and not a learned or STFT one: an
exact STFT written into AuKVAE's layers gives latents that carry phase; a pitch shift then asks
the DiT to re-synthesise rotating phases, which a small model does not learn (on such a codec
±2 semitones come out as +10 cents). Here volume is an offset of the log
amplitudes, pitch an offset of log F0 and noise removal a lowering of the noise bands, and the
length code lets the DiT line target frames up with reference frames.
"""

from __future__ import annotations

import numpy as np
import torch

from auk_app.config import HOP, SAMPLE_RATE
from auk_app.demo.harmonic_codec import HarmonicNoiseCodec

DIT_DIM_HEAD = 64
ROPE_THETA = 10_000.0
# Every second rotary frequency from the fastest (1 rad/frame) down to 0.056 rad/frame: their
# cosines sum to their maximum only at offset 0 within 300 frames (off-peak at most 0.58 of it).
LENGTH_CODE_FREQS = [ROPE_THETA ** (-2 * i / DIT_DIM_HEAD) for i in (0, 2, 4, 6, 8, 10)]
# Bark-like bands, at least 100 Hz wide so that noise bins between harmonics remain in each.
NOISE_BAND_EDGES_HZ = [0, 100, 200, 300, 400, 510, 630, 770, 920, 1080, 1270, 1480, 1720, 2000, 2320, 2700,
                       3150, 3700, 4400, 5300, 6400, 7700, 9500, 12000]  # fmt: skip
CODEC_CONFIG = {
    "sample_rate": SAMPLE_RATE,
    "hop": HOP,
    "f0_copies": 4,
    "f0_fine_copies": 2,
    "f0_circle_semitones": [4.0, 1.0],
    "length_code_freqs": LENGTH_CODE_FREQS,
    "harmonics": 40,
    "noise_band_edges_hz": NOISE_BAND_EDGES_HZ,
    "f0_range_hz": [50.0, 1100.0],
    # YIN on the clip below 4 kHz, voiced up to aperiodicity 0.5: at 5 dB SNR in white noise the
    # noisy analysis keeps harmonics where the clean one has them, so denoising can copy them
    # (codec alone, held-out: +10.6 dB SNR on tones, +7.0 on speech; with YIN on the whole band at
    # 0.4, the codec's defaults: +7.6 and +4.1).
    "voicing_aperiodicity": 0.5,
    "yin_lowpass_hz": 4000.0,
}
# Log F0 is spread 6× wider than the other channels after normalisation, in 4 copies: the
# flow's errors are about equal per channel, and 50 cents is a much finer tolerance than 1.5 dB.
# The model still lands it only within tens of cents, and where it makes log F0 rather than
# copying it (text to tone, denoise) 40..170 cents low; so coarse log F0 just picks a 4-semitone
# span, the 4-semitone circle the semitone in it, and the 1-semitone circle F0 within that.
F0_EMPHASIS = 6.0
# The F0 circles (unit circles) at 3× their spread: an error of 0.1 in the 1-semitone one is then
# about a cent.
FINE_F0_EMPHASIS = 3.0
MIN_STD = 0.05


def build_codec() -> HarmonicNoiseCodec:
    return HarmonicNoiseCodec.from_config(CODEC_CONFIG)


def fit_statistics(codec: HarmonicNoiseCodec, clips: list[np.ndarray]) -> None:
    """Per-channel mean and std of the raw parameters over ``clips`` (the length code is left
    as it is: it lies on the unit circle), with log F0 and its fine code emphasised."""
    raw = np.concatenate([codec.analyse(clip) for clip in clips]).astype(np.float64)
    mean, std = raw.mean(0), np.maximum(raw.std(0), MIN_STD)
    mean[codec.code_channels], std[codec.code_channels] = 0.0, 1.0
    std[codec.f0_channels] /= F0_EMPHASIS
    std[codec.fine_f0_channels] /= FINE_F0_EMPHASIS
    with torch.no_grad():
        codec.latent_mean.copy_(torch.from_numpy(mean))
        codec.latent_std.copy_(torch.from_numpy(std))
