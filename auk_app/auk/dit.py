"""AuK's flow transformer ("Flux2Edit"): an MM-DiT that predicts rectified-flow velocity.

Legend: b batch, n target frames, np reference frames, nt text tokens, d model width,
h heads, dh head width, L latent channels (64), T text hidden width (2048 for Qwen).

Ten double-stream blocks attend jointly over ``[audio | text]``, then twenty single-stream
blocks run over ``[text | audio]``; the audio stream is ``[reference | target]`` and only the
target frames reach the output head. Parameter and buffer names equal the released DiT keys
after stripping ``transformer.``, so ``load_state_dict(strict=True)`` works as is.

A call is two phases: :meth:`AuKTransformer.prepare` builds an :class:`AuKStepContext` once per
request (text projection, reference embedding, masks, rotary tables) and
:meth:`AuKTransformer.step` runs once per Euler step on it; ``forward`` is the two in a row.
Keeping request state in the context, not on the module, is what lets a CUDA graph replay the
step (:mod:`auk_app.auk.step_graphs`).

Numerics follow the public vLLM-Omni port, which the reference fixtures pin:
* rotary positions follow the padding masks (the count of valid tokens up to and
  including a token, minus one), so padding never advances a position;
* ``rotary_embed.inv_freq`` is used as stored: the release rounds it to bfloat16, and
  recomputing it moves attention logits by ~5e-3 per layer;
* rotary frequencies stay float32 when the module is cast, and the angles and the rotation run
  in float32 with autocast off, because bf16 positions lose the phase at long sequences;
* every RMSNorm uses float32 machine epsilon (1.19e-7), as ``nn.RMSNorm(eps=None)`` does
  for the float32 release, whatever dtype the weights are served in.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from auk_app.auk.packing import Packing, attend_packed, packing_of


_RMS_EPS = torch.finfo(torch.float32).eps  # 1.1920929e-07
_LN_EPS = 1e-6
_TIME_FEATURES = 256  # 128 sine + 128 cosine


def _layer_norm(x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], eps=_LN_EPS)


def _positions(mask: torch.Tensor | None, batch: int, length: int, device) -> torch.Tensor:
    """Rotary positions [b, N]: plain 0..N-1, or the running count of valid tokens minus one."""
    if mask is None:
        return torch.arange(length, device=device).expand(batch, length)
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


class Rotary(nn.Module):
    """Interleaved (GPT-J) rotary embedding over the full head width; its frequencies stay float32
    whatever dtype the module is cast to."""

    def __init__(self, dim_head: int):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim_head, 2).float() / dim_head))
        self.register_buffer("inv_freq", inv_freq)  # replaced by the checkpoint's rounded values

    def _apply(self, fn, recurse=True):
        """Moves the frequencies with the module but never rounds them: ``.to(torch.bfloat16)`` of
        the whole DiT would otherwise move cos and sin by up to 0.2 within a few hundred positions.
        ``Module.to``, ``cuda`` and ``half`` all cast through this method."""
        frequencies = self.inv_freq
        super()._apply(fn, recurse)
        moved = self.inv_freq
        # A meta tensor has no values to keep (``to_empty``): the new buffer's are the ones there are.
        self.inv_freq = (moved if frequencies.is_meta else frequencies).to(device=moved.device, dtype=torch.float32)
        return self

    def tables(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin [b, 1, N, dh] in float32 for integer positions [b, N]."""
        with torch.autocast(positions.device.type, enabled=False):
            angles = positions.float()[..., None] * self.inv_freq.float()  # [b, N, dh/2]
            angles = angles.repeat_interleave(2, dim=-1)[:, None]
            return angles.cos(), angles.sin()


def _rotate(x: torch.Tensor, tables: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    cos, sin = tables
    with torch.autocast(x.device.type, enabled=False):
        xf = x.float()
        pairs = xf.unflatten(-1, (-1, 2))
        rotated = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
        return (xf * cos + rotated * sin).to(x.dtype)


# With a key mask, SDPA's default on CUDA is the memory-efficient kernel, ~3x slower than cuDNN's
# at these lengths on Hopper (vLLM-Omni's measurement); a kernel that cannot take the inputs is
# skipped, so this order only ever falls back to the default.
_MASKED_KERNELS = [SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def _attend(q, k, v, key_mask: torch.Tensor | None, packing: Packing | None = None) -> torch.Tensor:
    """The one attention call site: [b, h, N, dh] in, [b, N, h*dh] out.

    Unmasked, SDPA picks the flash kernel on CUDA by itself; masked, cuDNN's is tried first
    there. The CPU keeps its own default, which the fixtures' numbers come from. With a
    ``packing`` of ``key_mask`` (a shared step's), each row attends over its valid tokens alone
    (:mod:`auk_app.auk.packing`), zeros at the padding.
    """
    if packing is not None:
        return attend_packed(q, k, v, packing)
    attn_mask = None if key_mask is None else key_mask[:, None, None, :]
    kernels = sdpa_kernel(_MASKED_KERNELS, set_priority=True) if attn_mask is not None and q.is_cuda else nullcontext()
    with kernels:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    return out.transpose(1, 2).flatten(2)


def _zero_invalid(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return x if mask is None else x.masked_fill(~mask[..., None], 0.0)


class TimeEmbedding(nn.Module):
    """Sinusoidal features of 1000·t, then a two-layer SiLU MLP."""

    def __init__(self, dim: int):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(_TIME_FEATURES, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, time: torch.Tensor) -> torch.Tensor:
        half = _TIME_FEATURES // 2
        exponent = torch.arange(half, device=time.device).float() * -(math.log(10000) / (half - 1))
        # (1000·t)·f, not 1000·(t·f): the association moves outputs by up to 3.3e-5.
        angles = (1000 * time.float())[:, None] * _exact(torch.exp, exponent)[None]
        features = torch.cat((_exact(torch.sin, angles), _exact(torch.cos, angles)), dim=-1)
        return self.time_mlp(features.to(self.time_mlp[0].weight.dtype))


def _exact(fn, x: torch.Tensor) -> torch.Tensor:
    """``fn`` correctly rounded to float32 via float64.

    Angles reach 1000 rad, so one ULP of a frequency is ~6e-5 rad of phase; vectorised
    float32 exp/sin differ by an ULP between CPU instruction sets, which moves DiT outputs
    by 1.5e-5 (above the 1e-5 parity tolerance). Rounding the float64 result removes that.
    """
    return fn(x.double()).float()


class ConvPositionEmbedding(nn.Module):
    """Two grouped convs (kernel 31, groups 16) with Mish; padded frames stay zero throughout."""

    def __init__(self, dim: int, kernel_size: int = 31, groups: int = 16):
        super().__init__()
        pad = kernel_size // 2
        self.conv1d = nn.Sequential(
            nn.Conv1d(dim, dim, kernel_size, groups=groups, padding=pad),
            nn.Mish(),
            nn.Conv1d(dim, dim, kernel_size, groups=groups, padding=pad),
            nn.Mish(),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        x = _zero_invalid(x, mask)
        for conv in (self.conv1d[0], self.conv1d[2]):
            x = conv(x.transpose(1, 2)).transpose(1, 2)
            x = F.mish(_zero_invalid(x, mask))
        return x


class AudioEmbedding(nn.Module):
    """Latents to model width plus a convolutional position signal; shared by reference and target."""

    def __init__(self, latent_dim: int, dim: int):
        super().__init__()
        self.linear = nn.Linear(latent_dim, dim)
        self.conv_pos_embed = ConvPositionEmbedding(dim)

    def forward(self, latents: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        h = self.linear(latents)
        return h + self.conv_pos_embed(h, mask)


class AdaLayerNorm(nn.Module):
    """Six modulation vectors from the time embedding: (shift, scale, gate) for attention, then FF."""

    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, 6 * dim)

    def forward(self, x: torch.Tensor, emb: torch.Tensor):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = (
            self.linear(F.silu(emb))[:, None].chunk(6, dim=-1)
        )
        return _layer_norm(x) * (1 + scale_msa) + shift_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp


class AdaLayerNormFinal(nn.Module):
    """Output modulation; its two chunks are (scale, shift) in that order."""

    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, 2 * dim)

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        scale, shift = self.linear(F.silu(emb))[:, None].chunk(2, dim=-1)
        return _layer_norm(x) * (1 + scale) + shift


class FeedForward(nn.Module):
    """SwiGLU without biases; ``linear_in`` holds the gate half first, then the up half."""

    def __init__(self, dim: int, ff_mult: float):
        super().__init__()
        inner = int(dim * ff_mult)
        self.linear_in = nn.Linear(dim, 2 * inner, bias=False)
        self.linear_out = nn.Linear(inner, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.linear_in(x).chunk(2, dim=-1)
        return self.linear_out(F.silu(gate) * up)


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    return x.unflatten(-1, (heads, -1)).transpose(1, 2)  # [b, N, h*dh] -> [b, h, N, dh]


class JointAttention(nn.Module):
    """Audio and text streams, each with its own projections and q/k norms, attending together."""

    def __init__(self, dim: int, heads: int, dim_head: int, attn_mask_enabled: bool):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.attn_mask_enabled = attn_mask_enabled
        self.to_qkv = nn.Linear(dim, 3 * inner)
        self.to_qkv_c = nn.Linear(dim, 3 * inner)
        self.q_norm = nn.RMSNorm(dim_head, eps=_RMS_EPS)
        self.k_norm = nn.RMSNorm(dim_head, eps=_RMS_EPS)
        self.c_q_norm = nn.RMSNorm(dim_head, eps=_RMS_EPS)
        self.c_k_norm = nn.RMSNorm(dim_head, eps=_RMS_EPS)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim)])
        self.to_out_c = nn.Linear(inner, dim)

    def forward(self, a, c, *, audio_mask, c_mask, rope_audio, rope_text, packing=None):
        q, k, v = (_heads(t, self.heads) for t in self.to_qkv(a).chunk(3, dim=-1))
        qc, kc, vc = (_heads(t, self.heads) for t in self.to_qkv_c(c).chunk(3, dim=-1))
        q, k = _rotate(self.q_norm(q), rope_audio), _rotate(self.k_norm(k), rope_audio)
        qc, kc = _rotate(self.c_q_norm(qc), rope_text), _rotate(self.c_k_norm(kc), rope_text)
        key_mask = None
        if self.attn_mask_enabled and audio_mask is not None:
            key_mask = torch.cat((audio_mask, c_mask), dim=-1)
        packing = packing if key_mask is not None else None
        out = _attend(torch.cat((q, qc), 2), torch.cat((k, kc), 2), torch.cat((v, vc), 2), key_mask, packing)
        n_audio = a.shape[1]
        out_a = _zero_invalid(self.to_out[0](out[:, :n_audio]), audio_mask)
        out_c = _zero_invalid(self.to_out_c(out[:, n_audio:]), c_mask)
        return out_a, out_c


class SelfAttention(nn.Module):
    """Single-stream attention over ``[text | audio]``."""

    def __init__(self, dim: int, heads: int, dim_head: int, attn_mask_enabled: bool):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.attn_mask_enabled = attn_mask_enabled
        self.to_qkv = nn.Linear(dim, 3 * inner)
        self.q_norm = nn.RMSNorm(dim_head, eps=_RMS_EPS)
        self.k_norm = nn.RMSNorm(dim_head, eps=_RMS_EPS)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim)])

    def forward(self, h, *, mask, rope, packing=None):
        q, k, v = (_heads(t, self.heads) for t in self.to_qkv(h).chunk(3, dim=-1))
        q, k = _rotate(self.q_norm(q), rope), _rotate(self.k_norm(k), rope)
        masked = self.attn_mask_enabled and mask is not None
        out = _attend(q, k, v, mask if masked else None, packing if masked else None)
        return _zero_invalid(self.to_out[0](out), mask)


class DoubleBlock(nn.Module):
    def __init__(self, *, dim, heads, dim_head, ff_mult, attn_mask_enabled):
        super().__init__()
        self.attn_norm_x = AdaLayerNorm(dim)
        self.attn_norm_c = AdaLayerNorm(dim)
        self.attn = JointAttention(dim, heads, dim_head, attn_mask_enabled)
        self.ff_x = FeedForward(dim, ff_mult)
        self.ff_c = FeedForward(dim, ff_mult)

    def forward(self, a, c, emb, *, audio_mask, c_mask, rope_audio, rope_text, packing=None):
        a_norm, a_gate, a_shift_ff, a_scale_ff, a_gate_ff = self.attn_norm_x(a, emb)
        c_norm, c_gate, c_shift_ff, c_scale_ff, c_gate_ff = self.attn_norm_c(c, emb)
        attn_a, attn_c = self.attn(
            a_norm, c_norm, audio_mask=audio_mask, c_mask=c_mask, rope_audio=rope_audio, rope_text=rope_text,
            packing=packing,
        )
        c = c + c_gate * attn_c
        c = c + c_gate_ff * self.ff_c(_layer_norm(c) * (1 + c_scale_ff) + c_shift_ff)
        a = a + a_gate * attn_a
        a = a + a_gate_ff * self.ff_x(_layer_norm(a) * (1 + a_scale_ff) + a_shift_ff)
        return a, c


class SingleBlock(nn.Module):
    def __init__(self, *, dim, heads, dim_head, ff_mult, attn_mask_enabled):
        super().__init__()
        self.attn_norm = AdaLayerNorm(dim)
        self.attn = SelfAttention(dim, heads, dim_head, attn_mask_enabled)
        self.ff = FeedForward(dim, ff_mult)

    def forward(self, h, emb, *, mask, rope, packing=None):
        h_norm, gate, shift_ff, scale_ff, gate_ff = self.attn_norm(h, emb)
        h = h + gate * self.attn(h_norm, mask=mask, rope=rope, packing=packing)
        return h + gate_ff * self.ff(_layer_norm(h) * (1 + scale_ff) + shift_ff)


@dataclass
class AuKStepContext:
    """One request's inputs to :meth:`AuKTransformer.step` that depend neither on the noisy
    latents nor on the time; built once by :meth:`AuKTransformer.prepare`.

    Rows r are ``branches`` copies of the request's batch b, conditional first under CFG.
    """

    text: torch.Tensor  # projected text [r, nt, d]
    ref: torch.Tensor | None  # embedded reference [r, np, d]; None without one
    target_mask: torch.Tensor | None  # [r, n]
    c_mask: torch.Tensor  # [r, nt]
    audio_mask: torch.Tensor | None  # [r, np + n]
    single_mask: torch.Tensor | None  # [r, nt + np + n]
    rope_audio: tuple[torch.Tensor, torch.Tensor]
    rope_text: tuple[torch.Tensor, torch.Tensor]
    rope_single: tuple[torch.Tensor, torch.Tensor]
    branches: int
    # A shared step's packings of the joint and the single blocks' key masks (with_packing); None: padded
    packing: tuple[Packing, Packing] | None = None

    def tensors(self) -> list[torch.Tensor | None]:
        """Every tensor field in a fixed order (rotary pairs flattened)."""
        return [self.text, self.ref, self.target_mask, self.c_mask, self.audio_mask, self.single_mask,
                *self.rope_audio, *self.rope_text, *self.rope_single]  # fmt: skip

    def clone(self) -> AuKStepContext:
        """A copy in fresh memory: a CUDA graph's static inputs."""

        def own(value):
            if isinstance(value, tuple):
                return tuple(t.clone() for t in value)
            return value.clone() if isinstance(value, torch.Tensor) else value

        return dataclasses.replace(self, **{f.name: own(getattr(self, f.name)) for f in dataclasses.fields(self)
                                            if f.name != "packing"})

    @classmethod
    def concat(cls, contexts: list[AuKStepContext]) -> AuKStepContext:
        """Several requests' contexts of one layout (same shapes past dim 0, same masks present)
        as one, their rows in order along dim 0. The result has ``branches=1``: its rows are
        already laid out, so :meth:`AuKTransformer.step` takes ``x`` and ``time`` with one row
        per context row (a CFG request's x twice, conditional rows first)."""

        def join(values):
            if any((v is None) != (values[0] is None) for v in values):
                raise ValueError("step contexts differ in which masks or reference they hold")
            if values[0] is None:
                return None
            if isinstance(values[0], tuple):
                return tuple(torch.cat(parts) for parts in zip(*values, strict=True))
            return torch.cat(values)

        names = [f.name for f in dataclasses.fields(cls) if f.name not in ("branches", "packing")]
        return cls(**{name: join([getattr(c, name) for c in contexts]) for name in names}, branches=1)

    def with_packing(self) -> AuKStepContext:
        """This context with the packings of its key masks (:mod:`auk_app.auk.packing`), so that each
        row attends over its valid tokens alone; without an audio mask nothing is padded, and it
        comes back as it is."""
        if self.audio_mask is None or self.single_mask is None:
            return self
        joint = torch.cat((self.audio_mask, self.c_mask), dim=1)
        return dataclasses.replace(self, packing=(packing_of(joint), packing_of(self.single_mask)))

    def copy_(self, other: AuKStepContext) -> None:
        """Overwrite these tensors in place with ``other``'s, which must have the same layout."""
        if other.branches != self.branches:
            raise ValueError(f"step contexts differ: {other.branches} vs {self.branches} CFG branches")
        for mine, theirs in zip(self.tensors(), other.tensors(), strict=True):
            if (mine is None) != (theirs is None) or (mine is not None and mine.shape != theirs.shape):
                raise ValueError("step contexts differ in which masks they hold or in their shapes")
            if mine is not None:
                mine.copy_(theirs)


class AuKTransformer(nn.Module):
    """Flow-matching velocity predictor for AuK audio latents (see the module docstring)."""

    def __init__(
        self,
        *,
        dim: int,
        heads: int,
        dim_head: int,
        ff_mult: float,
        latent_dim: int,
        text_hidden_dim: int,
        num_layers: int,
        num_single_layers: int,
        attn_mask_enabled: bool = True,
    ):
        super().__init__()
        self.dim = dim
        self.latent_dim = latent_dim
        self.attn_mask_enabled = attn_mask_enabled
        self.time_embed = TimeEmbedding(dim)
        self.txt_proj = nn.Linear(text_hidden_dim, dim)
        self.txt_norm = nn.RMSNorm(dim, eps=_RMS_EPS, elementwise_affine=True)
        self.audio_embed = AudioEmbedding(latent_dim, dim)
        self.rotary_embed = Rotary(dim_head)
        block = dict(dim=dim, heads=heads, dim_head=dim_head, ff_mult=ff_mult, attn_mask_enabled=attn_mask_enabled)
        self.transformer_blocks = nn.ModuleList([DoubleBlock(**block) for _ in range(num_layers)])
        self.single_transformer_blocks = nn.ModuleList([SingleBlock(**block) for _ in range(num_single_layers)])
        self.norm_out = AdaLayerNormFinal(dim)
        self.proj_out = nn.Linear(dim, latent_dim)
        # The contract's text cache, for forward(cache=True) callers; the sampler keeps its
        # request state in an AuKStepContext instead.
        self.text_cond: torch.Tensor | None = None
        self.text_uncond: torch.Tensor | None = None

    def compile_blocks(self) -> None:
        """Compile the thirty repeated blocks with ``torch.compile`` (regional compilation).

        A graphed step spends most of its GPU time in small elementwise kernels (AdaLN shifts,
        scales and gates, float32 rotary, dtype casts, norms); Inductor fuses each block's into
        a few. All blocks of a kind share one compiled graph (the weights are its inputs), so
        compiling takes two block compilations, not thirty, and the step's CUDA graph captures
        the compiled kernels like any others. ``torch.compiler.set_stance("force_eager")`` runs
        the same module uncompiled (the eager twin in the benchmarks and tests).
        """
        for block in (*self.transformer_blocks, *self.single_transformer_blocks):
            block.compile()

    def clear_cache(self) -> None:
        """Drop the cached text projection. Call this when the conditioning changes."""
        self.text_cond = None
        self.text_uncond = None

    def project_text(self, text: torch.Tensor) -> torch.Tensor:
        """Project LLM hidden states [b, nt, T] to model width [b, nt, d]."""
        return self.txt_norm(self.txt_proj(text))

    def prepare(
        self,
        text: torch.Tensor,
        *,
        target_frames: int,
        mask: torch.Tensor | None = None,
        c_mask: torch.Tensor | None = None,
        ref: torch.Tensor | None = None,
        ref_mask: torch.Tensor | None = None,
        drop_audio_cond: bool = False,
        drop_text: bool = False,
        cfg_infer: bool = False,
        text_projection: torch.Tensor | None = None,
    ) -> AuKStepContext:
        """Everything :meth:`step` needs that depends neither on ``x`` nor on the time.

        Arguments are those of :meth:`forward` (``target_frames`` is ``x``'s n);
        ``text_projection`` reuses a projection of ``text`` computed earlier.
        """
        if c_mask is None:
            c_mask = (text != 0).any(dim=-1)
        if ref is not None and ref.shape[1] == 0:
            ref, ref_mask = None, None
        c = self.project_text(text) if text_projection is None else text_projection
        if cfg_infer:
            c, c_mask = torch.cat((c, torch.zeros_like(c))), torch.cat((c_mask, c_mask))
            mask = None if mask is None else torch.cat((mask, mask))
            if ref is not None:
                ref = torch.cat((ref, torch.zeros_like(ref)))
                ref_mask = None if ref_mask is None else torch.cat((ref_mask, ref_mask))
        else:
            if drop_text:
                c = torch.zeros_like(c)
            if ref is not None and drop_audio_cond:
                ref = torch.zeros_like(ref)
        rows = c.shape[0]

        audio_mask = mask
        if ref is not None and (mask is not None or ref_mask is not None):
            ones = lambda length: torch.ones(rows, length, dtype=torch.bool, device=text.device)  # noqa: E731
            audio_mask = torch.cat(
                (ref_mask if ref_mask is not None else ones(ref.shape[1]), mask if mask is not None else ones(target_frames)),
                dim=1,
            )
        single_mask = None if audio_mask is None else torch.cat((c_mask, audio_mask), dim=1)
        n_audio = target_frames + (0 if ref is None else ref.shape[1])
        tables = lambda key_mask, length: self.rotary_embed.tables(_positions(key_mask, rows, length, text.device))  # noqa: E731
        return AuKStepContext(
            text=c,
            ref=None if ref is None else self.audio_embed(ref, ref_mask),
            target_mask=mask,
            c_mask=c_mask,
            audio_mask=audio_mask,
            single_mask=single_mask,
            rope_audio=tables(audio_mask, n_audio),
            rope_text=tables(c_mask, c.shape[1]),
            rope_single=tables(single_mask, c.shape[1] + n_audio),
            branches=2 if cfg_infer else 1,
        )

    def step(self, x: torch.Tensor, time: torch.Tensor, ctx: AuKStepContext) -> torch.Tensor:
        """Velocity [r, n, L] of the target latents ``x`` [b, n, L] at flow time ``time`` (0-d
        or [b]) under a :meth:`prepare` context; under CFG, rows are [conditional; unconditional]."""
        if ctx.branches == 2:
            x = torch.cat((x, x))
            time = time if time.ndim == 0 else torch.cat((time, time))
        if time.ndim == 0:
            time = time.repeat(x.shape[0])
        emb = self.time_embed(time)
        a = self.audio_embed(x, ctx.target_mask)
        if ctx.ref is not None:
            a = torch.cat((ctx.ref, a), dim=1)
        c = ctx.text
        joint, single = ctx.packing or (None, None)
        for block in self.transformer_blocks:
            a, c = block(a, c, emb, audio_mask=ctx.audio_mask, c_mask=ctx.c_mask, rope_audio=ctx.rope_audio,
                         rope_text=ctx.rope_text, packing=joint)
        h = torch.cat((c, a), dim=1)
        for block in self.single_transformer_blocks:
            h = block(h, emb, mask=ctx.single_mask, rope=ctx.rope_single, packing=single)
        return self.proj_out(self.norm_out(h[:, -x.shape[1]:], emb))

    def modulated_input(self, x: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        """The first block's modulated input for the target latents ``x`` [b, n, L] at ``time``
        (0-d or [b]): their embedding, layer-normed, under the time's shift and scale [b, n, d].

        What a step cache compares between steps (:mod:`auk_app.auk.step_reuse`). The reference and
        the text never reach the target frames' part of it (the embedding and the norm act frame by
        frame), so it is the same in every CFG row and in any batch, and costs the audio embedding
        and one modulation, not a step.
        """
        time = time.expand(x.shape[0]) if time.ndim == 0 else time
        a = self.audio_embed(x, None)
        emb = self.time_embed(time)
        if self.transformer_blocks:
            return self.transformer_blocks[0].attn_norm_x(a, emb)[0]
        return self.single_transformer_blocks[0].attn_norm(a, emb)[0]

    def forward(
        self,
        x: torch.Tensor,
        text: torch.Tensor,
        time: torch.Tensor,
        *,
        mask: torch.Tensor | None = None,
        c_mask: torch.Tensor | None = None,
        ref: torch.Tensor | None = None,
        ref_mask: torch.Tensor | None = None,
        drop_audio_cond: bool = False,
        drop_text: bool = False,
        cfg_infer: bool = False,
        cache: bool = False,
    ) -> torch.Tensor:
        """Velocity [b, n, L] for the target frames of ``x`` ([2b, n, L] under ``cfg_infer``).

        Masks are boolean with True = valid. ``c_mask`` defaults to "text row not all zero";
        a zero-length ``ref`` counts as absent. Under ``cfg_infer`` the batch is doubled as
        [conditional; unconditional], the latter with zeroed reference latents and zeroed
        projected text, and ``drop_audio_cond``/``drop_text`` are ignored. ``cache`` (with
        ``cfg_infer`` only, as upstream) reuses the projected text until :meth:`clear_cache`.
        """
        cached = cache and cfg_infer
        ctx = self.prepare(
            text, target_frames=x.shape[1], mask=mask, c_mask=c_mask, ref=ref, ref_mask=ref_mask,
            drop_audio_cond=drop_audio_cond, drop_text=drop_text, cfg_infer=cfg_infer,
            text_projection=self.text_cond if cached else None,
        )  # fmt: skip
        if cached and self.text_cond is None:
            self.text_cond, self.text_uncond = ctx.text.chunk(2)
        return self.step(x, time, ctx)


def dit_state_dict(
    checkpoint: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
    prefix: str = "transformer.",
) -> dict[str, torch.Tensor]:
    """Select the DiT tensors of a full AuK checkpoint and strip ``prefix``.

    Released files wrap the backbone under ``transformer.`` next to the text-fusion
    tensors (``layer_weights``, ``layer_scale``), which this module does not own.
    """
    items = checkpoint.items() if isinstance(checkpoint, Mapping) else checkpoint
    return {key[len(prefix):]: value for key, value in items if key.startswith(prefix)}
