"""CUDA graphs of ``AuKTransformer.step``: one per shape bucket, replayed for every Euler step.

Eager, one 1.53 B DiT step launches ~1,500 kernels; at real size on an H200 that launch time is
about half of the step (34.8 ms eager, 18.0 ms as a graph, measured on an H200). A graph replays
fixed kernels on fixed memory, so each request is padded to a bucket (target frames and text
tokens to multiples of 64, reference frames to multiples of 50, vLLM-Omni's buckets) and copied
into that bucket's static buffers; a few graphs then serve every request.

Padding leaves the valid frames as they were: attention masks the padded keys, the conv position
embedding zeroes padded frames, and rotary positions follow the masks, so padding never advances a
position. That holds only with masks inside attention (``attn_mask_enabled``), and only when a
request that would otherwise run unmasked has no text padding of its own (its single-stream
blocks would see plain positions); other requests keep their exact shapes as their own bucket.

Graphs hold the weights' addresses. A request captures only when the weights sit where they sat
for the previous request; otherwise the graphs are dropped and the request runs eagerly, as the
very first request and every request whose weights ``--offload`` moved do. A bucket's
first graphed request waits for its capture: two eager warm-up steps and one captured step,
about three eager steps (≈0.1 s at real size, estimated from the eager step; not measured).
Off CUDA nothing is captured: by default
the plain ``prepare``/``step`` pair runs, and ``static=True`` runs the bucketed static-buffer
path eagerly, which is how its logic is tested without a GPU.

The graphs belong to whoever serves the DiT (the pipeline), not to the module, and run at the
compute dtype they are given: a captured graph must cast the weights itself, so the caller's
ambient autocast is never read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from auk_app.auk.dit import AuKStepContext, AuKTransformer
from auk_app.runtime import GraphCache

TARGET_MULTIPLE = 64
TEXT_MULTIPLE = 64
REF_MULTIPLE = 50
MAX_GRAPHS = 16  # least recently used first out; they share one memory pool

Step = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def bucket(length: int, multiple: int) -> int:
    """``length`` rounded up to a multiple of ``multiple`` (0 stays 0)."""
    return -(-length // multiple) * multiple


@dataclass(frozen=True)
class PaddedRequest:
    """A request's conditioning padded to its bucket; ``mask`` marks the valid target frames."""

    text: torch.Tensor
    c_mask: torch.Tensor
    ref: torch.Tensor | None
    ref_mask: torch.Tensor | None
    mask: torch.Tensor | None
    target_frames: int


def pad_to_bucket(
    dit: AuKTransformer,
    *,
    text: torch.Tensor,
    c_mask: torch.Tensor | None,
    ref: torch.Tensor | None,
    ref_mask: torch.Tensor | None,
    target_frames: int,
) -> PaddedRequest:
    """The request padded to its bucket, or as it is where padding could move the valid frames.

    A request that fills its bucket keeps its (all-valid) masks: dropping them measured no gain on
    an H200 (8.35 ms a compiled, graphed step either way) and would keep it from sharing steps
    with the masked requests of its bucket.
    """
    batch, n_text = text.shape[:2]
    if c_mask is None:
        c_mask = (text != 0).any(dim=-1)
    if ref is not None and ref.shape[1] == 0:
        ref, ref_mask = None, None
    runs_masked = ref is not None and ref_mask is not None
    if not dit.attn_mask_enabled or not (runs_masked or bool(c_mask.all())):
        return PaddedRequest(text, c_mask, ref, ref_mask, None, target_frames)
    device = text.device
    n_target = bucket(target_frames, TARGET_MULTIPLE)
    extra_text = bucket(n_text, TEXT_MULTIPLE) - n_text
    mask = (torch.arange(n_target, device=device) < target_frames).expand(batch, n_target)
    if ref is not None:
        extra_ref = bucket(ref.shape[1], REF_MULTIPLE) - ref.shape[1]
        if ref_mask is None:
            ref_mask = torch.ones(ref.shape[:2], dtype=torch.bool, device=device)
        ref, ref_mask = F.pad(ref, (0, 0, 0, extra_ref)), F.pad(ref_mask, (0, extra_ref), value=False)
    return PaddedRequest(
        text=F.pad(text, (0, 0, 0, extra_text)),
        c_mask=F.pad(c_mask, (0, extra_text), value=False),
        ref=ref,
        ref_mask=ref_mask,
        mask=mask,
        target_frames=n_target,
    )


@dataclass
class _Bucket:
    """A bucket's static inputs and output, and the graph that replays the step on them."""

    x: torch.Tensor  # [b, n_bucket, L]; past a request's frames: zeros or another request's, masked
    time: torch.Tensor  # 0-d float32
    ctx: AuKStepContext
    out: torch.Tensor | None = None
    graph: Any = None  # torch.cuda.CUDAGraph; None runs the step eagerly on the buffers

    def run(self, dit: AuKTransformer) -> torch.Tensor:
        if self.graph is None:
            return dit.step(self.x, self.time, self.ctx)
        self.graph.replay()
        return self.out


def compute_autocast(device_type: str, compute: torch.dtype, *, cache: bool = True) -> torch.autocast:
    """Autocast to ``compute``, off for float32 whatever the caller's. A graph is captured with the
    weight-cast cache off: cached casts are freed when the autocast context exits, so a graph that
    read them would replay on freed memory; it must cast the weights itself (float32 weights,
    bf16 compute)."""
    mixed = compute != torch.float32
    return torch.autocast(device_type, dtype=compute if mixed else torch.bfloat16, enabled=mixed,
                          cache_enabled=cache and mixed)


class StepGraphs:
    """The step graphs of one DiT at one compute dtype, keyed by bucket; see the module docstring."""

    def __init__(self, dit: AuKTransformer, *, compute: torch.dtype = torch.float32) -> None:
        self.dit = dit
        self.compute = compute
        self._buckets = GraphCache(MAX_GRAPHS)  # of _Bucket, keyed by shapes and dtypes

    def __len__(self) -> int:
        return len(self._buckets)

    def stepper(
        self,
        *,
        text: torch.Tensor,
        c_mask: torch.Tensor | None,
        ref: torch.Tensor | None,
        ref_mask: torch.Tensor | None,
        target_frames: int,
        cfg_infer: bool,
        static: bool | None = None,
    ) -> Step:
        """One request's step function ``(x [b, n, L], time) -> velocity``: ``dit.step`` under
        its ``prepare`` context, at ``compute``. On CUDA it replays a graph of the request's shape
        bucket; ``static`` forces (True) or skips (False) the bucketed static-buffer path, which
        off CUDA runs eagerly."""
        dit, device_type = self.dit, text.device.type
        capture = device_type == "cuda" and self._buckets.weights_stayed(dit)
        if not (capture if static is None else static):
            with compute_autocast(device_type, self.compute):
                ctx = dit.prepare(text, target_frames=target_frames, c_mask=c_mask, ref=ref, ref_mask=ref_mask,
                                  cfg_infer=cfg_infer)

            def plain(x: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
                with compute_autocast(device_type, self.compute):
                    return dit.step(x, time, ctx)

            return plain

        padded = pad_to_bucket(dit, text=text, c_mask=c_mask, ref=ref, ref_mask=ref_mask, target_frames=target_frames)
        with compute_autocast(device_type, self.compute):
            ctx = dit.prepare(
                padded.text, target_frames=padded.target_frames, mask=padded.mask, c_mask=padded.c_mask,
                ref=padded.ref, ref_mask=padded.ref_mask, cfg_infer=cfg_infer,
            )  # fmt: skip
        param = next(dit.parameters())
        x_shape = (text.shape[0], padded.target_frames, dit.latent_dim)
        key = (x_shape, param.dtype, ctx.branches, tuple(None if t is None else (t.shape, t.dtype) for t in ctx.tensors()))
        entry = self._entry(key, ctx, x_shape, param.dtype, capture)

        def step(x: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
            entry.x[:, :target_frames].copy_(x)
            entry.time.copy_(time)
            with compute_autocast(device_type, self.compute):
                out = entry.run(dit)
            return out[:, :target_frames].clone()  # the next replay overwrites the buffer

        return step

    def _entry(self, key, ctx, x_shape, dtype, capture: bool) -> _Bucket:
        entry = self._buckets.get(key)
        if entry is not None:
            entry.ctx.copy_(ctx)
        else:
            device = ctx.text.device
            entry = _Bucket(
                x=torch.zeros(x_shape, dtype=dtype, device=device),
                time=torch.zeros((), dtype=torch.float32, device=device),
                ctx=ctx.clone(),
            )
            self._buckets.put(key, entry)
        if capture and entry.graph is None:
            self._capture(entry)
        return entry

    def _capture(self, entry: _Bucket) -> None:
        def step() -> torch.Tensor:
            with compute_autocast("cuda", self.compute, cache=False):
                return self.dit.step(entry.x, entry.time, entry.ctx)

        entry.graph, entry.out = self._buckets.capture(step)
