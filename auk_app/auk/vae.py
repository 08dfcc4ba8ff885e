"""AuK's codec ("BigVGANFlowVAE"): 24 kHz mono waveform <-> 50 Hz, 64-channel latents.

Legend: b batch, T samples, n latent frames (T = n·hop), L latent channels, C conv channels.

The encoder is a non-causal strided conv stack with residual stacks that emits a posterior
mean and log-std; the decoder is a mostly causal BigVGAN-v2 generator (alias-free SnakeBeta
activations, AMP blocks) whose output is clamped to [-1, 1]. Latents are normalised by the
checkpoint's global statistics: ``(z - global_mean) / sqrt(global_log_std)`` — the release
stores a variance under the name ``global_log_std``.

Every conv carries the release's legacy weight-norm tensors (``weight_g``, ``weight_v``) until
:meth:`AuKVAE.remove_weight_norm` folds them into plain ``weight`` tensors. The training-only
normalising flow (``flow.*``) is not built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from auk_app.auk.configs import VAEConfig
from auk_app.config import SAMPLE_RATE

TRAINING_ONLY_PREFIX = "flow."
_FILTER_TAPS = 12


class NormedConv(nn.Module):
    """Conv1d or ConvTranspose1d with the legacy weight-norm parametrisation (dim 0).

    Padding is explicit (left, right) zero padding; a causal transposed conv drops its last
    ``stride`` samples so the length grows by exactly ``stride``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        *,
        stride: int = 1,
        dilation: int = 1,
        padding: tuple[int, int] = (0, 0),
        bias: bool = True,
        transpose: bool = False,
    ):
        super().__init__()
        shape = (in_channels, out_channels, kernel_size) if transpose else (out_channels, in_channels, kernel_size)
        weight = torch.empty(shape)
        nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
        self.weight_v = nn.Parameter(weight)
        self.weight_g = nn.Parameter(_norm_except_dim0(weight))
        self.bias = nn.Parameter(torch.zeros(shape[0 if not transpose else 1])) if bias else None
        self.stride, self.dilation, self.padding, self.transpose = stride, dilation, padding, transpose

    @property
    def folded(self) -> bool:
        return "weight" in self._parameters

    def fold(self) -> None:
        """Replace weight_g/weight_v by ``weight = v · (g / ‖v‖)``; a no-op once folded."""
        if self.folded:
            return
        with torch.no_grad():
            weight = self.weight_v * (self.weight_g / _norm_except_dim0(self.weight_v))
        del self.weight_g, self.weight_v
        self.weight = nn.Parameter(weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight if self.folded else self.weight_v * (self.weight_g / _norm_except_dim0(self.weight_v))
        x = F.pad(x, self.padding)
        if self.transpose:
            y = F.conv_transpose1d(x, weight, self.bias, stride=self.stride)
            return y[..., : -self.stride]
        return F.conv1d(x, weight, self.bias, stride=self.stride, dilation=self.dilation)


def _norm_except_dim0(v: torch.Tensor) -> torch.Tensor:
    return v.reshape(v.shape[0], -1).norm(2, dim=1).reshape(-1, *([1] * (v.dim() - 1)))


def _causal(kernel_size: int, dilation: int = 1) -> tuple[int, int]:
    return (dilation * (kernel_size - 1), 0)


def _same(kernel_size: int, dilation: int = 1) -> tuple[int, int]:
    pad = dilation * (kernel_size - 1) // 2
    return (pad, pad)


# ----------------------------------------------------------------------------- encoder


class ConvLayer(nn.Module):
    """The encoder's weight-normed conv, stored under ``.layer`` in the release."""

    def __init__(self, in_channels, out_channels, kernel_size, *, stride=1, padding):
        super().__init__()
        self.layer = NormedConv(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.layer(x)


class ResStack(nn.Module):
    """Six residual units; unit k: LReLU(0.01) → conv(k3, dilation 2^k) → LReLU(0.01) → conv(k3)."""

    def __init__(self, channels: int, units: int = 6):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(
                nn.LeakyReLU(),
                NormedConv(channels, channels, 3, dilation=2**k, padding=_same(3, 2**k)),
                nn.LeakyReLU(),
                NormedConv(channels, channels, 3, padding=_same(3)),
            )
            for k in range(units)
        )

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class Encoder(nn.Module):
    """Waveform [b, 1, T] → posterior statistics [b, 2L, n] (mean first, then log-std)."""

    def __init__(self, *, latent_dim: int, channels: Sequence[int], down_sample_factors: Sequence[int], use_vae: bool):
        super().__init__()
        layers: list[nn.Module] = [ConvLayer(1, channels[0], 3, padding=_same(3)), nn.LeakyReLU(0.2)]
        for c_in, c_out, factor in zip(channels[:-1], channels[1:], down_sample_factors):
            kernel = 2 * factor
            pad = (kernel - 1) // 2
            layers += [ConvLayer(c_in, c_out, kernel, stride=factor, padding=(pad, pad)), ResStack(c_out), nn.LeakyReLU(0.2)]
        layers.append(ConvLayer(channels[-1], 2 * latent_dim if use_vae else latent_dim, 3, padding=_same(3)))
        self.generator = nn.Sequential(*layers)

    def forward(self, wav):
        return self.generator(wav)


# ----------------------------------------------------------------------------- decoder


def kaiser_sinc_filter(cutoff: float, half_width: float, kernel_size: int) -> torch.Tensor:
    """Kaiser-windowed sinc low-pass taps [1, 1, K], normalised to unit sum."""
    half_size = kernel_size // 2
    attenuation = 2.285 * (half_size - 1) * math.pi * (4 * half_width) + 7.95
    if attenuation > 50.0:
        beta = 0.1102 * (attenuation - 8.7)
    elif attenuation >= 21.0:
        beta = 0.5842 * (attenuation - 21) ** 0.4 + 0.07886 * (attenuation - 21.0)
    else:
        beta = 0.0
    window = torch.kaiser_window(kernel_size, beta=beta, periodic=False)
    if kernel_size % 2 == 0:
        time = torch.arange(-half_size, half_size) + 0.5
    else:
        time = torch.arange(kernel_size) - half_size
    taps = 2 * cutoff * window * torch.sinc(2 * cutoff * time)
    return (taps / taps.sum()).view(1, 1, kernel_size)


class UpSample1d(nn.Module):
    """×2 band-limited upsampling (non-causal): replicate-pad, polyphase transposed conv, crop."""

    def __init__(self, ratio: int = 2, kernel_size: int = _FILTER_TAPS):
        super().__init__()
        self.ratio = ratio
        self.pad = kernel_size // ratio - 1
        self.crop_left = self.pad * ratio + (kernel_size - ratio) // 2
        self.crop_right = self.pad * ratio + (kernel_size - ratio + 1) // 2
        self.register_buffer("filter", kaiser_sinc_filter(0.5 / ratio, 0.6 / ratio, kernel_size))

    def forward(self, x):
        return upsample(x, self.filter, self.geometry)

    @property
    def geometry(self) -> tuple[int, int, int, int]:
        """(ratio, pad, crop_left, crop_right), the arguments of :func:`upsample` besides the taps."""
        return self.ratio, self.pad, self.crop_left, self.crop_right


def upsample(x: torch.Tensor, taps: torch.Tensor, geometry: tuple[int, int, int, int]) -> torch.Tensor:
    """:class:`UpSample1d` as a free function of tensors (for torch.compile without modules)."""
    ratio, pad, crop_left, crop_right = geometry
    channels = x.shape[1]
    x = F.pad(x, (pad, pad), mode="replicate")
    x = ratio * F.conv_transpose1d(x, taps.expand(channels, -1, -1), stride=ratio, groups=channels)
    return x[..., crop_left : x.shape[-1] - crop_right]


class LowPassFilter1d(nn.Module):
    def __init__(self, cutoff: float, half_width: float, stride: int, kernel_size: int, causal: bool):
        super().__init__()
        self.stride = stride
        even = kernel_size % 2 == 0
        self.padding = (kernel_size - 1, 0) if causal else (kernel_size // 2 - int(even), kernel_size // 2)
        self.register_buffer("filter", kaiser_sinc_filter(cutoff, half_width, kernel_size))

    def forward(self, x):
        return lowpass(x, self.filter, self.geometry)

    @property
    def geometry(self) -> tuple[tuple[int, int], int]:
        """(padding, stride), the arguments of :func:`lowpass` besides the taps."""
        return self.padding, self.stride


def lowpass(x: torch.Tensor, taps: torch.Tensor, geometry: tuple[tuple[int, int], int]) -> torch.Tensor:
    """:class:`LowPassFilter1d` as a free function of tensors (for torch.compile without modules)."""
    padding, stride = geometry
    channels = x.shape[1]
    x = F.pad(x, padding, mode="replicate")
    return F.conv1d(x, taps.expand(channels, -1, -1), stride=stride, groups=channels)


class DownSample1d(nn.Module):
    def __init__(self, ratio: int = 2, kernel_size: int = _FILTER_TAPS, causal: bool = True):
        super().__init__()
        self.lowpass = LowPassFilter1d(0.5 / ratio, 0.6 / ratio, ratio, kernel_size, causal)

    def forward(self, x):
        return self.lowpass(x)


class SnakeBeta(nn.Module):
    """``x + 1/(β + 1e-9) · sin²(α·x)`` per channel, α and β stored in log space."""

    def __init__(self, channels: int, alpha_logscale: bool = True):
        super().__init__()
        self.alpha_logscale = alpha_logscale
        init = torch.zeros(channels) if alpha_logscale else torch.ones(channels)
        self.alpha = nn.Parameter(init.clone())
        self.beta = nn.Parameter(init.clone())

    def forward(self, x):
        return snake_beta(x, self.alpha, self.beta, self.alpha_logscale)


def snake_beta(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor, logscale: bool) -> torch.Tensor:
    """SnakeBeta of [b, C, T] with parameters [C]: a free function of tensors, so that torch.compile
    fuses it (and the coefficients' exp) into one kernel with its neighbours; eager runs nine."""
    alpha, beta = alpha[None, :, None], beta[None, :, None]
    if logscale:
        alpha, beta = alpha.exp(), beta.exp()
    return x + (1.0 / (beta + 1e-9)) * torch.sin(x * alpha).pow(2)


class AliasFreeActivation(nn.Module):
    """Upsample ×2, SnakeBeta, low-pass and downsample ×2, so the nonlinearity does not alias."""

    def __init__(self, act: nn.Module, *, causal: bool):
        super().__init__()
        self.act = act
        self.upsample = UpSample1d()
        self.downsample = DownSample1d(causal=causal)

    def forward(self, x):
        return self.downsample(self.act(self.upsample(x)))


class AMPBlock(nn.Module):
    """Residual pairs act → conv(dilation d) → act → conv(dilation 1), causal, one pair per dilation."""

    def __init__(self, channels, kernel_size, dilations, *, snake_logscale, causal, act_causal):
        super().__init__()
        pad = _causal if causal else _same
        self.convs1 = nn.ModuleList(
            NormedConv(channels, channels, kernel_size, dilation=d, padding=pad(kernel_size, d)) for d in dilations
        )
        self.convs2 = nn.ModuleList(
            NormedConv(channels, channels, kernel_size, padding=pad(kernel_size)) for _ in dilations
        )
        self.activations = nn.ModuleList(
            AliasFreeActivation(SnakeBeta(channels, snake_logscale), causal=act_causal) for _ in range(2 * len(dilations))
        )

    def forward(self, x):
        for j, (c1, c2) in enumerate(zip(self.convs1, self.convs2)):
            x = x + c2(self.activations[2 * j + 1](c1(self.activations[2 * j](x))))
        return x


# ----------------------------------------------------------------------------- the codec


class AuKVAE(nn.Module):
    """AuK's audio codec: :meth:`encode` waveform to normalised latents, :meth:`decode` back."""

    config_type = VAEConfig
    description = "AuK VAE"  # what a key mismatch of its weight file names

    def __init__(
        self,
        *,
        upsample_rates: Sequence[int],
        upsample_kernel_sizes: Sequence[int],
        upsample_initial_channel: int,
        resblock_kernel_sizes: Sequence[int],
        resblock_dilation_sizes: Sequence[Sequence[int]],
        downsample_rates: Sequence[int],
        downsample_channels: Sequence[int],
        latent_dim: int = 64,
        snake_logscale: bool = True,
        use_vae: bool = True,
        causal: bool = True,
        act_causal: bool = True,
        sample_rate: int = SAMPLE_RATE,
    ):
        super().__init__()
        # The arguments above as one frozen config: the rate and hop below are read from it.
        self.config = VAEConfig.from_kwargs({k: v for k, v in locals().items() if k in self._CONFIG_KEYS})
        if math.prod(upsample_rates) != math.prod(downsample_rates):
            raise ValueError(
                f"upsample_rates {list(upsample_rates)} and downsample_rates {list(downsample_rates)} "
                "must have the same product (the hop size)"
            )
        if len(downsample_channels) != len(downsample_rates) + 1:
            raise ValueError("downsample_channels needs one more entry than downsample_rates")
        self.sample_rate = self.config.sample_rate
        self.causal = causal and act_causal  # whether the decoder reads only the past (bar two look-aheads)
        self.hop_size = self.config.hop
        self.latent_dim = latent_dim
        self.use_vae = use_vae
        self.num_kernels = len(resblock_kernel_sizes)
        self.num_upsamples = len(upsample_rates)

        self.audio_encoder = Encoder(
            latent_dim=latent_dim,
            channels=tuple(downsample_channels),
            down_sample_factors=tuple(downsample_rates),
            use_vae=use_vae,
        )
        self.register_buffer("global_mean", torch.zeros(latent_dim))
        self.register_buffer("global_log_std", torch.ones(latent_dim))

        self.conv_pre = NormedConv(latent_dim, upsample_initial_channel, 7, padding=_same(7))
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        channels = upsample_initial_channel
        for rate, kernel in zip(upsample_rates, upsample_kernel_sizes):
            if kernel != 2 * rate:
                raise ValueError(f"upsample kernel {kernel} must be twice its rate {rate} for the causal crop")
            self.ups.append(nn.ModuleList([NormedConv(channels, channels // 2, kernel, stride=rate, transpose=True)]))
            channels //= 2
            for k, dilations in zip(resblock_kernel_sizes, resblock_dilation_sizes):
                self.resblocks.append(
                    AMPBlock(channels, k, dilations, snake_logscale=snake_logscale, causal=causal, act_causal=act_causal)
                )
        self.activation_post = AliasFreeActivation(SnakeBeta(channels, snake_logscale), causal=act_causal)
        self.conv_post = NormedConv(channels, 1, 7, padding=_causal(7) if causal else _same(7), bias=False)

    _CONFIG_KEYS = frozenset(VAEConfig.__dataclass_fields__)

    @classmethod
    def from_config(cls, cfg: VAEConfig | Mapping) -> AuKVAE:
        """Build from a :class:`VAEConfig` or the released ``model_init_kwargs`` (training-only entries ignored)."""
        config = cfg if isinstance(cfg, VAEConfig) else VAEConfig.from_kwargs(cfg)
        return cls(**{name: getattr(config, name) for name in VAEConfig.__dataclass_fields__})

    # -- weights

    def _normed_convs(self):
        return [m for m in self.modules() if isinstance(m, NormedConv)]

    def remove_weight_norm(self) -> None:
        """Fold weight_g/weight_v into plain weights where the module lives; idempotent.

        Fold on the inference device: a CPU fold lands up to one ULP away from the
        accelerator's, and the encoder's ~50× gain turns that into ~4e-4 relative drift.
        """
        for conv in self._normed_convs():
            conv.fold()

    def load_weights(
        self,
        path: str | Path,
        *,
        device: str | torch.device | None = None,
        fold_weight_norm: bool = True,
    ) -> tuple[list[str], list[str]]:
        """Load a released ``vae.safetensors`` (weight norm not folded), then fold it.

        Returns ``(missing, unexpected)``; training-only ``flow.*`` tensors are skipped and
        not reported. The FIR filter buffers are deterministic Kaiser-sinc taps: when a file
        lacks them, the module's own taps stay and they are not reported as missing. A
        tensor with the wrong shape raises CheckpointError. ``device`` defaults to where the
        module already is; move the module first, then load (see remove_weight_norm).
        """
        from auk_app.weights import check_state_dict, read_safetensors

        if device is not None:
            self.to(device)
        device = next(self.buffers()).device
        if any(conv.folded for conv in self._normed_convs()):
            raise RuntimeError("load_weights expects weight_g/weight_v parameters; load before folding")
        tensors = {k: v for k, v in read_safetensors(path, device=device).items() if not k.startswith(TRAINING_ONLY_PREFIX)}
        expected = {k: v.shape for k, v in self.state_dict().items()}
        missing = [k for k in expected if k not in tensors and not k.endswith(".filter")]
        unexpected = [k for k in tensors if k not in expected]
        present = {k: v for k, v in tensors.items() if k in expected}
        check_state_dict({k: expected[k] for k in present}, present, source=path, what="AuK VAE")
        self.load_state_dict(present, strict=False)
        if fold_weight_norm:
            self.remove_weight_norm()
        return missing, unexpected

    # -- codec

    def _stats(self):
        return self.global_mean.float(), self.global_log_std.float().sqrt()

    def posterior(self, wav: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Mono waveform [b, T] at :attr:`sample_rate` → the encoder's raw posterior mean and std,
        [b, L, n] each (channel-first; std is None without ``use_vae``).

        ``n`` is ``T // hop``, plus one frame when the leftover r = T mod hop is large enough.
        A strided conv with kernel 2f, stride f and padding f − 1 turns L = f·M + e samples into
        M + ⌊(e + f − 2)/f⌋ frames, so the leftover shrinks stage by stage; with the released
        strides 2, 2, 2, 3, 4, 5 it still makes a frame when ⌊r/8⌋ ≥ 17, i.e. r ≥ 136 samples
        (5.7 ms). Upstream encodes such clips whole and masks that frame out by length.
        """
        with torch.autocast(wav.device.type, enabled=False):
            stats = self.audio_encoder(wav.float()[:, None])
            if not self.use_vae:
                return stats, None
            mean, log_std = stats.chunk(2, dim=1)
            return mean, log_std.exp()

    def latents(
        self,
        mean: torch.Tensor,
        std: torch.Tensor | None,
        *,
        sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Posterior [b, L, n] → normalised latents [b, n, L]: the mean, or with ``sample`` a draw
        ``mean + ε·std`` with ε [b, L, n] from ``generator`` (channel-first like upstream's, so the
        same seeded generator gives upstream's ε)."""
        with torch.autocast(mean.device.type, enabled=False):
            z = mean
            if sample and std is not None:
                z = mean + torch.randn(mean.shape, generator=generator, device=mean.device) * std
            shift, scale = (t.to(z.device) for t in self._stats())  # an offloaded VAE need not move to draw
            return (z.transpose(1, 2) - shift) / scale

    def encode(self, wav: torch.Tensor, *, sample: bool = False, generator: torch.Generator | None = None) -> torch.Tensor:
        """Mono waveform [b, T] → normalised latents [b, n, L]: :meth:`posterior`, then :meth:`latents`."""
        return self.latents(*self.posterior(wav), sample=sample, generator=generator)

    def decode(self, latents: torch.Tensor, *, clamp: bool = True) -> torch.Tensor:
        """Normalised latents [b, n, L] → waveform [b, n·hop], clamped to [-1, 1] as upstream does;
        ``clamp=False`` keeps the level the model made, so the app can count and avoid clipping."""
        with torch.autocast(latents.device.type, enabled=False):
            shift, scale = self._stats()
            x = self.conv_pre((latents.float() * scale + shift).transpose(1, 2))
            for i, up in enumerate(self.ups):
                x = up[0](x)
                blocks = self.resblocks[i * self.num_kernels : (i + 1) * self.num_kernels]
                x = sum(block(x) for block in blocks) / self.num_kernels
            x = self.conv_post(self.activation_post(x))[:, 0]
            return x.clamp(-1.0, 1.0) if clamp else x
