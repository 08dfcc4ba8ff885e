"""What the pipeline asks of a token sampler, and what one gives back.

Two implementations: :class:`auk_app.audex.sampler.LocalSampler` (the LM in this process) and
:class:`auk_app.audex.remote.RemoteSampler` (an Audex vLLM server). The pipeline holds one and
never asks which. Both take the request's :class:`~auk_app.audex.params.AudexSampling` as it was
built, report ``progress(label, done, total)`` per token (:mod:`auk_app.progress`) and raise
:class:`~auk_app.errors.Cancelled` when ``should_stop()`` turns True.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Protocol

from auk_app.audex.params import AudexSampling
from auk_app.audex.vocab import AudexVocab
from auk_app.errors import Cancelled
from auk_app.progress import Progress, ShouldStop

END_TOKEN = "end_token"  # the model sampled <audiogen_end> on a frame boundary
CODEC_CAP = "codec_cap"  # the cap was reached (masked: the mask forced <audiogen_end> there)
MAX_TOKENS = "max_tokens"  # the token budget ran out first

# A request's deadline on a server: a start-up allowance (the model list, the server's queue, the
# prompt) plus 1 s per TOKEN_RATE_FLOOR tokens asked, at most MAX_REQUEST_SECONDS. One user gets
# well over 100 tokens/s (4000 tokens in well under a minute); a server averaging under 20 is
# overloaded or stuck.
DEADLINE_ALLOWANCE_SECONDS = 30.0
TOKEN_RATE_FLOOR = 20.0
MAX_REQUEST_SECONDS = 600.0


@dataclass(frozen=True)
class SampledStream:
    """Generated ids (prompt excluded; ``<audiogen_end>`` included when sampled) and timings."""

    token_ids: tuple[int, ...]
    end_reason: str
    prefill_seconds: float
    sampling_seconds: float


@dataclass(frozen=True)
class Deadline:
    """When a request's time on a server ends, shared by every call it makes: with a per-call
    limit, a request with a comparison run could hold the one model slot for two full allowances."""

    seconds: float
    basis: str  # how it was sized, for the sentence
    ends_at: float  # perf_counter() time

    @classmethod
    def after(cls, seconds: float, basis: str) -> Deadline:
        return cls(seconds, basis, perf_counter() + seconds)

    @classmethod
    def for_tokens(cls, tokens: int) -> Deadline:
        """Sized from the tokens a request may generate over all its runs."""
        seconds = min(MAX_REQUEST_SECONDS, DEADLINE_ALLOWANCE_SECONDS + tokens / TOKEN_RATE_FLOOR)
        return cls.after(seconds, f"{DEADLINE_ALLOWANCE_SECONDS:g} s plus 1 s per {TOKEN_RATE_FLOOR:g} of the "
                                  f"{tokens} tokens asked, at most {MAX_REQUEST_SECONDS:g} s")


def end_reason(tokens: Sequence[int], vocab: AudexVocab, sampling: AudexSampling) -> str | None:
    """Why the stream ``tokens`` ends after its last token, or None while it goes on."""
    if tokens[-1] == vocab.end_tid:
        forced = sampling.use_mask and len(tokens) - 1 >= sampling.codec_cap
        return CODEC_CAP if forced else END_TOKEN
    if not sampling.use_mask and len(tokens) >= sampling.codec_cap:
        return CODEC_CAP
    if len(tokens) >= sampling.max_tokens:
        return MAX_TOKENS
    return None


def stopped(done: int, total: int) -> Cancelled:
    """What Stop raises in either sampler: how far the run got (``total`` 0: it had not started)."""
    got = f"after {done} of at most {total} tokens" if total else "before it started"
    return Cancelled(f"Generation was stopped {got}, so no audio was made. Press Generate to start again.")


def prompt_rows(cond_ids: Sequence[int], null_ids: Sequence[int] | None, sampling: AudexSampling) -> list[list[int]]:
    """The prompt rows either sampler sends: the conditional one, and with guidance its null twin of
    the same length."""
    rows = [list(cond_ids)]
    if sampling.guided:
        if null_ids is None or len(null_ids) != len(cond_ids):
            raise ValueError("CFG needs a null prompt of exactly the conditional prompt's length")
        rows.append(list(null_ids))
    return rows


class TokenSampler(Protocol):
    """Samples TTA token streams for :class:`~auk_app.audex.pipeline.AudexPipeline`."""

    @property
    def engine(self) -> str:
        """``"in-process"`` or ``"vllm"``, for the manifest."""

    @property
    def host(self) -> str | None:
        """The server's ``host:port`` (safe to show), None in process."""

    def load(self) -> None:
        """Load what sampling needs now (e.g. at app start) instead of on the first request."""

    def deadline(self, tokens: int) -> Deadline | None:
        """The deadline of a request that may generate ``tokens`` over all its runs, starting now;
        None where there is no server to wait for."""

    def max_positions(self, *, should_stop: ShouldStop | None, deadline: Deadline | None) -> int:
        """The model's positions: the prompt and every generated token must fit."""

    def sample(self, cond_ids: Sequence[int], null_ids: Sequence[int] | None, vocab: AudexVocab,
               sampling: AudexSampling, *, label: str, progress: Progress, should_stop: ShouldStop | None,
               deadline: Deadline | None) -> SampledStream:
        """One stream after the prompt ``cond_ids`` (ending with ``<audiogen_start>``) and, when
        ``sampling.guided``, its null twin ``null_ids`` of the same length. ``progress(label, done,
        total)`` runs for every token (``total`` is ``sampling.token_limit``)."""
