"""One TTA token at a time on fixed-shape device buffers: static KV cache, CFG blend, mask, draw.

Legend: r rows (1, or 2 for the CFG pair [conditional; null]), T tokens fed, P cache positions,
V logits width, U head rows computed under the phase mask (4,097 it can allow, padded to 4,352),
W ids drawn over per masked position (1,025), h/kv query/key-value heads, dh head width.

transformers' ``generate`` grows a DynamicCache, so every token has new shapes and nothing can be
captured. Here a request's cache is allocated once for all its positions, the position is a
device tensor, and :meth:`DecodeState.advance` only reads and writes buffers whose addresses never
change: the phase mask is a row of :mod:`~auk_app.audex.phase_table` looked up by the generated
count, and the draw happens on the device. So ``advance`` never waits for the host, and a CUDA
graph of it replays for every token (:mod:`auk_app.audex.decode_graphs`). Under the mask only the
head rows it can allow are computed (:mod:`~auk_app.audex.phase_head`): the same draw, token for
token, for a fifth less weight reading per token at 2B.

The LM's math is its own transformers modules (embedding, RMSNorms, projections, rotary tables,
MLP, head of ``ArceeForCausalLM``); only attention over the cache is written here: each key/value
head's query group runs as one longer query, so the cache is never repeated per query head.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from auk_app import transformers_import

with transformers_import.LOCK:
    from transformers.models.arcee.modeling_arcee import apply_rotary_pos_emb

from auk_app.audex.params import AudexSampling
from auk_app.audex.phase_head import PhaseHead
from auk_app.audex.phase_table import allowed_table, row_schedule
from auk_app.audex.vocab import AudexVocab

_TINY = torch.finfo(torch.float32).tiny


def _attention(attn, h, rotary, keys, values, positions, cache_bias) -> torch.Tensor:
    """Self-attention of ``h`` [r, T, d] at ``positions`` [T]; writes its keys and values into the
    cache ``keys``/``values`` [r, kv, P, dh] first. ``cache_bias`` [groups·T, P] (:func:`_cache_bias`)
    is 0 at the filled positions and -inf elsewhere."""
    rows, length, _ = h.shape
    q, k, v = (proj(h).view(rows, length, -1, attn.head_dim).transpose(1, 2) for proj in (attn.q_proj, attn.k_proj, attn.v_proj))
    q, k = apply_rotary_pos_emb(q, k, *rotary)
    keys.index_copy_(2, positions, k)
    values.index_copy_(2, positions, v)
    kv_heads, groups = keys.shape[1], attn.num_key_value_groups
    # Query head j·groups + g reads key/value head j (transformers' repeat_kv order), so each head
    # j's group of queries is one query sequence of groups·T rows against that head's cache.
    q = q.reshape(rows, kv_heads, groups * length, attn.head_dim)
    out = F.scaled_dot_product_attention(q, keys, values, attn_mask=cache_bias, scale=attn.scaling)
    # reshape, not view: CUDA's attention kernels return this output with strides a view cannot take.
    return attn.o_proj(out.reshape(rows, -1, length, attn.head_dim).transpose(1, 2).reshape(rows, length, -1))


def _cache_bias(lm, keys, positions: torch.Tensor) -> torch.Tensor:
    """The additive attention mask [groups·T, P] of queries at ``positions`` [T] over the cache
    ``keys``: 0 where a position is filled (≤ the query's), -inf elsewhere, in the cache's dtype.

    Built once per step for all layers: a boolean mask would be repeated per query group and turned
    into this very tensor (``where(mask, 0, -inf)`` in the query's dtype) inside every layer's
    attention call, two to three small kernels a layer, 28 layers a token at 2B.
    """
    groups = lm.model.layers[0].self_attn.num_key_value_groups
    cache_positions = torch.arange(keys[0].shape[2], device=positions.device)
    hidden = cache_positions[None, :] > positions[:, None]
    bias = torch.zeros(hidden.shape, dtype=keys[0].dtype, device=positions.device).masked_fill_(hidden, float("-inf"))
    return bias.repeat(groups, 1)


def lm_hidden(lm, keys, values, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The final-normed hidden state [r, 1, d] of the last of ``ids`` [r, T], fed at ``positions``
    [T] (long, on the device) after the positions before them are in the per-layer caches
    ``keys``/``values``; the output head's input."""
    model = lm.model
    h = model.embed_tokens(ids)
    rotary = model.rotary_emb(h, positions[None])
    cache_bias = _cache_bias(lm, keys, positions)
    for layer, layer_keys, layer_values in zip(model.layers, keys, values, strict=True):
        h = h + _attention(layer.self_attn, layer.input_layernorm(h), rotary, layer_keys, layer_values, positions, cache_bias)
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    return model.norm(h[:, -1:])


def lm_logits(lm, keys, values, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """float32 logits [r, V] of the whole head at :func:`lm_hidden`'s state."""
    return lm.lm_head(lm_hidden(lm, keys, values, ids, positions))[:, 0].float()


def guide(logits: torch.Tensor, cfg_scale: torch.Tensor) -> torch.Tensor:
    """[r, V] -> [V]: the CFG blend ``uncond + s·(cond − uncond)`` of the pair, or the one row."""
    if logits.shape[0] == 1:
        return logits[0]
    cond, uncond = logits[0], logits[1]
    return uncond + cfg_scale * (cond - uncond)


def sampling_probs(
    scores: torch.Tensor, *, temperature: torch.Tensor, top_k_index: torch.Tensor, top_p: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The probabilities [W] :func:`draw` picks from, by rank, and the ranks' indices [W] into
    ``scores`` [W] (float32, -inf = forbidden).

    Temperature, then a stable sort (ties in index order, so that a draw over a subset of ids in
    index order ranks them as a draw over all of them does), then top-k (ids below the k-th
    largest score dropped, ties at it kept; ``top_k_index`` = k − 1), then top-p by vLLM's rule
    (drop the least likely ids while their total stays ≤ 1 − p, never the most likely one).
    """
    ranked, order = (scores / temperature).sort(descending=True, stable=True)
    ranked = ranked.masked_fill(ranked < ranked.gather(0, top_k_index.view(1)), float("-inf"))
    probs = ranked.softmax(0)
    drop = probs.flip(0).cumsum(0).flip(0) <= 1 - top_p  # total of this id and every less likely one
    drop[0].fill_(False)  # in place on the device: a Python value would be a host copy, which capture forbids
    return probs.masked_fill(drop, 0.0), order


def draw(
    scores: torch.Tensor,
    *,
    temperature: torch.Tensor,
    top_k_index: torch.Tensor,
    top_p: torch.Tensor,
    generator: torch.Generator,
    noise_width: int | None = None,
) -> torch.Tensor:
    """The index [1] into ``scores`` [W] of one draw from :func:`sampling_probs`, on the device.

    The draw is the argmax of p / E over i.i.d. Exp(1) noise E by rank, which picks rank i with
    probability p_i and needs no host sync. ``noise_width`` (default W) noise values are drawn and
    the first W used: a draw over the ≤ 1,025 ids the phase mask allows passes the LM's vocabulary
    width, so it takes the same numbers from ``generator`` as a draw over the whole masked
    vocabulary (:mod:`~auk_app.audex.phase_head`). Every other argument is a tensor, so one CUDA
    graph serves any knob values.
    """
    probs, order = sampling_probs(scores, temperature=temperature, top_k_index=top_k_index, top_p=top_p)
    noise = torch.empty(noise_width or len(probs), dtype=probs.dtype, device=probs.device)
    noise.exponential_(generator=generator)
    # E = 0 would make 0/0 (NaN, which argmax picks); flooring it at the smallest normal float keeps
    # forbidden ids at 0 and changes nothing else.
    noise = noise[: len(probs)].clamp_min(_TINY)
    return order.gather(0, (probs / noise).argmax().view(1))


class DecodeState:
    """The fixed-shape buffers of one decode: the cache for ``positions`` positions of ``rows``
    rows, the token fed next, its position, the generated ids and the sampling knobs.

    ``masked`` states draw under the phase mask through a :class:`PhaseHead`: their scores are
    over :attr:`PhaseHead.ids` [U], not the vocabulary [V], and each position draws over its mask
    row's columns. Unmasked states use the whole head.

    A state serves request after request of its shape (:meth:`start` resets it); the buffers keep
    their addresses, which is what a CUDA graph of :meth:`advance` replays on.
    """

    def __init__(self, lm, vocab: AudexVocab, *, rows: int, positions: int, masked: bool) -> None:
        config = lm.config
        param = next(lm.parameters())
        device = param.device
        shape = (rows, config.num_key_value_heads, positions, lm.model.layers[0].self_attn.head_dim)
        self.keys = [torch.zeros(shape, dtype=param.dtype, device=device) for _ in range(config.num_hidden_layers)]
        self.values = [torch.zeros_like(k) for k in self.keys]
        self.rows, self.positions = rows, positions
        self.token = torch.zeros(rows, 1, dtype=torch.long, device=device)
        self.position = torch.zeros(1, dtype=torch.long, device=device)
        self.count = torch.zeros(1, dtype=torch.long, device=device)  # tokens generated so far
        self.generated = torch.zeros(positions, dtype=torch.long, device=device)
        self.cfg_scale = torch.ones((), device=device)
        self.temperature = torch.ones((), device=device)
        self.top_k_index = torch.zeros((), dtype=torch.long, device=device)
        self.top_p = torch.ones((), device=device)
        self.schedule = torch.zeros(positions, dtype=torch.long, device=device)
        self.vocab_width = config.vocab_size  # the logits' width, and the noise each draw takes
        self.phase_head = None
        if masked:
            allowed = allowed_table(vocab.phase_token_ids, vocab.end_tid, config.vocab_size, device)
            self.phase_head = PhaseHead(allowed, lm.lm_head)
        self.generator = torch.Generator(device=device)

    def start(self, sampling: AudexSampling) -> None:
        """Reset the counters and copy one run's sampling values into the device scalars; the
        cache needs no clearing, since a position is written before any query can see it."""
        self.count.zero_()
        self.cfg_scale.fill_(sampling.cfg_scale)
        self.temperature.fill_(sampling.temperature)
        drawn_width = self.vocab_width if self.phase_head is None else self.phase_head.width
        self.top_k_index.fill_(min(sampling.top_k, drawn_width) - 1)
        self.top_p.fill_(sampling.top_p)
        self.schedule.copy_(row_schedule(self.positions, sampling.codec_cap, self.schedule.device))
        self.generator.manual_seed(sampling.seed)

    def prefill(self, lm, prompts: torch.Tensor) -> torch.Tensor:
        """Feed the prompt rows [r, T] at positions 0..T-1; the scores [V] (masked: [U]) of the
        first token. Masked, it first gathers this request's head rows, so they are the LM's now."""
        if self.phase_head is not None:
            self.phase_head.gather_rows(lm.lm_head)
        length = prompts.shape[1]
        scores = self._guided_scores(lm, prompts, torch.arange(length, device=prompts.device))
        self.position.fill_(length)
        return scores

    def scores(self, lm) -> torch.Tensor:
        """The guided scores [V] (masked: [U]) after feeding the last chosen token at the current position."""
        scores = self._guided_scores(lm, self.token, self.position)
        self.position.add_(1)
        return scores

    def _guided_scores(self, lm, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if self.phase_head is None:
            return guide(lm_logits(lm, self.keys, self.values, ids, positions), self.cfg_scale)
        return guide(self.phase_head.logits(lm_hidden(lm, self.keys, self.values, ids, positions)), self.cfg_scale)

    def choose(self, scores: torch.Tensor) -> torch.Tensor:
        """Draw from ``scores`` (masked: over the table row of this position), and record the
        token as the next one fed to every row; returns it [1]."""
        ids = None
        if self.phase_head is not None:
            scores, ids = self.phase_head.restrict(scores, self.schedule.index_select(0, self.count))
        token = draw(
            scores, temperature=self.temperature, top_k_index=self.top_k_index, top_p=self.top_p,
            generator=self.generator, noise_width=self.vocab_width,
        )  # fmt: skip
        if ids is not None:
            token = ids.gather(0, token)
        self.generated.index_copy_(0, self.count, token)
        self.count.add_(1)
        self.token.copy_(token.expand(self.rows, 1))
        return token

    def advance(self, lm) -> None:
        """One whole decode step on the device: feed, guide, mask, draw, record."""
        self.choose(self.scores(lm))
