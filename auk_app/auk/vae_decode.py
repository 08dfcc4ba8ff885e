"""The fast AuK VAE decode: compiled activations and, on CUDA, one graph per length bucket.

Eager, each of the decoder's 109 alias-free SnakeBeta activations is about fourteen kernels
(pads, a grouped transposed conv, ×2, SnakeBeta's nine, a grouped conv). Here the activation is
one compiled function, its two FIR filters written as sums of shifted slices, so Inductor fuses
it into a few kernels for every channel count and length (a grouped conv's ``groups`` argument
would pin the channel count and cost one compile per stage). The big convolutions stay cuDNN's;
compiling the whole decoder takes 169 s for the tiny fixture VAE on a two-core machine, this one
function 14 s (18 s at real size on an H200). A CUDA graph then replays the whole decode.
:meth:`AuKVAE.decode` stays the eager reference.

Measured on an H200 with a condensed copy of this path (real size, 10 s, batch 1, TF32 cuDNN
convs as eager): eager 74 ms, compiled and graphed 39 ms. On a CPU the compiled path is about
twice slower than eager, so :func:`fast_decode` runs the eager decode off CUDA.

Graphs need fixed shapes, so a graphed request is padded to a bucket of :data:`BUCKET_FRAMES`
frames. The decoder is causal except for two things, and the padded decode undoes both, so every
valid sample is the one the exact-length decode computes (up to float32 rounding):

* ``conv_pre`` is centred: its input is zero past the valid frames, as the exact decode's zero
  padding is (the latents are denormalised first, then zeroed);
* each ×2 upsampling of an activation looks 3 samples ahead and replicate-pads the right edge:
  its input past the valid samples is overwritten by the last valid sample before it runs.

Everything else (transposed convs dropping their last ``stride`` samples, left-padded convs, the
causal low-pass) reads only the past, so the padding never reaches a valid sample.

Graphs hold the weights' addresses: a decode captures only when the weights sit where they sat at
the previous decode, so the first decode runs compiled but ungraphed, the second captures its
bucket, and an offloaded VAE (moved every request) never captures.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from auk_app.auk.step_graphs import bucket
from auk_app.auk.vae import AliasFreeActivation, AMPBlock, AuKVAE, lowpass, snake_beta, upsample
from auk_app.runtime import GraphCache

logger = logging.getLogger(__name__)

BUCKET_FRAMES = 50  # 1 s of latents: a 10 s clip pads nothing, 9.1 s pads 10 %
MAX_GRAPHS = 8  # least recently used first out; they share one memory pool

Activation = Callable[..., torch.Tensor]


def compile_errors() -> tuple[type[Exception], ...]:
    """What a missing compiler or an unsupported op raises; imported when one is raised, since
    importing torch's compiler takes seconds of the app's start."""
    from torch._dynamo.exc import TorchDynamoException
    from torch._inductor.exc import InductorError

    return TorchDynamoException, InductorError


def _hold_last(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``x`` [b, C, T] with samples from ``valid`` on replaced by the last valid one."""
    last = x.gather(-1, (valid - 1).reshape(1, 1, 1).expand(x.shape[0], x.shape[1], 1))
    return torch.where(torch.arange(x.shape[-1], device=x.device) < valid, x, last)


def alias_free_snake(x, valid, alpha, beta, logscale, up_taps, up_geometry, down_taps, down_geometry):
    """:class:`AliasFreeActivation` of SnakeBeta as a free function of tensors, after holding the
    tail (the eager path: a decoder without a compiler runs this)."""
    x = upsample(_hold_last(x, valid), up_taps, up_geometry)
    return lowpass(snake_beta(x, alpha, beta, logscale), down_taps, down_geometry)


def _upsample_fir(x: torch.Tensor, taps: torch.Tensor, geometry: tuple[int, int, int, int]) -> torch.Tensor:
    """:func:`upsample` as sums of shifted slices, one per polyphase tap: without a grouped conv
    (whose ``groups`` argument pins the channel count) the compiled code fuses it and fits every C."""
    ratio, pad, crop_left, _ = geometry
    taps, length = taps.reshape(-1), x.shape[-1]
    x = F.pad(x, (pad, pad), mode="replicate")
    phases = []
    for phase in range(ratio):
        # output ratio·m + phase = Σ taps[k]·x_padded[m + offset], offset = (phase + crop_left − k) / ratio
        terms = [
            x[..., (phase + crop_left - k) // ratio :][..., :length] * taps[k]
            for k in range(taps.numel())
            if (phase + crop_left - k) % ratio == 0
        ]
        phases.append(ratio * sum(terms))
    return torch.stack(phases, dim=-1).flatten(-2)


def _lowpass_fir(x: torch.Tensor, taps: torch.Tensor, geometry: tuple[tuple[int, int], int]) -> torch.Tensor:
    """:func:`lowpass` as a sum of strided slices (see :func:`_upsample_fir`)."""
    padding, stride = geometry
    taps = taps.reshape(-1)
    x = F.pad(x, padding, mode="replicate")
    frames = (x.shape[-1] - taps.numel()) // stride + 1
    return sum(x[..., k : k + stride * (frames - 1) + 1 : stride] * taps[k] for k in range(taps.numel()))


def fused_alias_free_snake(x, valid, alpha, beta, logscale, up_taps, up_geometry, down_taps, down_geometry):
    """:func:`alias_free_snake` with the FIR filters as slice sums: the function that is compiled,
    once for every channel count and length (numerically the same within float32 rounding)."""
    x = _upsample_fir(_hold_last(x, valid), up_taps, up_geometry)
    return _lowpass_fir(snake_beta(x, alpha, beta, logscale), down_taps, down_geometry)


def _activation(fn: Activation, act: AliasFreeActivation, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``act`` through ``fn``; the parameters go detached, since torch.compile specialises on a
    Parameter's shape and would compile once per channel count."""
    snake, up, low = act.act, act.upsample, act.downsample.lowpass
    alpha, beta = snake.alpha.detach(), snake.beta.detach()
    return fn(x, valid, alpha, beta, snake.alpha_logscale, up.filter, up.geometry, low.filter, low.geometry)


def _amp_block(fn: Activation, block: AMPBlock, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    for j, (c1, c2) in enumerate(zip(block.convs1, block.convs2)):
        y = c1(_activation(fn, block.activations[2 * j], x, valid))
        x = x + c2(_activation(fn, block.activations[2 * j + 1], y, valid))
    return x


def decode_padded(
    vae: AuKVAE, latents: torch.Tensor, frames: torch.Tensor, activation: Activation = alias_free_snake
) -> torch.Tensor:
    """Float32 latents [b, n, L] whose first ``frames`` (0-d int64 tensor) are valid → waveform
    [b, n·hop] whose first ``frames``·hop samples are ``vae.decode(latents[:, :frames], clamp=False)``:
    unclamped, so one captured graph serves callers that clamp and callers that count clipping."""
    shift, scale = vae._stats()
    x = latents * scale + shift
    x = torch.where((torch.arange(x.shape[1], device=x.device) < frames)[:, None], x, 0.0)
    x = vae.conv_pre(x.transpose(1, 2))
    valid = frames
    for i, up in enumerate(vae.ups):
        x = up[0](x).contiguous()  # its causal crop is a strided view; compiled code guards on strides
        valid = valid * up[0].stride
        blocks = vae.resblocks[i * vae.num_kernels : (i + 1) * vae.num_kernels]
        x = sum(_amp_block(activation, block, x, valid) for block in blocks) / vae.num_kernels
    x = vae.conv_post(_activation(activation, vae.activation_post, x, valid))
    return x[:, 0]


@dataclass
class _Graph:
    """A bucket's static inputs and output, and the graph that replays the decode on them."""

    latents: torch.Tensor  # [b, n_bucket, L]; past a request's frames: another request's, ignored
    frames: torch.Tensor  # 0-d int64
    out: torch.Tensor | None = None
    graph: Any = None  # torch.cuda.CUDAGraph; None runs the decode on the buffers ungraphed
    failed: bool = False  # its capture failed once: it runs ungraphed from then on


class FastDecoder:
    """The fast decode of one VAE (held weakly); see the module docstring.

    ``compile=False`` runs :func:`alias_free_snake` eagerly (graphs still replay it on CUDA); so
    does a decoder whose compile failed (no C++ compiler, an unsupported platform), after one warning.
    ``static=True`` runs the bucketed static-buffer path off CUDA too, to test it without a GPU.
    """

    def __init__(self, vae: AuKVAE, *, compile: bool = True, bucket_frames: int = BUCKET_FRAMES) -> None:
        if not vae.causal:
            raise ValueError("this VAE's decoder looks ahead further than padded decoding can undo; decode it eagerly")
        self._vae = weakref.ref(vae)
        self.compiled = compile
        self._activation = _compiled() if compile else alias_free_snake
        self.bucket_frames = bucket_frames
        self._graphs = GraphCache(MAX_GRAPHS)  # of _Graph, keyed by (batch, bucket frames)

    def __len__(self) -> int:
        return len(self._graphs)

    def __call__(self, latents: torch.Tensor, *, static: bool | None = None, clamp: bool = True) -> torch.Tensor:
        """Normalised latents [b, n, L] → waveform [b, n·hop], as :meth:`AuKVAE.decode` (``clamp`` too)."""
        wav = self._decode(latents, static)
        return wav.clamp(-1.0, 1.0) if clamp else wav

    def _decode(self, latents: torch.Tensor, static: bool | None) -> torch.Tensor:
        vae = self._vae()
        n = latents.shape[1]
        with torch.inference_mode(), torch.autocast(latents.device.type, enabled=False):
            latents = latents.float()
            capture = latents.device.type == "cuda" and self._graphs.weights_stayed(vae)
            if not (capture if static is None else static):
                frames = torch.tensor(n, device=latents.device)
                return self._run(vae, latents, frames)
            entry = self._entry(latents.shape[0], bucket(n, self.bucket_frames), latents.device)
            entry.latents[:, :n].copy_(latents)
            entry.frames.fill_(n)
            if capture and entry.graph is None and not entry.failed:
                self._capture(vae, entry)
            if entry.graph is None:
                out = self._run(vae, entry.latents, entry.frames)
            else:
                entry.graph.replay()
                out = entry.out
            return out[:, : n * vae.hop_size].clone()  # the next replay overwrites the buffer

    def _run(self, vae: AuKVAE, latents: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        try:
            return decode_padded(vae, latents, frames, self._activation)
        except compile_errors() as error:  # an out-of-memory or a bug is no reason to drop the compiled code
            if self._activation is alias_free_snake:
                raise
            logger.warning("VAE decode: torch.compile failed (%s: %s); decoding eagerly", type(error).__name__, error)
            self._activation = alias_free_snake
            return decode_padded(vae, latents, frames, alias_free_snake)

    def _entry(self, batch: int, frames: int, device: torch.device) -> _Graph:
        key = (batch, frames)
        entry = self._graphs.get(key)
        if entry is not None:
            return entry
        vae = self._vae()
        entry = _Graph(
            latents=torch.zeros(batch, frames, vae.latent_dim, device=device),
            frames=torch.zeros((), dtype=torch.int64, device=device),
        )
        self._graphs.put(key, entry)
        return entry

    def _capture(self, vae: AuKVAE, entry: _Graph) -> None:
        entry.failed = True  # until the capture below completes
        entry.graph, entry.out = self._graphs.capture(  # the warm-up runs compile, outside the capture
            lambda: self._run(vae, entry.latents, entry.frames)
        )
        entry.failed = False


_COMPILED: Activation | None = None  # made by _compiled() on first use: importing torch's compiler takes seconds


def _compiled() -> Activation:
    """The compiled activation, with dynamic shapes: one compile serves every channel count and
    length (the taps and geometry are alike)."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = torch.compile(fused_alias_free_snake, dynamic=True, fullgraph=True)
    return _COMPILED


_DECODERS: weakref.WeakKeyDictionary[AuKVAE, FastDecoder] = weakref.WeakKeyDictionary()


def decoder(vae: AuKVAE, *, compile: bool = True) -> FastDecoder:
    """The VAE's own :class:`FastDecoder` (its graphs hold this VAE's weights), made on first use."""
    fast = _DECODERS.get(vae)
    if fast is None or fast.compiled != compile:
        fast = _DECODERS[vae] = FastDecoder(vae, compile=compile)
    return fast


def fast_decode(vae: AuKVAE, latents: torch.Tensor, *, compile: bool = True, clamp: bool = True) -> torch.Tensor:
    """:meth:`AuKVAE.decode` (normalised latents [b, n, L] → [b, n·hop]), graphed on CUDA and with
    compiled activations unless ``compile`` is False; elsewhere, and for a decoder that looks ahead
    further than the padding can undo (``vae.causal`` False), the eager decode itself."""
    if latents.device.type != "cuda" or not vae.causal:
        with torch.inference_mode():
            return vae.decode(latents, clamp=clamp)
    return decoder(vae, compile=compile)(latents, clamp=clamp)
