"""Guided, phase-masked sampling of one TTA token stream with a KV cache.

One decode step, in vLLM v1's sampler order (spec §5):

1. last-position logits of the conditional row and the length-matched null row, cast to float32;
2. CFG blend ``uncond + s·(cond − uncond)`` (skipped at s = 1, where only the cond row runs);
3. the RVQ phase mask, driven through :class:`TTARVQPhaseMaskLogitsProcessor`'s own
   ``update_state``/``apply`` interface, so this loop is just another client of that class;
4. temperature, top-k (ties at the k-th value kept), top-p; sample ONE token;
5. the conditional row's token is appended to both rows, so they stay token-identical.

Sampling draws from a per-request CPU ``torch.Generator``: the ≤ k surviving candidates are moved
to the CPU, so a seed gives the same tokens on any device for the same logits, and the global RNG
is never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import torch
from transformers import DynamicCache

from auk_app.audex.params import TTASampling
from auk_app.audex.tta import NEG_INF, TTARVQPhaseMaskLogitsProcessor
from auk_app.audex.vocab import AudexVocab
from auk_app.errors import Cancelled

END_TOKEN = "end_token"  # the model sampled <audiogen_end> on a frame boundary
CODEC_CAP = "codec_cap"  # the cap was reached (masked: the mask forced <audiogen_end> there)
MAX_TOKENS = "max_tokens"  # the token budget ran out first

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]


@dataclass(frozen=True)
class _Params:
    """The one field of vLLM's SamplingParams the mask reads."""

    extra_args: dict[str, Any]


@dataclass(frozen=True)
class _BatchUpdate:
    """vLLM v1 BatchUpdate shape: ``added`` (index, params, prompt ids, live output list)."""

    added: tuple[tuple[int, _Params, Sequence[int], list[int]], ...]
    removed: tuple[int, ...] = field(default=())
    moved: tuple[tuple[int, int, Any], ...] = field(default=())


@dataclass(frozen=True)
class SampledStream:
    """Generated ids (prompt excluded; ``<audiogen_end>`` included when sampled) and timings."""

    token_ids: tuple[int, ...]
    end_reason: str
    prefill_seconds: float
    sampling_seconds: float


def token_limit(params: TTASampling) -> int:
    """Most tokens one request can generate: the masked end comes at position ``codec_cap``."""
    return min(params.max_tokens, params.codec_cap + 1 if params.use_mask else params.codec_cap)


def _guide(logits: torch.Tensor, cfg_scale: float) -> torch.Tensor:
    """``[rows, V]`` float32 -> ``[1, V]``: the CFG blend of (cond, uncond), or cond alone."""
    if logits.shape[0] == 1:
        return logits
    cond, uncond = logits[0], logits[1]
    return (uncond + cfg_scale * (cond - uncond)).unsqueeze(0)


def _sample(row: torch.Tensor, params: TTASampling, generator: torch.Generator) -> int:
    """Temperature, top-k, top-p and one draw from ``row`` ([V] float32, -inf = forbidden)."""
    row = row / params.temperature
    kth = torch.topk(row, min(params.top_k, row.numel())).values[-1]
    candidates = ((row >= kth) & (row > NEG_INF)).nonzero().squeeze(1)
    probs = torch.softmax(row[candidates].cpu(), dim=0)
    if params.top_p < 1.0:
        # vLLM's rule: drop the least likely ids while their total stays <= 1 - p; keep the top one.
        order = torch.argsort(probs, stable=True)
        drop = probs[order].cumsum(0) <= 1.0 - params.top_p
        drop[-1] = False
        probs[order[drop]] = 0.0
    choice = torch.multinomial(probs, 1, generator=generator)
    return int(candidates.cpu()[choice])


def _end_reason(tokens: list[int], vocab: AudexVocab, params: TTASampling) -> str | None:
    if tokens[-1] == vocab.end_tid:
        forced = params.use_mask and len(tokens) - 1 >= params.codec_cap
        return CODEC_CAP if forced else END_TOKEN
    if not params.use_mask and len(tokens) >= params.codec_cap:
        return CODEC_CAP
    if len(tokens) >= params.max_tokens:
        return MAX_TOKENS
    return None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def sample_stream(
    lm: Any,
    cond_ids: Sequence[int],
    null_ids: Sequence[int] | None,
    vocab: AudexVocab,
    params: TTASampling,
    *,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> SampledStream:
    """Sample one stream from a causal LM whose prompt ends with ``<audiogen_start>``.

    ``null_ids`` (the length-matched null prompt) is used when ``params.guided``; it must have the
    length of ``cond_ids`` so both rows share positions without padding. ``progress(done, total)``
    runs after every token (``total`` is the most the request can produce); ``should_stop()`` is
    checked before every forward pass and raises :class:`Cancelled` when it returns True.
    """
    rows = [list(cond_ids)]
    if params.guided:
        if null_ids is None or len(null_ids) != len(cond_ids):
            raise ValueError("CFG needs a null prompt of exactly the conditional prompt's length")
        rows.append(list(null_ids))
    device = lm.device
    tokens: list[int] = []  # the live output list the mask reads
    mask = None
    if params.use_mask:
        mask = TTARVQPhaseMaskLogitsProcessor(None, device, False)
        request = _Params({"tta_rvq": vocab.tta_rvq_args(params.codec_cap)})
        mask.update_state(_BatchUpdate(added=((0, request, tuple(cond_ids), tokens),)))
    generator = torch.Generator("cpu").manual_seed(params.seed)
    total = token_limit(params)
    cache = DynamicCache(config=lm.config)
    input_ids = torch.tensor(rows, dtype=torch.long, device=device)
    started = perf_counter()
    prefill_seconds = None
    with torch.inference_mode():
        while True:
            if should_stop is not None and should_stop():
                raise Cancelled(
                    f"Generation was stopped after {len(tokens)} of at most {total} tokens, so no audio was made. "
                    "Press Generate to start again."
                )
            out = lm(input_ids=input_ids, cache=cache, use_cache=True, logits_to_keep=1)
            logits = out.logits[:, -1].float()  # [rows, V]
            if prefill_seconds is None:
                _sync(device)
                prefill_seconds = perf_counter() - started
                started = perf_counter()
            guided = _guide(logits, params.cfg_scale)
            if mask is not None:
                mask.apply(guided)
            tokens.append(_sample(guided[0], params, generator))
            if progress is not None:
                progress(len(tokens), total)
            reason = _end_reason(tokens, vocab, params)
            if reason is not None:
                break
            input_ids = torch.full((len(rows), 1), tokens[-1], dtype=torch.long, device=device)
    return SampledStream(
        token_ids=tuple(tokens),
        end_reason=reason,
        prefill_seconds=prefill_seconds,
        sampling_seconds=perf_counter() - started,
    )
