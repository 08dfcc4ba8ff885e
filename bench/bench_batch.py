"""Edits per second with several users at once: what step batching buys.

``edits_per_s(editor, users)`` times ``users`` threads that each run whole edits back to back
(condition, reference draw, Euler steps, decode) through one shared editor, and returns the
finished edits per wall second. ``bench_speed`` reports it at 1 and 8 users, on its random
real-size models (a 10 s Base edit on CUDA, scaled down on the CPU), as ``auk_edits_per_s_1``
and ``auk_edits_per_s_8``.

:class:`BatchedEditor` runs an edit the way ``AuKPipeline`` does with a step batcher: the thinker
and the VAE take turns under one lock, the Euler steps go through a :class:`StepBatcher`, so
concurrent users share DiT steps. Anything with an ``edit(seed)`` method can be timed instead,
e.g. an ``AuKPipeline`` behind ``lambda seed: pipeline.generate(request_for(seed))``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import torch

from auk_app.auk.batching import StepBatcher
from auk_app.auk.conditioner import fuse_hidden_states
from auk_app.auk.sampler import SolveSpec
from auk_app.auk.step_graphs import StepGraphs
from auk_app.auk.vae_decode import fast_decode
from auk_app.runtime import Precision, autocast

WARMUP_ROUNDS = 2  # on CUDA a bucket's first solo edit runs eagerly and its second captures the graph


class BatchedEditor:
    """A whole Base edit of the bench's clip, on shared modules; ``edit(seed)`` is thread-safe.
    ``max_batch`` 8: the most users ``bench_speed`` times, all in one step; ``pack``: shared steps
    attend over each edit's valid tokens alone (auk.packing)."""

    def __init__(self, *, dit, vae, thinker, fusion: tuple, ids: torch.Tensor, ref_wav: torch.Tensor,
                 ref_mask: torch.Tensor, target_frames: int, recipe: dict, device: torch.device,
                 precision: Precision, max_batch: int = 8, pack: bool = False):  # fmt: skip
        self.dit, self.vae, self.thinker, self.fusion = dit, vae, thinker, fusion
        self.ids, self.ref_wav, self.ref_mask = ids, ref_wav, ref_mask
        self.target_frames, self.recipe = target_frames, recipe
        self.device, self.precision = device, precision
        self.batcher = StepBatcher(StepGraphs(dit, compute=precision.compute), max_batch=max_batch, pack=pack)
        self._lock = threading.Lock()  # the pipeline's: the thinker and the VAE serve one request at a time

    def edit(self, seed: int) -> torch.Tensor:
        with self._lock, torch.inference_mode():
            with autocast(self.device, self.precision):
                hidden = self.thinker(self.ids, output_hidden_states=True).hidden_states[1:]
                text = fuse_hidden_states(hidden, *self.fusion)
            mean, std = self.vae.posterior(self.ref_wav)
            generator = torch.Generator(device=self.device).manual_seed(seed + 1)
            ref = self.vae.latents(mean, std, sample=True, generator=generator)
        with autocast(self.device, self.precision):
            latents = self.batcher.sample(SolveSpec(text=text, c_mask=None, ref=ref, ref_mask=self.ref_mask,
                                                    gen_frames=self.target_frames, seed=seed, **self.recipe))
        with self._lock, torch.inference_mode():
            return fast_decode(self.vae, latents.float()).cpu()  # .cpu(): the edit ends when its audio is on the host


def _round(edit: Callable[[int], object], users: int, edits_per_user: int, first_seed: int) -> float:
    """Wall seconds for ``users`` threads, started together, to finish ``edits_per_user`` edits each."""
    start = threading.Barrier(users + 1)
    errors: list[BaseException] = []

    def user(index: int) -> None:
        start.wait()
        try:
            for k in range(edits_per_user):
                edit(first_seed + index * edits_per_user + k)
        except BaseException as exc:  # re-raised below: a failed edit must not pass as a fast one
            errors.append(exc)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - began


def edits_per_s(editor, users: int, *, edits_per_user: int = 2, warmup_rounds: int = WARMUP_ROUNDS) -> float:
    """Whole edits finished per wall second with ``users`` concurrent users of ``editor`` (an
    object with ``edit(seed)``); a few untimed rounds at the same concurrency come first."""
    for r in range(warmup_rounds):
        _round(editor.edit, users, 1, first_seed=10_000 * (r + 1))
    seconds = _round(editor.edit, users, edits_per_user, first_seed=0)
    return users * edits_per_user / seconds
