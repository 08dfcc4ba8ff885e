"""Classifier-free guidance over a CFG pair of requests, as a vLLM v1 logits processor.

``--logits-processors auk_app.audex_vllm.cfg:AudexCFGLogitsProcessor``, listed BEFORE the phase
mask so the order is blend, then mask. Every step, for each pair whose two rows are in the batch
at the same output length, ``uncond + s·(cond − uncond)`` is written into both rows. Both members
carry the same ``seed`` (refused without one), and vLLM draws a seeded row's token from its own
generator, whatever the row's place in the batch: identical rows draw identical tokens, so the
pair stays token-identical through public request parameters alone.
:class:`auk_app.audex_vllm.scheduler.AudexPairScheduler` keeps the pair step-locked.
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor

from auk_app.audex import xargs
from auk_app.audex_vllm.refusal import refused


class AudexCFGLogitsProcessor(LogitsProcessor):
    """Blends each cond row with its uncond companion; rows of other requests are untouched."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Refuse malformed CFG arguments and an unseeded pair member at the API server, as a 400
        with one sentence naming the argument."""
        with refused():
            if xargs.pair_role(sampling_params.extra_args) is not None:
                xargs.check_pair_seed(sampling_params.seed)

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self._members: dict[int, tuple[str, str, float]] = {}  # row -> (pair id, role, scale)
        self._outputs: dict[int, list[int]] = {}  # row -> live output-token list

    def is_argmax_invariant(self) -> bool:
        """False: the blend changes which token wins, so it must run for greedy requests too."""
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for idx in batch_update.removed:
            self._members.pop(idx, None)
            self._outputs.pop(idx, None)
        for idx, params, _prompt_ids, output_token_ids in batch_update.added:
            member = xargs.pair_role(getattr(params, "extra_args", None))
            if member is None:
                self._members.pop(idx, None)
                self._outputs.pop(idx, None)
            else:
                self._members[idx], self._outputs[idx] = member, output_token_ids
        for src, dst, direction in batch_update.moved:
            moved = (self._members.pop(src, None), self._outputs.pop(src, None))
            other = (self._members.pop(dst, None), self._outputs.pop(dst, None))
            self._put(dst, moved)
            if direction.name == "SWAP":
                self._put(src, other)

    def _put(self, idx: int, state: tuple[Any, Any]) -> None:
        if state[0] is not None:
            self._members[idx], self._outputs[idx] = state

    def pairs(self, num_rows: int) -> list[tuple[int, int, float]]:
        """``(cond_row, uncond_row, scale)`` of every pair with both rows below ``num_rows`` and
        at the same output length (a pair split by preemption is left unguided, never misblended)."""
        rows: dict[str, dict[str, tuple[int, float]]] = {}
        for idx, (pair_id, role, scale) in self._members.items():
            if idx < num_rows:
                rows.setdefault(pair_id, {})[role] = (idx, scale)
        found = []
        for roles in rows.values():
            if xargs.COND in roles and xargs.UNCOND in roles:
                (cond, scale), (uncond, _) = roles[xargs.COND], roles[xargs.UNCOND]
                if len(self._outputs[cond]) == len(self._outputs[uncond]):
                    found.append((cond, uncond, scale))
        return found

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """``logits`` is ``[num_rows, V]`` float32; both rows of a pair get the blend, in place."""
        if not self._members:
            return logits
        for cond, uncond, scale in self.pairs(logits.shape[0]):
            blended = logits[uncond] + scale * (logits[cond] - logits[uncond])
            logits[cond] = blended
            logits[uncond] = blended
        return logits

