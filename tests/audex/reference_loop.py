"""The eager reference loop the in-process sampler is held to.

Production never runs it: :func:`auk_app.audex.sampler.sample_stream` is the loop the app uses.
This one reads every token back and masks through
:class:`~auk_app.audex.tta.TTARVQPhaseMaskLogitsProcessor`'s own ``update_state``/``apply``
interface, as vLLM drives it, over the whole head; for one seed on one device it gives the fast
loop's tokens (tests/audex/test_audex_sampling.py, and bench/bench_speed.py's eager figure).
"""

from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter

import torch

from auk_app.audex.decode import DecodeState
from auk_app.audex.params import AudexSampling
from auk_app.audex.sampler import StreamLog
from auk_app.audex.token_sampler import SampledStream, prompt_rows
from auk_app.audex.tta import TTARVQPhaseMaskLogitsProcessor
from auk_app.audex.vocab import AudexVocab
from auk_app.progress import Progress, ShouldStop, silent
from tests.audex.vllm_types import BatchUpdate, Params, tta_rvq_args


def sample_stream_eager(
    lm: torch.nn.Module,
    cond_ids: Sequence[int],
    null_ids: Sequence[int] | None,
    vocab: AudexVocab,
    sampling: AudexSampling,
    *,
    label: str = "Sampling",
    progress: Progress = silent,
    should_stop: ShouldStop | None = None,
) -> SampledStream:
    """:func:`~auk_app.audex.sampler.sample_stream`'s stream, one token at a time: each read back
    at once, masked on the host by the contract processor, Stop checked before every token."""
    rows = prompt_rows(cond_ids, null_ids, sampling)
    log = StreamLog(vocab, sampling, label, progress, should_stop)
    with torch.inference_mode():
        state = DecodeState(lm, vocab, rows=len(rows), positions=len(cond_ids) + sampling.token_limit, masked=False)
        state.start(sampling)
        mask = None
        if sampling.use_mask:
            mask = TTARVQPhaseMaskLogitsProcessor(None, state.token.device, False)
            request = Params({"tta_rvq": tta_rvq_args(vocab, sampling.codec_cap)})
            mask.update_state(BatchUpdate(added=[(0, request, tuple(cond_ids), log.tokens)]))
        prompts = torch.tensor(rows, dtype=torch.long, device=state.token.device)
        started = perf_counter()
        log.check_stop()
        scores = state.prefill(lm, prompts)
        first_token_at = None
        while True:
            if mask is not None:
                mask.apply(scores[None])
            token = int(state.choose(scores))
            first_token_at = first_token_at or perf_counter()
            reason = log.take(token)
            if reason is not None:
                return log.stream(reason, started, first_token_at)
            log.check_stop()
            scores = state.scores(lm)
