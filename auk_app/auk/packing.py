"""Packed attention for a shared DiT step: each row attends over its valid tokens alone, without
the padding that puts concurrent requests of one shape bucket side by side.

A shared step (:class:`~auk_app.auk.batching.StepBatcher`) pads every request to its bucket and
masks the padding in attention. Packed, the valid queries, keys and values of every row are
gathered into one sequence, the rows' boundaries are given as cumulative lengths, and
variable-length attention computes each row over its own tokens; the outputs go back to their
padded places, zeros at the padding, which the blocks zero after their output projections anyway.
Rotary positions are applied before attention, so gathering does not move them, and a row's valid
tokens need not be contiguous (the joint blocks' ``[reference | target | text]`` each end padded).

On CUDA, ``torch.nn.attention.varlen.varlen_attn`` (FlashAttention's variable-length kernel, half
precision) runs it. Elsewhere, and in float32, :func:`segment_attention` runs the same thing as one
SDPA call per row; the padded path is then the default (the batcher packs only when asked to).
Everything else in the step (projections, feed-forwards, modulation) still runs on the padded rows.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

try:
    from torch.nn.attention.varlen import varlen_attn
except ImportError:  # an older torch: the per-row path serves
    varlen_attn = None

_VARLEN_DTYPES = (torch.float16, torch.bfloat16)


class Packing(NamedTuple):
    """Where a padded batch's valid tokens lie: their flat positions in ``[rows · length]``, each
    row's start in the packed sequence (cumulative lengths, int32, ``rows + 1``), the longest row."""

    index: torch.Tensor
    starts: torch.Tensor
    longest: torch.Tensor  # 0-d: a tensor, so that compiled code is not specialised on it


def packing_of(mask: torch.Tensor) -> Packing:
    """The packing of a key mask [rows, length] (True = valid)."""
    lengths = mask.sum(-1)
    starts = F.pad(lengths.cumsum(0), (1, 0)).to(torch.int32)
    return Packing(mask.flatten().nonzero().squeeze(1), starts, lengths.max())


def segment_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, starts: torch.Tensor,
                      longest: int) -> torch.Tensor:
    """Variable-length attention over packed [tokens, heads, dh] as one SDPA call per row."""
    out = torch.empty_like(q)
    bounds = starts.tolist()
    for start, end in zip(bounds[:-1], bounds[1:]):
        rows = [t[start:end].transpose(0, 1)[None] for t in (q, k, v)]
        out[start:end] = F.scaled_dot_product_attention(*rows)[0].transpose(0, 1)
    return out


def _kernel(q: torch.Tensor):
    if varlen_attn is not None and q.is_cuda and q.dtype in _VARLEN_DTYPES:
        return lambda q, k, v, starts, longest: varlen_attn(q, k, v, starts, starts, longest, longest)
    return segment_attention


@torch.compiler.disable  # a host sync (the longest row) and a kernel per batch composition
def attend_packed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packing: Packing) -> torch.Tensor:
    """Attention of [rows, heads, length, dh] inputs over each row's valid tokens alone, as
    [rows, length, heads · dh] with zeros at the padding."""
    rows, heads, length, dh = q.shape
    flat = [t.transpose(1, 2).reshape(rows * length, heads, dh).index_select(0, packing.index) for t in (q, k, v)]
    out = _kernel(q)(*flat, packing.starts, int(packing.longest))
    full = q.new_zeros(rows * length, heads, dh).index_copy_(0, packing.index, out.to(q.dtype))
    return full.view(rows, length, heads * dh)
