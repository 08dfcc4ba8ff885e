"""Audex text-to-audio token space: the RVQ phase mask and its helpers.

TTA output is a flat, frame-major interleave of a 4-codebook RVQ stream over
``<audiocodec_N>`` tokens: generated position ``p`` (0-based, counted from the token after
``<audiogen_start>``) must hold a codebook ``p % 4`` code, i.e. a codec id in
``[p%4 · 1024, (p%4 + 1) · 1024)``. The tokenizer defines 8192 codec symbols (XCodec1 has 8 RVQ
layers), but Audex models only the first 4, so codec ids 4096..8191 are never allowed.

Unmasked sampling produces streams XCodec1 cannot decode, so
:class:`TTARVQPhaseMaskLogitsProcessor` is what makes output valid. It speaks vLLM v1's
logits-processor interface by duck typing (no vLLM import) so that the same class runs inside
vLLM and under our in-process sampler, and it is driven per request by
``params.extra_args["tta_rvq"]``::

    {"phase_token_ids": [[...1024 ids...] x 4], "start_tid": int, "end_tid": int,
     "codec_cap": int | None, "start_in_prompt": bool}

Behaviour, quirks included, follows vLLM-Omni's processor exactly (the reference fixtures pin it):
tokens after ``<audiogen_end>`` or a second ``<audiogen_start>`` are just more positions.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch

from auk_app.audex.params import NUM_PHASES
from auk_app.audex.phase_table import allowed_table, mask_row

logger = logging.getLogger(__name__)

AUDEX_AUDIOGEN_START_TOKEN_ID = 131073
AUDEX_AUDIOGEN_END_TOKEN_ID = 131074
AUDEX_AUDIOCODEC_TOKEN_OFFSET = 196613  # token id of <audiocodec_0>
AUDEX_AUDIOCODEC_VOCAB_SIZE = 8192  # <audiocodec_0..8191> = ids 196613..204804
XCODEC1_CODEBOOK_SIZE = 1024
XCODEC1_NUM_CODEBOOKS = NUM_PHASES  # the package's public name of the codebook count (auk_app.__init__)
NEG_INF = float("-inf")

_START_MARKER = "<audiogen_start>"
_END_MARKER = "<audiogen_end>"
_NOT_IN_OUTPUT = -1  # _start_pos value: the prompt itself ended with <audiogen_start>


def build_tta_phase_token_ids(tokenizer: Any) -> tuple[list[list[int]], int, int]:
    """Group the tokenizer ids of ``<audiocodec_N>`` into the 4 RVQ phases.

    Phase ``p`` lists the ids of codec ids ``[p*1024, (p+1)*1024)`` in codec order; contiguity is
    not assumed and codec ids >= 4096 are never looked up. Any object with ``get_vocab()`` works.

    Returns ``(phase_token_ids, audiogen_start_tid, audiogen_end_tid)``. Raises ValueError when a
    marker is missing or a phase's codec vocabulary is incomplete.
    """
    vocab = tokenizer.get_vocab()
    start_tid = vocab.get(_START_MARKER)
    end_tid = vocab.get(_END_MARKER)
    if start_tid is None or end_tid is None:
        raise ValueError(f"Missing marker token ids: audiogen_start={start_tid}, audiogen_end={end_tid}")
    phase_token_ids = []
    for phase in range(NUM_PHASES):
        codec_ids = range(phase * XCODEC1_CODEBOOK_SIZE, (phase + 1) * XCODEC1_CODEBOOK_SIZE)
        missing = [c for c in codec_ids if f"<audiocodec_{c}>" not in vocab]
        if missing:
            raise ValueError(
                f"Incomplete codec vocab for RVQ phase {phase}: missing {len(missing)} codec ids "
                f"(e.g. {missing[:5]})"
            )
        phase_token_ids.append([int(vocab[f"<audiocodec_{c}>"]) for c in codec_ids])
    return phase_token_ids, int(start_tid), int(end_tid)


def validate_rvq_phase(
    codec_ids: list[int],
    codebook_size: int = XCODEC1_CODEBOOK_SIZE,
    num_codebooks: int = NUM_PHASES,
) -> dict[str, Any]:
    """Check that ``codec_ids[i]`` lies in RVQ phase ``i % num_codebooks``'s codec range.

    Takes codec ids (token id minus the codec offset), not token ids. A trailing partial frame is
    judged like any other position; dropping it is the caller's job. ``first_mismatch`` is
    ``[index, codec_id, codec_id // codebook_size, expected_phase]`` (the actual phase can be 4..7
    for upper-half ids) or None.
    """
    mismatch_count = 0
    first_mismatch = None
    for index, codec_id in enumerate(codec_ids):
        expected = index % num_codebooks
        if not expected * codebook_size <= codec_id < (expected + 1) * codebook_size:
            mismatch_count += 1
            if first_mismatch is None:
                first_mismatch = [index, int(codec_id), int(codec_id) // codebook_size, expected]
    return {
        "phase_valid": mismatch_count == 0,
        "mismatch_count": mismatch_count,
        "first_mismatch": first_mismatch,
        "codec_count": len(codec_ids),
    }


def _is_swap(direction: Any) -> bool:
    """vLLM's MoveDirectionality without importing vLLM: members are told apart by name."""
    return getattr(direction, "name", None) == "SWAP"


class TTARVQPhaseMaskLogitsProcessor:
    """Mask logits to the RVQ-phase-valid token set for Audex TTA requests.

    State per persistent-batch row ``idx``:

    * ``_req[idx]``: the request's ``start_tid``, ``end_tid``, ``codec_cap``, ``start_in_prompt``.
    * ``_output_tokens[idx]``: a live reference to the request's output-token list; the engine
      appends to it and ``apply`` reads its length every step.
    * ``_start_pos[idx]``: index of ``<audiogen_start>`` in the output once seen; -1 means the
      prompt already ended with it; absent while not yet seen.

    The phase table and the end id are latched from the first TTA request that carries them (all
    requests share one vocabulary). The disallow masks are built once, on the first ``apply``,
    from the real ``logits.shape[-1]``, so vocab-padding ids beyond the tokenizer are masked too;
    they are the negation of :func:`~auk_app.audex.phase_table.allowed_table`, one row per
    :func:`~auk_app.audex.phase_table.mask_row`, the rows the fast sampler uses.
    """

    def __init__(self, vllm_config: Any, device: torch.device | str, is_pin_memory: bool) -> None:
        self.device = torch.device(device)
        self._req: dict[int, dict[str, Any]] = {}
        self._output_tokens: dict[int, list[int]] = {}
        self._start_pos: dict[int, int] = {}
        self._phase_token_ids: list[list[int]] | None = None
        self._mask_end_tid: int | None = None
        self._disallow: torch.Tensor | None = None  # [6, V], rows as in phase_table

    def is_argmax_invariant(self) -> bool:
        """False: the mask changes which token wins, so it must also run for greedy requests."""
        return False

    def update_state(self, batch_update: Any) -> None:
        """Apply a vLLM ``BatchUpdate``: removed rows, then added rows, then moves."""
        if batch_update is None:
            return
        for idx in batch_update.removed:
            self._pop(idx)
        for idx, params, _prompt_ids, output_token_ids in batch_update.added:
            tta = self._tta_args(params)
            if not tta:
                self._pop(idx)  # a non-TTA request landed on a row that held a TTA one
                continue
            self._req[idx] = {
                "start_tid": tta.get("start_tid"),
                "end_tid": tta.get("end_tid"),
                "codec_cap": tta.get("codec_cap"),
                "start_in_prompt": bool(tta.get("start_in_prompt", False)),
            }
            self._output_tokens[idx] = output_token_ids
            if self._req[idx]["start_in_prompt"]:
                self._start_pos[idx] = _NOT_IN_OUTPUT
            else:
                self._start_pos.pop(idx, None)
            if self._phase_token_ids is None and tta.get("phase_token_ids") is not None:
                self._phase_token_ids = [list(ids) for ids in tta["phase_token_ids"]]
            if self._mask_end_tid is None and tta.get("end_tid") is not None:
                self._mask_end_tid = int(tta["end_tid"])
        if not self._req:
            return
        for src, dst, direction in batch_update.moved:
            src_state = self._pop(src)
            dst_state = self._pop(dst)
            self._put(dst, src_state)
            if _is_swap(direction):
                self._put(src, dst_state)

    def _tta_args(self, params: Any) -> dict[str, Any] | None:
        """The request's ``tta_rvq`` dict, or None for a non-TTA request; a subclass may build it
        from other arguments (the vLLM plugin takes flat ``vllm_xargs``)."""
        return (getattr(params, "extra_args", None) or {}).get("tta_rvq")

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """Set every id not allowed at a TTA row's current position to -inf, in place.

        ``logits`` is ``[num_rows, V]``; rows at or beyond ``num_rows`` (not scheduled this step)
        are skipped and picked up again once they are back in range.
        """
        if not self._req:
            return logits
        if self._disallow is None:
            self._build_masks(logits.shape[-1])
        num_rows = logits.shape[0]
        for idx, req in self._req.items():
            if idx >= num_rows:
                continue
            output_tokens = self._output_tokens.get(idx)
            if output_tokens is None:
                continue
            start_pos = self._start_pos.get(idx)
            if start_pos is None:
                start_pos = _first_index(output_tokens, req["start_tid"])
                if start_pos is None:
                    continue  # before <audiogen_start>: free text, unmasked
                self._start_pos[idx] = start_pos
            position = len(output_tokens) - start_pos - 1  # >= 0: start_pos is -1 or an index < len
            logits[idx].masked_fill_(self._disallow[mask_row(position, req["codec_cap"])], NEG_INF)
        return logits

    def _build_masks(self, vocab: int) -> None:
        self._disallow = ~allowed_table(self._phase_token_ids, self._mask_end_tid, vocab, self.device)
        logger.info("TTA RVQ mask built: vocab=%d end_tid=%d pid=%d", vocab, self._mask_end_tid, os.getpid())

    def _pop(self, idx: int) -> tuple[Any, Any, Any]:
        return (self._req.pop(idx, None), self._output_tokens.pop(idx, None), self._start_pos.pop(idx, None))

    def _put(self, idx: int, state: tuple[Any, Any, Any]) -> None:
        for table, value in zip((self._req, self._output_tokens, self._start_pos), state):
            if value is not None:
                table[idx] = value


def _first_index(tokens: list[int], token_id: int | None) -> int | None:
    for index, token in enumerate(tokens):
        if token == token_id:
            return index
    return None
