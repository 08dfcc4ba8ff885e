"""Decode states per LM, and on CUDA a graph of each one's one-token step.

One step of the 2B thinker for the CFG pair launches ~450 small kernels; launched one by one from
Python they, not the GPU, set the pace (14.8 tokens/s under transformers' generate). Replayed as
one CUDA graph, a step is bounded by reading the weights instead (~4.5 GB in bf16 per token,
~3.7 GB under the phase mask, which skips most of the output head; the CFG pair's cache adds up to
~1.1 GB at 4,608 positions: 28 layers × keys and values × 2 rows × 8 heads × 128 × 2 bytes =
229 KB a position). The attention reads the whole allocated cache, masked, not only its filled
part: on an H200 a graphed 2B token takes 4.3 ms with 768 positions allocated and 6.2 ms with
4,096.

A state's cache is sized to its request rounded up to a multiple of 512 positions, so a few
states serve every request; idle ones are kept, at most ``MAX_IDLE`` per LM, and each request
checks one out, so concurrent requests never share buffers. A new state's first request waits
for its capture: two eager warm-up steps and one captured step (tens of milliseconds at 2B,
estimated; not measured). Graphs hold the weights' addresses and are dropped if the weights move.
The pool hangs off a weak map keyed by the LM, so it goes when the LM does.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from auk_app.audex.decode import DecodeState
from auk_app.audex.params import AudexSampling
from auk_app.audex.vocab import AudexVocab
from auk_app.runtime import capture_graph, weight_addresses

POSITION_MULTIPLE = 512
MAX_IDLE = 3


@dataclass
class _Entry:
    state: DecodeState
    graph: Any = None  # torch.cuda.CUDAGraph of state.advance


class _Pool:
    """Idle decode states of one LM, keyed by shape, least recently used first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[tuple[tuple, _Entry]] = []
        self.weights: tuple[int, ...] | None = None


_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_POOLS_LOCK = threading.Lock()


def _pool(lm) -> _Pool:
    with _POOLS_LOCK:
        pool = _POOLS.get(lm)
        if pool is None:
            pool = _POOLS[lm] = _Pool()
        return pool


def positions_for(needed: int) -> int:
    """Cache positions a state gets for a request that needs ``needed``: a multiple of 512."""
    return -(-needed // POSITION_MULTIPLE) * POSITION_MULTIPLE


@contextlib.contextmanager
def decoding(
    lm, vocab: AudexVocab, *, rows: int, needed: int, masked: bool, sampling: AudexSampling
) -> Iterator[tuple[DecodeState, Callable[[], None]]]:
    """A :class:`DecodeState` with at least ``needed`` positions, started with ``sampling``, and
    its one-token step.

    On CUDA the step replays the state's graph and the state returns to the LM's pool afterwards;
    elsewhere the state is the request's own and the step runs :meth:`DecodeState.advance` eagerly.
    """
    if next(lm.parameters()).device.type != "cuda":
        state = DecodeState(lm, vocab, rows=rows, positions=needed, masked=masked)
        state.start(sampling)
        yield state, lambda: state.advance(lm)
        return
    pool = _pool(lm)
    key = (rows, positions_for(needed), masked)
    entry = _checkout(pool, lm, key)
    if entry is None:
        entry = _Entry(DecodeState(lm, vocab, rows=rows, positions=key[1], masked=masked))
        entry.state.start(sampling)
        entry.graph = _capture(lm, entry.state)
    entry.state.start(sampling)  # after a capture too: its warm-up moved the counters and the generator
    try:
        yield entry.state, entry.graph.replay
    finally:
        _checkin(pool, key, entry)


def _checkout(pool: _Pool, lm, key: tuple) -> _Entry | None:
    weights = weight_addresses(lm)
    with pool.lock:
        if weights != pool.weights:
            pool.idle.clear()
            pool.weights = weights
        for i, (idle_key, entry) in enumerate(pool.idle):
            if idle_key == key:
                del pool.idle[i]
                return entry
    return None


def _checkin(pool: _Pool, key: tuple, entry: _Entry) -> None:
    with pool.lock:
        pool.idle.append((key, entry))
        del pool.idle[:-MAX_IDLE]


def _capture(lm, state: DecodeState):
    graph, _ = capture_graph(lambda: state.advance(lm), generator=state.generator)
    return graph
