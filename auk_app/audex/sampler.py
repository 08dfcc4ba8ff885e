"""Guided, phase-masked sampling of one TTA token stream on fixed-shape device buffers.

One token, in vLLM v1's sampler order (spec §5; :mod:`auk_app.audex.decode` does the math):

1. last-position logits of the conditional row and the length-matched null row, cast to float32;
2. CFG blend ``uncond + s·(cond − uncond)`` (skipped at s = 1, where only the cond row runs);
3. the RVQ phase mask;
4. temperature, top-k (ties at the k-th value kept), top-p; draw ONE token;
5. the conditional row's token is fed to both rows, so they stay token-identical.

Two loops run it. The fast one (the default) never waits for the host between tokens: the mask
is a device-table row per position and the draw happens on the device (a CUDA graph replay per
token on CUDA); the host syncs once per ``CHUNK`` tokens (four frames) to find the end, report
progress and check Stop, and drops what was sampled past the end. Under the mask it computes
steps 1-4 only for the 4,097 ids the mask can ever allow (:mod:`~auk_app.audex.phase_head`), not
the ~205k-id vocabulary, and draws with the same ranks and noise as a draw over all of it. The eager one (``fast=False``)
reads every token back and masks through :class:`TTARVQPhaseMaskLogitsProcessor`'s own
``update_state``/``apply`` interface, as vLLM drives it; it is the reference the fast loop is
held to, and for one seed on one device both give the same tokens.

Draws come from a per-request generator on the LM's device, seeded with the request's seed; the
global RNG is never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import torch

from auk_app.audex.decode import DecodeState, Knobs
from auk_app.audex.decode_graphs import decoding
from auk_app.audex.params import TTASampling
from auk_app.audex.tta import TTARVQPhaseMaskLogitsProcessor
from auk_app.audex.vocab import AudexVocab
from auk_app.errors import Cancelled

END_TOKEN = "end_token"  # the model sampled <audiogen_end> on a frame boundary
CODEC_CAP = "codec_cap"  # the cap was reached (masked: the mask forced <audiogen_end> there)
MAX_TOKENS = "max_tokens"  # the token budget ran out first

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]

CHUNK = 16  # tokens the fast loop runs between host syncs: four frames, so a sync falls on a frame boundary


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


def end_reason(tokens: list[int], vocab: AudexVocab, params: TTASampling) -> str | None:
    if tokens[-1] == vocab.end_tid:
        forced = params.use_mask and len(tokens) - 1 >= params.codec_cap
        return CODEC_CAP if forced else END_TOKEN
    if not params.use_mask and len(tokens) >= params.codec_cap:
        return CODEC_CAP
    if len(tokens) >= params.max_tokens:
        return MAX_TOKENS
    return None


def sample_stream(
    lm: Any,
    cond_ids: Sequence[int],
    null_ids: Sequence[int] | None,
    vocab: AudexVocab,
    params: TTASampling,
    *,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    fast: bool = True,
) -> SampledStream:
    """Sample one stream from a causal LM whose prompt ends with ``<audiogen_start>``.

    ``null_ids`` (the length-matched null prompt) is used when ``params.guided``; it must have the
    length of ``cond_ids`` so both rows share positions without padding. ``progress(done, total)``
    runs for every token (``total`` is the most the request can produce); ``should_stop()`` is
    checked before the prompt and then before every ``CHUNK`` tokens (``fast=False``: every
    token) and raises :class:`Cancelled` when it returns True.
    """
    rows = [list(cond_ids)]
    if params.guided:
        if null_ids is None or len(null_ids) != len(cond_ids):
            raise ValueError("CFG needs a null prompt of exactly the conditional prompt's length")
        rows.append(list(null_ids))
    total = token_limit(params)
    knobs = Knobs(
        cfg_scale=params.cfg_scale, temperature=params.temperature, top_k=params.top_k, top_p=params.top_p,
        seed=params.seed, codec_cap=params.codec_cap,
    )  # fmt: skip
    tokens: list[int] = []  # the live output list the eager loop's mask reads

    def stop_check() -> None:
        if should_stop is not None and should_stop():
            raise Cancelled(
                f"Generation was stopped after {len(tokens)} of at most {total} tokens, so no audio was made. "
                "Press Generate to start again."
            )

    with torch.inference_mode(), decoding(
        lm, vocab, rows=len(rows), needed=len(cond_ids) + total, masked=params.use_mask and fast, knobs=knobs, graphed=fast
    ) as (state, step):
        prompts = torch.tensor(rows, dtype=torch.long, device=state.token.device)
        run = _Run(lm, state, vocab, params, tokens, progress, stop_check)
        started = perf_counter()
        if fast:
            reason, first_token_at = run.fast(prompts, step)
        else:
            mask = None
            if params.use_mask:
                mask = TTARVQPhaseMaskLogitsProcessor(None, state.token.device, False)
                request = _Params({"tta_rvq": vocab.tta_rvq_args(params.codec_cap)})
                mask.update_state(_BatchUpdate(added=((0, request, tuple(cond_ids), tokens),)))
            reason, first_token_at = run.eager(prompts, mask)
    return SampledStream(
        token_ids=tuple(tokens),
        end_reason=reason,
        prefill_seconds=first_token_at - started,
        sampling_seconds=perf_counter() - first_token_at,
    )


@dataclass
class _Run:
    """One request's loop state: the decode buffers, the host's token list and the callbacks."""

    lm: Any
    state: DecodeState
    vocab: AudexVocab
    params: TTASampling
    tokens: list[int]
    progress: Progress | None
    stop_check: Callable[[], None]

    def _take(self, token: int) -> str | None:
        """Append one token read back from the device; its end reason, if it ends the stream."""
        self.tokens.append(token)
        if self.progress is not None:
            self.progress(len(self.tokens), token_limit(self.params))
        return end_reason(self.tokens, self.vocab, self.params)

    def fast(self, prompts: torch.Tensor, step: Callable[[], None]) -> tuple[str, float]:
        """Steps on the device between syncs; the host reads each chunk's tokens once."""
        state, total = self.state, token_limit(self.params)
        self.stop_check()
        state.choose(state.prefill(self.lm, prompts))
        launched, first_token_at = 1, None
        while True:
            new = state.generated[len(self.tokens) : launched].tolist()  # the one host sync of the chunk
            first_token_at = first_token_at or perf_counter()
            for token in new:
                reason = self._take(token)
                if reason is not None:
                    return reason, first_token_at
            self.stop_check()
            chunk_end = min(total, (launched // CHUNK + 1) * CHUNK)
            for _ in range(chunk_end - launched):
                step()
            launched = chunk_end

    def eager(self, prompts: torch.Tensor, mask: TTARVQPhaseMaskLogitsProcessor | None) -> tuple[str, float]:
        """One token at a time, read back at once; the contract processor masks on the host."""
        state = self.state
        self.stop_check()
        scores = state.prefill(self.lm, prompts)
        first_token_at = None
        while True:
            if mask is not None:
                mask.apply(scores[None])
            token = int(state.choose(scores))
            first_token_at = first_token_at or perf_counter()
            reason = self._take(token)
            if reason is not None:
                return reason, first_token_at
            self.stop_check()
            scores = state.scores(self.lm)
