"""Decoding a long latent sequence a chunk at a time: bounded memory, the samples of one whole decode.

A :class:`StreamDecoder` takes the recording's latents in pieces (:meth:`~StreamDecoder.push`) and
returns each sample as soon as no later frame can change it; :meth:`~StreamDecoder.end` returns the
rest. It holds a chunk and its context, whatever the recording's length.

* The released VAE's decoder is convolutions only, so a sample depends on a finite span of frames.
  :class:`ContextStreamDecoder` decodes each chunk with that span of frames on both sides
  (:func:`decoder_context`, read off the decoder's layers) and keeps the chunk's own samples: they
  see exactly the frames the whole decode's do, and differ from it by float rounding alone.
* A codec whose decode carries state through the whole clip (the demo codec's oscillator phase and
  noise stream) streams itself: its ``stream()`` returns its own StreamDecoder.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np
import torch

from auk_app.auk.vae import AliasFreeActivation, AuKVAE, NormedConv

CHUNK_FRAMES = 500  # 10 s of audio a decode: the released VAE's context adds about 13 % to it


class StreamDecoder(Protocol):
    """Normalised latents [n, L] in, in order → waveform samples out (float32, unclamped)."""

    def push(self, latents: torch.Tensor) -> np.ndarray: ...

    def end(self) -> np.ndarray: ...


def stream_decoder(codec: torch.nn.Module, decode: Callable[[torch.Tensor], torch.Tensor], *,
                   chunk_frames: int = CHUNK_FRAMES) -> StreamDecoder:
    """The codec's own stream if it has one, else chunks of ``decode`` (latents [1, n, L] → waveform
    [1, n·hop], unclamped) with the decoder's context on both sides."""
    own = getattr(codec, "stream", None)
    if own is not None:
        return own()
    before, after = decoder_context(codec)
    return ContextStreamDecoder(decode, codec.hop_size, before=before, after=after, chunk_frames=chunk_frames)


class ContextStreamDecoder:
    """Decodes ``chunk_frames`` at a time with ``before`` and ``after`` frames of context (see the
    module docstring); holds at most a chunk, its context and what one push brought."""

    def __init__(self, decode: Callable[[torch.Tensor], torch.Tensor], hop: int, *, before: int, after: int,
                 chunk_frames: int = CHUNK_FRAMES):
        self.decode, self.hop = decode, hop
        self.before, self.after, self.chunk_frames = before, after, chunk_frames
        self._frames: torch.Tensor | None = None  # held frames, the first at recording frame _offset
        self._offset = 0
        self._done = 0  # recording frames decoded so far

    def push(self, latents: torch.Tensor) -> np.ndarray:
        self._frames = latents if self._frames is None else torch.cat((self._frames, latents))
        out = []
        while self._held_end - self._done >= self.chunk_frames + self.after:
            out.append(self._decode_until(self._done + self.chunk_frames))
        return np.concatenate(out) if out else np.zeros(0, np.float32)

    def end(self) -> np.ndarray:
        if self._frames is None or self._done == self._held_end:
            return np.zeros(0, np.float32)
        return self._decode_until(self._held_end)

    @property
    def _held_end(self) -> int:
        return self._offset + (0 if self._frames is None else self._frames.shape[0])

    def _decode_until(self, stop: int) -> np.ndarray:
        """Samples of frames [done, stop), decoded with the context the held frames give."""
        first = max(self._offset, self._done - self.before)
        last = min(self._held_end, stop + self.after)
        piece = self._frames[first - self._offset : last - self._offset]
        wav = self.decode(piece[None])[0]
        keep = wav[(self._done - first) * self.hop : (stop - first) * self.hop]
        self._done = stop
        drop = max(0, self._done - self.before - self._offset)  # frames no later chunk reads
        self._frames, self._offset = self._frames[drop:], self._offset + drop
        return keep.detach().float().cpu().numpy()


def decoder_context(vae: AuKVAE) -> tuple[int, int]:
    """(before, after): latent frames on each side that one output sample of ``vae.decode`` reads.

    Walks the decoder from its output back to its input: convolutions add their reach at their
    own rate, each transposed upsampling divides the reach by its rate (plus the one input sample
    its kernel of twice the rate reaches back), parallel AMP blocks take the widest, sequential
    layers add up. The result bounds the receptive field from above.
    """
    post, act = _conv_reach(vae.conv_post), _activation_reach(vae.activation_post)
    before, after = post[0] + act[0], post[1] + act[1]
    for stage in reversed(range(vae.num_upsamples)):
        blocks = vae.resblocks[stage * vae.num_kernels : (stage + 1) * vae.num_kernels]
        reaches = [_block_reach(block) for block in blocks]
        before += max(r[0] for r in reaches)
        after += max(r[1] for r in reaches)
        rate = vae.ups[stage][0].stride
        before, after = math.ceil(before / rate) + 1, math.ceil(after / rate)
    pre_before, pre_after = _conv_reach(vae.conv_pre)
    return before + pre_before, after + pre_after


def _conv_reach(conv: NormedConv) -> tuple[int, int]:
    """(before, after) input samples an output sample of a stride-1 conv reads."""
    kernel = conv.weight.shape[-1] if conv.folded else conv.weight_v.shape[-1]
    span = conv.dilation * (kernel - 1)
    return conv.padding[0], span - conv.padding[0]


def _activation_reach(act: AliasFreeActivation) -> tuple[int, int]:
    """(before, after) input samples an output sample of the ×2 up, SnakeBeta, low-pass ×2 down reads."""
    ratio, pad, crop_left, _ = act.upsample.geometry
    up_taps = act.upsample.filter.shape[-1]
    (low_pad, _), stride = act.downsample.lowpass.geometry
    low_taps = act.downsample.lowpass.filter.shape[-1]
    reach_before, reach_after = 0, 0
    for j in range(ratio):  # every phase of the output against the input
        first_up, last_up = j * stride - low_pad, j * stride - low_pad + low_taps - 1
        first_in = (first_up + crop_left - up_taps) // ratio + 1 - pad
        last_in = (last_up + crop_left) // ratio - pad
        reach_before, reach_after = max(reach_before, j - first_in), max(reach_after, last_in - j)
    return reach_before, reach_after


def _block_reach(block) -> tuple[int, int]:
    """An AMP block: its pairs in sequence (activation, conv, activation, conv each)."""
    before = after = 0
    for j, (c1, c2) in enumerate(zip(block.convs1, block.convs2)):
        for part in (_activation_reach(block.activations[2 * j]), _conv_reach(c1),
                     _activation_reach(block.activations[2 * j + 1]), _conv_reach(c2)):
            before, after = before + part[0], after + part[1]
    return before, after
