"""A parametric harmonic-plus-noise codec with AuK's codec interface (the demo model's codec).

A checkpoint names it ``harmonic_noise`` in its config's ``vae.codec``; :mod:`auk_app.auk.registry`
imports this module only then.

Legend: b batch, T samples, n frames (one per ``hop`` samples, T ≤ n·hop), L latent channels.

Every 20 ms frame is described by numbers a small DiT can edit with simple moves:

* ``f0``: log2(F0 / 220 Hz), in ``f0_copies`` identical channels that the decoder averages
  (a pitch shift adds a constant; the copies average out generation noise);
* ``f0 circles``: for each period P in ``f0_circle_semitones`` (largest first), cos and sin of
  F0's position within P semitones (angle 2π·12·log2 F0 / P), in ``f0_fine_copies`` pairs. The
  decoder unwraps them in turn: the coarse ``f0`` picks which P-semitone span the first
  circle's position lies in, that estimate picks the span of the next, and so on. A model's
  errors shrink a circle's radius more than they turn its angle, so the coarse ``f0`` only has
  to be right within P/2 of the first period and each circle within half the next one's
  period. The 1-semitone circle is a plain copy for every whole-semitone edit, which the demo
  DiT makes to about a cent; a wider circle makes the coarse value's errors harmless where the
  model makes F0 rather than copying it (text to tone, denoising: 40..170 cents low with the
  1-semitone circle alone, a semitone flat);
* ``length code``: cos and sin of ω·n for the clip's whole hops n = T // hop at each of
  ``length_code_freqs`` (rad per frame). The DiT places the reference's n valid frames before
  the target (its rotary positions skip masked frames), so target frame j sits n positions after
  reference frame j; with these channels in its keys, one rotary attention head can look exactly
  n frames back, where inferring n from positions alone is out of a tiny DiT's reach. The
  decoder ignores them;
* ``harmonics``: log10 amplitude of harmonics 1..K (volume adds a constant; the amplitudes
  follow the harmonic number, so a pitch shift leaves them as they are);
* ``noise``: log10 of the noise's standard deviation per sample in each band (noise removal
  lowers them).

Analysis: YIN (cumulative mean normalised difference), on the clip low-passed at
``yin_lowpass_hz`` when set, gives F0 and aperiodicity; a frame is voiced when its aperiodicity
and level allow (the low-pass keeps most of a voice's periodic energy and drops most of a white
noise: at 5 dB SNR a held-out tone keeps 77 % of its voiced frames, not 52 %); F0 is then
refined to where the spectrum's harmonics peak; harmonic amplitudes are the Blackman-windowed
spectrum's energy around k·F0 less the noise expected there (none where noise could explain the
lobe); noise levels are the mean power of the bins between harmonics. Synthesis: an oscillator
bank on the integrated phase of the interpolated F0, plus seeded white noise shaped band by band
in an STFT. Both are fixed algorithms; the only tensors in the weight file are the latent
statistics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view
from torch import nn

from auk_app.auk.configs import frozen
from auk_app.config import HOP, SAMPLE_RATE

CODEC_NAME = "harmonic_noise"
F0_REFERENCE_HZ = 220.0
YIN_WINDOW = 480  # samples summed per lag: 20 ms, so F0 follows speech glides frame by frame
YIN_PICK = 0.15  # a dip below this is deep enough to be the period
BASIN = 0.06  # the period's basin: lags within 6 % (a semitone) of the first dip
ANALYSIS_FFT = 1024  # Blackman, 43 ms: side lobes at -58 dB; 2048 blurs speech onsets (-1.3 dB SNR)
NOISE_FFT = 960  # synthesis STFT for the noise: 25 Hz bins, 50 % overlap at the 480 hop
HARMONIC_GATE = 3.0  # a harmonic's lobe must hold 3× the noise expected there (4.8 dB above it)
# F0 refinement: ±40 cents in 2-cent steps on an 8× zero-padded spectrum (2.9 Hz bins, so
# interpolating between bins does not pull F0 towards bin centres), harmonics below 5 kHz.
REFINE_CENTS, REFINE_STEP, REFINE_PAD, REFINE_TOP_HZ = 40, 2, 8, 5000.0
LOWPASS_TAPER_HZ = 500.0  # the YIN low-pass falls linearly to zero over this span around its cut-off
TAPER_HZ = 1000.0  # harmonics fade out over this span below the top frequency


@dataclass(frozen=True)
class HarmonicCodecConfig:
    """The codec's settings (a config's ``model_init_kwargs``); see :class:`HarmonicNoiseCodec`."""

    sample_rate: int = SAMPLE_RATE
    hop: int = HOP
    f0_copies: int = 2
    f0_fine_copies: int = 2
    f0_circle_semitones: tuple[float, ...] = (1.0,)
    length_code_freqs: tuple[float, ...] = ()
    harmonics: int = 40
    noise_band_edges_hz: tuple[float, ...] = (0.0, 12_000.0)
    f0_range_hz: tuple[float, ...] = (50.0, 1100.0)
    voicing_aperiodicity: float = 0.4
    yin_lowpass_hz: float | None = None
    silence_db: float = -70.0
    floor_db: float = -100.0
    top_hz: float = 11_000.0
    noise_seed: int = 0
    posterior_std: float = 0.01

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> HarmonicCodecConfig:
        """From a config's settings; one this codec does not know raises ValueError naming it."""
        unknown = sorted(set(kwargs) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown harmonic_noise codec settings {unknown}")
        return cls(**{k: frozen(v) for k, v in kwargs.items()})


class HarmonicNoiseCodec(nn.Module):
    """Waveform [b, T] ↔ normalised latents [b, n, L]; same methods as :class:`AuKVAE`."""

    config_type = HarmonicCodecConfig
    description = "AuK harmonic-noise codec"  # what a key mismatch of its weight file names

    def __init__(self, config: HarmonicCodecConfig = HarmonicCodecConfig()):
        super().__init__()
        self.config = c = config
        if c.noise_band_edges_hz[0] != 0 or c.noise_band_edges_hz[-1] < c.sample_rate / 2:
            raise ValueError("noise bands must start at 0 Hz and reach the Nyquist frequency")
        self.sample_rate, self.hop_size = int(c.sample_rate), int(c.hop)
        if c.f0_copies < 1 or c.f0_fine_copies < 1:
            raise ValueError("the codec needs at least one coarse and one fine F0 copy")
        self.f0_copies, self.f0_fine_copies, self.harmonics = int(c.f0_copies), int(c.f0_fine_copies), int(c.harmonics)
        self.f0_circles = tuple(float(p) for p in c.f0_circle_semitones)
        largest_first = list(self.f0_circles) == sorted(self.f0_circles, reverse=True)
        if not self.f0_circles or min(self.f0_circles) <= 0 or not largest_first:
            raise ValueError(f"f0_circle_semitones must be positive periods, largest first, not {list(self.f0_circles)}")
        self.yin_lowpass_hz = None if c.yin_lowpass_hz is None else float(c.yin_lowpass_hz)
        if self.yin_lowpass_hz is not None and not c.f0_range_hz[1] < self.yin_lowpass_hz < c.sample_rate / 2:
            raise ValueError(
                f"yin_lowpass_hz must lie between the highest F0 ({c.f0_range_hz[1]:g} Hz) and the Nyquist frequency "
                f"({c.sample_rate / 2:g} Hz), not {self.yin_lowpass_hz:g} Hz; "
                "leave it unset to track pitch on the whole band"
            )
        self.length_code_freqs = tuple(float(w) for w in c.length_code_freqs)
        self.band_edges = tuple(float(e) for e in c.noise_band_edges_hz)
        self.f0_range = (float(c.f0_range_hz[0]), float(c.f0_range_hz[1]))
        self.voicing_aperiodicity, self.silence_db = float(c.voicing_aperiodicity), float(c.silence_db)
        self.floor = 10 ** (c.floor_db / 20)
        self.top_hz, self.noise_seed, self.posterior_std = float(c.top_hz), int(c.noise_seed), float(c.posterior_std)
        n_code, n_bands = 2 * len(self.length_code_freqs), len(self.band_edges) - 1
        self.f0_channels = slice(0, self.f0_copies)
        # per circle, largest period first: cos, sin, cos, sin, ... (f0_fine_copies pairs)
        self.fine_f0_channels = slice(self.f0_copies, self.f0_copies + 2 * self.f0_fine_copies * len(self.f0_circles))
        self.pitch_channels = slice(0, self.fine_f0_channels.stop)
        self.code_channels = slice(self.pitch_channels.stop, self.pitch_channels.stop + n_code)
        self.harmonic_channels = slice(self.code_channels.stop, self.code_channels.stop + self.harmonics)
        self.noise_channels = slice(self.harmonic_channels.stop, self.harmonic_channels.stop + n_bands)
        self.latent_dim = self.noise_channels.stop
        self.register_buffer("latent_mean", torch.zeros(self.latent_dim))
        self.register_buffer("latent_std", torch.ones(self.latent_dim))

    @classmethod
    def from_config(cls, cfg: HarmonicCodecConfig | Mapping) -> HarmonicNoiseCodec:
        config = cfg if isinstance(cfg, HarmonicCodecConfig) else HarmonicCodecConfig.from_kwargs(cfg)
        return cls(config)

    def load_weights(self, path: str | Path, *, device: str | torch.device | None = None) -> tuple[list[str], list[str]]:
        """Load the latent statistics; returns ``(missing, unexpected)`` key lists like AuKVAE."""
        from auk_app.weights import check_state_dict, read_safetensors

        if device is not None:
            self.to(device)
        tensors = read_safetensors(path, device=self.latent_mean.device)
        expected = {k: v.shape for k, v in self.state_dict().items()}
        missing = [k for k in expected if k not in tensors]
        unexpected = [k for k in tensors if k not in expected]
        present = {k: v for k, v in tensors.items() if k in expected}
        check_state_dict({k: expected[k] for k in present}, present, source=path, what="harmonic-noise codec")
        self.load_state_dict(present, strict=False)
        return missing, unexpected

    # -- the AuKVAE interface

    def posterior(self, wav: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[b, T] → raw parameters [b, L, n] and a small constant std (the analysis is exact;
        the std only lets the pipeline's ``vae_sample`` draw behave as with a VAE)."""
        raw = np.stack([self.analyse(row) for row in wav.detach().float().cpu().numpy()])
        mean = torch.from_numpy(raw).to(wav.device).transpose(1, 2)
        std = (self.posterior_std * self.latent_std.to(wav.device))[None, :, None].expand_as(mean)
        return mean, std

    def latents(self, mean, std, *, sample: bool = False, generator: torch.Generator | None = None) -> torch.Tensor:
        """Raw [b, L, n] → normalised [b, n, L] (a draw with ``sample``, as AuKVAE.latents)."""
        z = mean.float()
        if sample and std is not None:
            z = z + torch.randn(z.shape, generator=generator, device=z.device) * std
        return (z.transpose(1, 2) - self.latent_mean.to(z.device)) / self.latent_std.to(z.device)

    def encode(self, wav: torch.Tensor, *, sample: bool = False, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.latents(*self.posterior(wav), sample=sample, generator=generator)

    def decode(self, latents: torch.Tensor, *, clamp: bool = True) -> torch.Tensor:
        """Normalised [b, n, L] → waveform [b, n·hop], in [-1, 1] unless ``clamp=False`` (the level as
        synthesised, which the app needs to count and avoid clipping)."""
        raw = (latents.float() * self.latent_std.to(latents.device) + self.latent_mean.to(latents.device)).cpu()
        wav = torch.stack([self.synthesise(row.numpy().astype(np.float64)) for row in raw])
        wav = wav.to(latents.device)
        return wav.clamp(-1.0, 1.0) if clamp else wav

    def shift_pitch(self, latents: torch.Tensor, semitones: float) -> torch.Tensor:
        """Normalised latents [..., L] with F0 moved by ``semitones``: log F0 plus the interval,
        each circle turned by it (the 1-semitone one not at all for whole semitones)."""
        raw = latents * self.latent_std + self.latent_mean
        raw[..., self.f0_channels] += semitones / 12
        pairs = raw[..., self.fine_f0_channels].unflatten(-1, (len(self.f0_circles), -1, 2))  # [..., circle, copy, 2]
        angles = [2 * math.pi * semitones / period for period in self.f0_circles]
        c = torch.tensor([math.cos(a) for a in angles], dtype=raw.dtype, device=raw.device)[:, None]
        s = torch.tensor([math.sin(a) for a in angles], dtype=raw.dtype, device=raw.device)[:, None]
        cos, sin = pairs.unbind(-1)
        turned = torch.stack((c * cos - s * sin, s * cos + c * sin), dim=-1)
        raw[..., self.fine_f0_channels] = turned.flatten(-3)
        return (raw - self.latent_mean) / self.latent_std

    def log2_f0(self, raw: np.ndarray) -> np.ndarray:
        """Raw parameters [n, L] → log2(F0 / 220 Hz) [n]: starting from the coarse copies' mean,
        each circle in turn moves the estimate to the nearest F0 with its position."""
        circles = raw[:, self.fine_f0_channels].reshape(len(raw), len(self.f0_circles), -1, 2).mean(2)
        semitones = 12 * raw[:, self.f0_channels].mean(1)
        for (cos, sin), period in zip(circles.transpose(1, 2, 0), self.f0_circles):
            position = np.arctan2(sin, cos) / (2 * np.pi) * period  # ±period / 2
            semitones = position + period * np.rint((semitones - position) / period)
        return semitones / 12

    # -- analysis

    def frames_for(self, n_samples: int) -> int:
        return max(1, math.ceil(n_samples / self.hop_size))

    def analyse(self, wav: np.ndarray) -> np.ndarray:
        """Mono float waveform [T] → raw parameters [n, L] (see the module docstring)."""
        wav = np.asarray(wav, dtype=np.float64)
        n = self.frames_for(wav.size)
        centres = self.hop_size * np.arange(n) + self.hop_size // 2
        f0, aperiodicity, level = self._yin(self._lowpassed(wav), centres)
        voiced = (aperiodicity < self.voicing_aperiodicity) & (level > max(level.max(), 1e-12) * 10 ** (self.silence_db / 10))
        voiced = _without_single_frames(voiced)
        window = np.blackman(ANALYSIS_FFT + 1)[:-1]
        spectrum = np.abs(np.fft.rfft(self._frames(wav, centres, ANALYSIS_FFT) * window, REFINE_PAD * ANALYSIS_FFT, axis=1))
        power = spectrum[:, ::REFINE_PAD] ** 2
        f0 = _smoothed(_filled(np.log2(f0 / F0_REFERENCE_HZ), voiced))
        f0 = self._refined(f0, spectrum)
        amplitudes, noise_std = self._spectra(power, np.sum(window**2), F0_REFERENCE_HZ * 2**f0, voiced)
        raw = np.empty((n, self.latent_dim))
        raw[:, self.f0_channels] = f0[:, None]
        angles = [2 * np.pi * 12 * f0 / period for period in self.f0_circles]
        raw[:, self.fine_f0_channels] = np.concatenate(
            [np.tile(np.stack((np.cos(a), np.sin(a)), 1), self.f0_fine_copies) for a in angles], axis=1
        )
        raw[:, self.code_channels] = self.length_code(wav.size // self.hop_size)[None]
        raw[:, self.harmonic_channels] = np.log10(np.maximum(amplitudes, self.floor))
        raw[:, self.noise_channels] = np.log10(np.maximum(noise_std, self.floor))
        return raw.astype(np.float32)

    def length_code(self, n_frames: int) -> np.ndarray:
        """[2·len(freqs)]: cos(ω·n) then sin(ω·n) for each frequency, n in whole hops."""
        angles = np.array(self.length_code_freqs) * n_frames
        return np.concatenate((np.cos(angles), np.sin(angles)))

    def _lowpassed(self, wav: np.ndarray) -> np.ndarray:
        """The clip without what lies above ``yin_lowpass_hz`` (zero-phase, in one FFT)."""
        if self.yin_lowpass_hz is None:
            return wav
        freqs = np.fft.rfftfreq(wav.size, 1 / self.sample_rate)
        gain = np.clip((self.yin_lowpass_hz + LOWPASS_TAPER_HZ / 2 - freqs) / LOWPASS_TAPER_HZ, 0.0, 1.0)
        return np.fft.irfft(np.fft.rfft(wav) * gain, wav.size)

    def _frames(self, wav: np.ndarray, centres: np.ndarray, length: int) -> np.ndarray:
        """[n, length] windows of ``wav`` centred on ``centres``, zero outside the clip."""
        padded = np.pad(wav, (length, length))
        return sliding_window_view(padded, length)[centres - length // 2 + length]

    def _yin(self, wav: np.ndarray, centres: np.ndarray):
        """Per frame: F0 (Hz), aperiodicity (the normalised difference at the chosen lag) and
        mean power over the window."""
        fmin, fmax = self.f0_range
        lag_max, lag_min = math.ceil(self.sample_rate / fmin), max(2, math.floor(self.sample_rate / fmax))
        frames = self._frames(wav, centres, YIN_WINDOW + lag_max)
        size = 1 << (frames.shape[1] + YIN_WINDOW).bit_length()
        cross = np.fft.irfft(np.fft.rfft(frames, size) * np.conj(np.fft.rfft(frames[:, :YIN_WINDOW], size)), size)
        energy = np.concatenate((np.zeros((len(frames), 1)), np.cumsum(frames**2, axis=1)), axis=1)
        lags = np.arange(lag_max + 1)
        shifted = energy[:, lags + YIN_WINDOW] - energy[:, lags]
        difference = np.maximum(energy[:, YIN_WINDOW : YIN_WINDOW + 1] + shifted - 2 * cross[:, : lag_max + 1], 0.0)
        cumulative = np.cumsum(difference[:, 1:], axis=1)
        normalised = np.ones_like(difference)
        normalised[:, 1:] = difference[:, 1:] * lags[1:] / np.maximum(cumulative, 1e-20)
        search = normalised[:, lag_min : lag_max]
        # In noise every multiple of the period dips to about the same depth: take the first
        # dip within 20 % of the deepest, not the deepest (an octave or more too low).
        pick = np.maximum(YIN_PICK, 1.2 * search.min(1, keepdims=True))
        is_dip = (search[:, 1:-1] < search[:, :-2]) & (search[:, 1:-1] <= search[:, 2:]) & (search[:, 1:-1] < pick)
        first_dip = np.where(is_dip.any(1), is_dip.argmax(1) + 1, search.argmin(1)) + lag_min
        # Noise makes the curve jagged, so the first dip is often a wiggle on the near side of
        # the period's basin (about 60 cents sharp at 5 dB SNR): take the basin's lowest point.
        basin = (np.abs(lags[None] - first_dip[:, None]) <= BASIN * first_dip[:, None]) & (lags >= lag_min) & (lags < lag_max)
        lag = np.where(basin, difference, np.inf).argmin(1)
        rows = np.arange(len(frames))
        left, mid, right = normalised[rows, lag - 1], normalised[rows, lag], normalised[rows, np.minimum(lag + 1, lag_max)]
        curvature = left - 2 * mid + right
        offset = np.where(curvature > 1e-12, 0.5 * (left - right) / np.maximum(curvature, 1e-12), 0.0)
        f0 = self.sample_rate / (lag + np.clip(offset, -1, 1))
        level = energy[:, YIN_WINDOW] / YIN_WINDOW
        return np.clip(f0, fmin, fmax), mid, level

    def _refined(self, f0: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
        """log2 F0 moved within ±REFINE_CENTS to where the magnitudes at its harmonics below
        REFINE_TOP_HZ sum highest: harmonic k multiplies an F0 error by k, so the upper harmonics
        of speech pin F0 down finer than YIN's 20 ms lag search (which misses glides inside it)."""
        steps = np.linspace(-REFINE_CENTS, REFINE_CENTS, 2 * REFINE_CENTS // REFINE_STEP + 1) / 1200
        candidates = F0_REFERENCE_HZ * 2 ** (f0[:, None] + steps[None])  # [n, c]
        k = np.arange(1, self.harmonics + 1)
        bin_hz = self.sample_rate / (REFINE_PAD * ANALYSIS_FFT)
        bins = candidates[:, :, None] * k[None, None] / bin_hz  # [n, c, K]
        usable = bins < REFINE_TOP_HZ / bin_hz
        low = np.minimum(bins.astype(int), magnitude.shape[1] - 2)
        frac = bins - low
        rows = np.arange(len(f0))[:, None, None]
        at = (1 - frac) * magnitude[rows, low] + frac * magnitude[rows, low + 1]
        score = np.sum(at * usable, axis=2)  # [n, c]
        return f0 + steps[score.argmax(1)]

    def _spectra(self, power, window_energy, f0, voiced):
        """Harmonic amplitudes [n, K] and per-band noise std [n, bands] from a Blackman STFT's power."""
        freqs = np.arange(power.shape[1]) * self.sample_rate / ANALYSIS_FFT
        bin_hz = self.sample_rate / ANALYSIS_FFT
        k = np.arange(1, self.harmonics + 1)
        centre_hz = f0[:, None] * k[None]  # [n, K]
        half_width = np.minimum(np.maximum(0.15 * f0, 4 * bin_hz), 0.5 * f0)[:, None]
        # Bin b belongs to harmonic round(f/F0) when within half_width of it (voiced frames only).
        nearest = np.rint(freqs[None] / f0[:, None])  # [n, bins]
        in_lobe = (np.abs(freqs[None] - nearest * f0[:, None]) <= half_width) & (nearest >= 1)
        in_lobe &= (nearest <= self.harmonics) & voiced[:, None]
        band = np.clip(np.searchsorted(self.band_edges, freqs, side="right") - 1, 0, len(self.band_edges) - 2)
        onehot = (band[:, None] == np.arange(len(self.band_edges) - 1)[None]).astype(float)  # [bins, bands]
        noise_bins = ~in_lobe
        counts = noise_bins.astype(float) @ onehot
        noise_power = ((power * noise_bins) @ onehot) / np.maximum(counts, 1)  # mean |X|² per band
        for row in np.flatnonzero((counts == 0).any(1) & (counts > 0).any(1)):  # bands inside one lobe
            seen = counts[row] > 0
            noise_power[row, ~seen] = np.interp(np.flatnonzero(~seen), np.flatnonzero(seen), noise_power[row, seen])
        noise_std = np.sqrt(noise_power / window_energy)
        # Harmonic energy: sum over its lobe, less the noise power expected in those bins.
        harmonic_index = np.where(in_lobe, nearest, 0).astype(int)
        lobe_energy = np.zeros((len(power), self.harmonics + 1))
        np.add.at(lobe_energy, (np.repeat(np.arange(len(power)), power.shape[1]), harmonic_index.ravel()), power.ravel())
        lobe_bins = np.zeros_like(lobe_energy)
        np.add.at(lobe_bins, (np.repeat(np.arange(len(power)), power.shape[1]), harmonic_index.ravel()), 1.0)
        band_of_harmonic = np.clip(np.searchsorted(self.band_edges, centre_hz, side="right") - 1, 0, len(self.band_edges) - 2)
        expected_noise = np.take_along_axis(noise_power, band_of_harmonic, axis=1) * lobe_bins[:, 1:]
        # A lobe that noise alone could fill is no harmonic (spectral subtraction leaves such
        # lobes a random remainder, which would sound as a tone at the noise's level).
        energy = np.where(lobe_energy[:, 1:] > HARMONIC_GATE * expected_noise, lobe_energy[:, 1:] - expected_noise, 0.0)
        amplitudes = np.sqrt(4 * energy / (ANALYSIS_FFT * window_energy))
        amplitudes[centre_hz > self.sample_rate / 2] = 0.0
        return amplitudes, noise_std

    # -- synthesis

    def synthesise(self, raw: np.ndarray) -> torch.Tensor:
        """Raw parameters [n, L] → waveform [n·hop] (float32 tensor, not clamped)."""
        n, hop = raw.shape[0], self.hop_size
        length = n * hop
        position = np.clip((np.arange(length) - hop / 2 + 0.5) / hop, 0, n - 1)  # frame coordinate per sample
        f0 = self.f0_at(raw, np.arange(n), position)
        phase = 2 * np.pi * np.cumsum(f0 / self.sample_rate)
        wav = self.oscillators(raw, np.arange(n), position, f0, phase) + self._noise(raw, length)
        return torch.from_numpy(wav).float()

    def stream(self) -> HarmonicStream:
        """A decoder of a long latent sequence a chunk at a time (see :class:`HarmonicStream`)."""
        return HarmonicStream(self)

    def f0_at(self, raw: np.ndarray, frames: np.ndarray, position: np.ndarray) -> np.ndarray:
        """F0 in Hz at each sample's ``position``, from raw rows [m, L] at recording ``frames`` [m]."""
        return F0_REFERENCE_HZ * 2 ** np.interp(position, frames, self.log2_f0(raw))

    def oscillators(self, raw: np.ndarray, frames: np.ndarray, position: np.ndarray, f0: np.ndarray,
                    phase: np.ndarray) -> np.ndarray:
        """The harmonics at each sample's ``position`` (raw rows [m, L] at recording ``frames``)."""
        amplitudes = np.maximum(10 ** raw[:, self.harmonic_channels] - self.floor, 0.0)
        wav = np.zeros(position.size)
        for k in range(1, self.harmonics + 1):
            amplitude = np.interp(position, frames, amplitudes[:, k - 1])
            fade = np.clip((self.top_hz - k * f0) / TAPER_HZ, 0.0, 1.0)
            if np.any(amplitude * fade > 0):
                # Schroeder phases keep the crest factor low when many harmonics line up.
                wav += amplitude * fade * np.sin(k * phase + np.pi * k * (k - 1) / self.harmonics)
        return wav

    def noise_std(self, raw: np.ndarray) -> np.ndarray:
        """Each frame's noise standard deviation per sample in each band [m, bands]."""
        return np.maximum(10 ** raw[:, self.noise_channels] - self.floor, 0.0)

    def noise_bands(self) -> np.ndarray:
        """The band of each bin of the noise's STFT."""
        freqs = np.fft.rfftfreq(NOISE_FFT, 1 / self.sample_rate)
        return np.clip(np.searchsorted(self.band_edges, freqs, side="right") - 1, 0, len(self.band_edges) - 2)

    def _noise(self, raw: np.ndarray, length: int) -> np.ndarray:
        """Seeded white noise with the per-band std of each frame, shaped in a 960-point STFT
        whose frames sit on the hop grid (between two parameter frames: their mean)."""
        n, hop = raw.shape[0], self.hop_size
        std = self.noise_std(raw)  # [n, bands]
        if not np.any(std > 0):
            return np.zeros(length)
        on_grid = 0.5 * (std[np.clip(np.arange(n + 1) - 1, 0, n - 1)] + std[np.clip(np.arange(n + 1), 0, n - 1)])
        band = self.noise_bands()
        generator = torch.Generator().manual_seed(self.noise_seed)
        white = torch.randn(length, generator=generator, dtype=torch.float64)
        window = torch.hann_window(NOISE_FFT, dtype=torch.float64)
        spectrum = torch.stft(white, NOISE_FFT, hop, window=window, pad_mode="constant", return_complex=True)  # [bins, n + 1]
        gains = torch.from_numpy(on_grid[:, band].T)
        return torch.istft(spectrum * gains, NOISE_FFT, hop, window=window, length=length).numpy()


class HarmonicStream:
    """:meth:`HarmonicNoiseCodec.decode` of a long latent sequence, a chunk at a time, with the whole
    decode's samples (a :class:`~auk_app.auk.stream_decode.StreamDecoder`).

    A sample is final once the frame after its own is known. The oscillators' phase sums on from
    the previous chunk in the whole decode's order. The white noise is the whole decode's seeded
    stream, drawn as it is needed: torch draws normal numbers 16 at a time, so draws of whole hops
    (multiples of 16 samples) continue one another exactly. Each chunk's noise frames are shaped
    and overlap-added as the whole decode's inverse STFT adds them, over the same frames. Memory
    holds a chunk, a frame before it and the noise its frames read.
    """

    def __init__(self, codec: HarmonicNoiseCodec):
        if codec.hop_size % 16:
            raise ValueError(f"the harmonic codec streams its noise in whole hops of a multiple of 16 samples, "
                             f"not {codec.hop_size}")
        self.codec, self.hop = codec, codec.hop_size
        self._rows = np.zeros((0, codec.latent_dim))  # raw parameters of the held frames
        self._offset = 0  # the recording frame of _rows[0]
        self._done = 0  # frames whose samples went out
        self._phase_sum = 0.0  # Σ f0 / rate over the samples that went out
        self._generator = torch.Generator().manual_seed(codec.noise_seed)
        self._white = np.zeros(0)  # the noise stream's samples from _white_start on
        self._white_start = 0
        self._window = torch.hann_window(NOISE_FFT, dtype=torch.float64).numpy()
        self._band = codec.noise_bands()

    def push(self, latents: torch.Tensor) -> np.ndarray:
        c = self.codec
        raw = (latents.float() * c.latent_std.to(latents.device) + c.latent_mean.to(latents.device)).cpu()
        self._rows = np.concatenate((self._rows, raw.numpy().astype(np.float64)))
        return self._emit(self._known - 1, final=False)

    def end(self) -> np.ndarray:
        return self._emit(self._known, final=True)

    @property
    def _known(self) -> int:
        return self._offset + self._rows.shape[0]

    def _emit(self, stop: int, *, final: bool) -> np.ndarray:
        """The samples of frames [done, stop)."""
        start, hop = self._done, self.hop
        if stop <= start:
            return np.zeros(0, np.float32)
        first, last = max(start - 1, 0), min(stop, self._known - 1)  # the rows the samples interpolate between
        rows, frames = self._rows[first - self._offset : last + 1 - self._offset], np.arange(first, last + 1)
        position = np.clip((np.arange(start * hop, stop * hop) - hop / 2 + 0.5) / hop, 0, self._known - 1)
        f0 = self.codec.f0_at(rows, frames, position)
        sums = np.cumsum(np.concatenate(([self._phase_sum], f0 / self.codec.sample_rate)))[1:]
        wav = self.codec.oscillators(rows, frames, position, f0, 2 * np.pi * sums) + self._noise(start, stop, final)
        self._phase_sum, self._done = float(sums[-1]), stop
        keep = max(stop - 1, 0) - self._offset  # the next chunk starts interpolating from frame stop - 1
        self._rows, self._offset = self._rows[keep:], self._offset + keep
        return wav.astype(np.float32)

    def _noise(self, start: int, stop: int, final: bool) -> np.ndarray:
        """The shaped noise of frames [start, stop): the STFT frames that cover them, each centred on
        its hop, with gains between the two parameter frames around it (see ``HarmonicNoiseCodec._noise``)."""
        hop, half, known = self.hop, NOISE_FFT // 2, self._known
        low = max(0, -(-(start * hop - half + 1) // hop))
        high = min(known, (stop * hop - 1 + half) // hop)  # the whole decode has frames 0..n
        std = self.codec.noise_std(self._rows)
        local = lambda j: np.clip(j, 0, known - 1) - self._offset  # noqa: E731
        j = np.arange(low, high + 1)
        gains = (0.5 * (std[local(j - 1)] + std[local(j)]))[:, self._band]
        begin = low * hop - half
        white = self._white_between(begin, high * hop + half, known * hop if final else None)
        frames = np.lib.stride_tricks.sliding_window_view(white, NOISE_FFT)[::hop]
        shaped = np.fft.irfft(np.fft.rfft(frames * self._window, axis=1) * gains, NOISE_FFT, axis=1) * self._window
        added, envelope = np.zeros(white.size), np.zeros(white.size)
        for i, frame in enumerate(shaped):
            added[i * hop : i * hop + NOISE_FFT] += frame
            envelope[i * hop : i * hop + NOISE_FFT] += self._window**2
        self._drop_white_before(stop * hop - half)
        span = slice(start * hop - begin, stop * hop - begin)
        return added[span] / envelope[span]

    def _white_between(self, begin: int, end: int, length: int | None) -> np.ndarray:
        """The noise stream's samples [begin, end): zeros before 0 and from ``length`` (the clip's end) on."""
        needed = end if length is None else min(end, length)
        drawn = self._white_start + self._white.size
        if needed > drawn:
            more = -(-(needed - drawn) // self.hop) * self.hop  # whole hops, so draws continue one another
            more = more if length is None else min(more, length - drawn)
            fresh = torch.randn(more, generator=self._generator, dtype=torch.float64).numpy()
            self._white = np.concatenate((self._white, fresh))
        out = np.zeros(end - begin)
        lo, hi = max(begin, self._white_start), min(end, self._white_start + self._white.size)
        if hi > lo:
            out[lo - begin : hi - begin] = self._white[lo - self._white_start : hi - self._white_start]
        return out

    def _drop_white_before(self, sample: int) -> None:
        drop = min(max(0, sample - self._white_start), self._white.size)
        self._white, self._white_start = self._white[drop:], self._white_start + drop


def _without_single_frames(voiced: np.ndarray) -> np.ndarray:
    """Drop voiced runs of one frame: a lone periodic frame in noise is a tracker accident."""
    out = voiced.copy()
    padded = np.pad(voiced, 1)
    out[voiced & ~padded[:-2] & ~padded[2:]] = False
    return out


def _smoothed(track: np.ndarray) -> np.ndarray:
    """A 3-frame median: 20 ms YIN jumps by ±30 cents in noise, and such a jump costs more at
    the high harmonics than the median costs a speech glide."""
    padded = np.pad(track, 1, mode="edge")
    return np.median(np.stack((padded[:-2], padded[1:-1], padded[2:])), axis=0)


def _filled(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``values`` where ``known``, linear interpolation between known frames elsewhere, held
    at the ends; zeros when nothing is known."""
    if not known.any():
        return np.zeros_like(values)
    index = np.arange(values.size)
    return np.interp(index, index[known], values[known])

