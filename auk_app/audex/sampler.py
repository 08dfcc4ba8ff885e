"""Guided, phase-masked sampling of one TTA token stream in this process, on fixed-shape device buffers.

One token, in vLLM v1's sampler order (:mod:`auk_app.audex.decode` does the math):

1. last-position logits of the conditional row and the length-matched null row, cast to float32;
2. CFG blend ``uncond + s·(cond − uncond)`` (skipped at s = 1, where only the cond row runs);
3. the RVQ phase mask;
4. temperature, top-k (ties at the k-th value kept), top-p; draw ONE token;
5. the conditional row's token is fed to both rows, so they stay token-identical.

The loop never waits for the host between tokens: the mask is a device-table row per position
and the draw happens on the device (a CUDA graph replay per token on CUDA); the host syncs once
per ``CHUNK`` tokens (four frames) to find the end, report progress and check Stop, and drops
what was sampled past the end. Under the mask it computes steps 1-4 only for the 4,097 ids the
mask can ever allow (:mod:`~auk_app.audex.phase_head`), not the ~205k-id vocabulary, and draws
with the same ranks and noise as a draw over all of it. The tests hold it to an eager reference
loop (``tests/audex/reference_loop.py``) that reads every token back and masks through
:class:`~auk_app.audex.tta.TTARVQPhaseMaskLogitsProcessor`'s own ``update_state``/``apply``
interface, as vLLM drives it: for one seed on one device both give the same tokens.

Draws come from a per-request generator on the LM's device, seeded with the request's seed; the
global RNG is never touched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

import torch

from auk_app.audex.decode_graphs import decoding
from auk_app.audex.params import AudexSampling
from auk_app.audex.thinker import AudexThinker, TokenizerOnce, load_thinker
from auk_app.audex.token_sampler import Deadline, SampledStream, end_reason, prompt_rows, stopped
from auk_app.audex.vocab import AudexVocab
from auk_app.progress import Progress, ShouldStop
from auk_app.quantize import LM_BLOCKS, NONE, Quantization

CHUNK = 16  # tokens the loop runs between host syncs: four frames, so a sync falls on a frame boundary


class LocalSampler:
    """The :class:`~auk_app.audex.token_sampler.TokenSampler` of the thinker in this process,
    loaded on first use, once, behind a lock, then shared read-only: all per-request state (KV
    cache, generator, mask) lives in the call, so concurrent requests do not interfere."""

    engine = "in-process"
    host = None

    def __init__(self, thinker_dir: Path, *, device: torch.device, dtype: torch.dtype,
                 text: TokenizerOnce | None = None, quantization: Quantization = NONE) -> None:
        """``text``: the folder's tokenizer as the pipeline loads it, so it is read once, not twice;
        ``quantization``: what becomes of the LM's decoder-layer linears once loaded."""
        self.thinker_dir, self.device, self.dtype = thinker_dir, device, dtype
        self.quantization = quantization
        self.text = text or TokenizerOnce(thinker_dir)
        self._thinker: AudexThinker | None = None
        self._lock = threading.Lock()

    @property
    def thinker(self) -> AudexThinker:
        """The loaded thinker (LM, tokenizer, token layout); loads on first access."""
        with self._lock:
            if self._thinker is None:
                thinker = load_thinker(self.thinker_dir, device=self.device, dtype=self.dtype, text=self.text())
                self.quantization.apply(thinker.model, LM_BLOCKS)
                self._thinker = thinker
            return self._thinker

    def load(self) -> None:
        _ = self.thinker

    def deadline(self, tokens: int) -> Deadline | None:
        return None  # no server to wait for

    def max_positions(self, *, should_stop: ShouldStop | None, deadline: Deadline | None) -> int:
        return self.thinker.model.config.max_position_embeddings

    def sample(self, cond_ids: Sequence[int], null_ids: Sequence[int] | None, vocab: AudexVocab,
               sampling: AudexSampling, *, label: str, progress: Progress, should_stop: ShouldStop | None,
               deadline: Deadline | None) -> SampledStream:
        return sample_stream(self.thinker.model, cond_ids, null_ids, vocab, sampling, label=label, progress=progress,
                             should_stop=should_stop)


@dataclass
class StreamLog:
    """The host's side of one run: the tokens read back so far, progress and the Stop check."""

    vocab: AudexVocab
    sampling: AudexSampling
    label: str
    progress: Progress
    should_stop: ShouldStop | None
    tokens: list[int] = field(default_factory=list)  # live: the eager reference's mask reads it

    def check_stop(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise stopped(len(self.tokens), self.sampling.token_limit)

    def take(self, token: int) -> str | None:
        """Append one token read back from the device; its end reason, if it ends the stream."""
        self.tokens.append(token)
        self.progress(self.label, len(self.tokens), self.sampling.token_limit)
        return end_reason(self.tokens, self.vocab, self.sampling)

    def stream(self, reason: str, started: float, first_token_at: float) -> SampledStream:
        return SampledStream(
            token_ids=tuple(self.tokens),
            end_reason=reason,
            prefill_seconds=first_token_at - started,
            sampling_seconds=perf_counter() - first_token_at,
        )


def sample_stream(
    lm: torch.nn.Module,
    cond_ids: Sequence[int],
    null_ids: Sequence[int] | None,
    vocab: AudexVocab,
    sampling: AudexSampling,
    *,
    label: str,
    progress: Progress,
    should_stop: ShouldStop | None = None,
) -> SampledStream:
    """Sample one stream from a causal LM whose prompt ends with ``<audiogen_start>``.

    ``null_ids`` (the length-matched null prompt) is used when ``sampling.guided``.
    ``progress(label, done, total)`` runs for every token (``total`` is the most the run can
    produce); ``should_stop()`` is checked before the prompt and then before every ``CHUNK``
    tokens and raises :class:`Cancelled` when it returns True.
    """
    rows = prompt_rows(cond_ids, null_ids, sampling)
    log = StreamLog(vocab, sampling, label, progress, should_stop)
    needed = len(cond_ids) + sampling.token_limit
    with torch.inference_mode(), decoding(
        lm, vocab, rows=len(rows), needed=needed, masked=sampling.use_mask, sampling=sampling
    ) as (state, step):
        prompts = torch.tensor(rows, dtype=torch.long, device=state.token.device)
        started = perf_counter()
        log.check_stop()
        state.choose(state.prefill(lm, prompts))
        reason, first_token_at = _chunks(state.generated, step, log)
    return log.stream(reason, started, first_token_at)


def _chunks(generated: torch.Tensor, step: Callable[[], None], log: StreamLog) -> tuple[str, float]:
    """Steps on the device between syncs; the host reads each chunk's tokens once."""
    total = log.sampling.token_limit
    launched, first_token_at = 1, None
    while True:
        new = generated[len(log.tokens) : launched].tolist()  # the one host sync of the chunk
        first_token_at = first_token_at or perf_counter()
        for token in new:
            reason = log.take(token)
            if reason is not None:
                return reason, first_token_at
        log.check_stop()
        chunk_end = min(total, (launched // CHUNK + 1) * CHUNK)
        for _ in range(chunk_end - launched):
            step()
        launched = chunk_end
