"""The RVQ phase mask as a small table: six vocab-wide rows and the rule that picks one per position.

Every position of a TTA stream is allowed one of six id sets, so the mask is a [6, V] boolean
table plus a row index per generated position: rows 0–3 hold phase p's codec ids (row 0 also
serves position 0, where the clip cannot end yet), row 4 phase 0's ids and ``<audiogen_end>`` (a
frame boundary, where it may end), row 5 ``<audiogen_end>`` alone (the codec cap is reached).
:class:`~auk_app.audex.tta.TTARVQPhaseMaskLogitsProcessor` picks its row per step on the host;
the fast sampler looks rows up on the device from a per-request schedule of the same rule, so
both mask every position identically.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from auk_app.audex.params import NUM_PHASES

PHASE0_OR_END = 4  # row: a frame boundary after at least one frame
END_ONLY = 5  # row: at or past the codec cap


def mask_row(position: int, codec_cap: int | None) -> int:
    """The table row that applies at generated position ``position`` (0 = right after the start)."""
    if codec_cap is not None and position >= codec_cap:
        return END_ONLY
    phase = position % NUM_PHASES
    return PHASE0_OR_END if phase == 0 and position > 0 else phase


def allowed_table(
    phase_token_ids: Sequence[Sequence[int]] | None,
    end_tid: int | None,
    vocab: int,
    device: torch.device | str,
) -> torch.Tensor:
    """The [6, vocab] table, True where an id is allowed. ``vocab`` is the logits' real width, so
    ids past the tokenizer (vocab padding) are never allowed. Raises RuntimeError naming what is
    missing or out of range."""
    if phase_token_ids is None:
        raise RuntimeError(
            "TTA RVQ mask: phase token ids missing; extra_args['tta_rvq'] was not provided for a TTA request."
        )
    if len(phase_token_ids) != NUM_PHASES:
        raise RuntimeError(f"TTA RVQ mask: expected {NUM_PHASES} phase id lists, got {len(phase_token_ids)}.")
    table = torch.zeros(END_ONLY + 1, vocab, dtype=torch.bool, device=device)
    for phase, ids in enumerate(phase_token_ids):
        if not ids:
            raise RuntimeError(f"TTA RVQ mask: phase {phase} has no token ids.")
        if min(ids) < 0 or max(ids) >= vocab:
            raise RuntimeError(
                f"TTA RVQ mask: phase {phase} token ids span {min(ids)}..{max(ids)}, outside the logits width {vocab}."
            )
        table[phase, torch.tensor(list(ids), dtype=torch.long, device=device)] = True
    if end_tid is None or not 0 <= end_tid < vocab:
        raise RuntimeError(f"TTA RVQ mask: end token id {end_tid} is outside the logits width {vocab}.")
    table[PHASE0_OR_END] = table[0]
    table[PHASE0_OR_END, end_tid] = True
    table[END_ONLY, end_tid] = True
    return table


def row_schedule(positions: int, codec_cap: int | None, device: torch.device | str) -> torch.Tensor:
    """``mask_row`` of positions 0..positions-1 as a long tensor on ``device``."""
    return torch.tensor([mask_row(p, codec_cap) for p in range(positions)], dtype=torch.long, device=device)
