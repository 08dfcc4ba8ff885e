"""The request arguments (``vllm_xargs``) the app sends and the plugin reads: one contract.

vLLM 0.32 takes only flat values there (str, int, float or flat lists), so a TTA request names
its codec cap and the plugin builds the 4 x 1024 phase table from the served tokenizer itself.
A CFG pair is two requests with one ``cfg_pair_id``: the conditional one and its null-prompt
companion, whose logits are blended every step and whose sampled token is the cond row's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auk_app.audex.params import NUM_PHASES

TTA_CODEC_CAP = "audex_codec_cap"  # int: present = phase-mask this request; the mask ends it here
CFG_PAIR_ID = "cfg_pair_id"  # str shared by both members of a pair
CFG_ROLE = "cfg_role"  # "cond" or "uncond"
CFG_SCALE = "cfg_scale"  # float >= 1: blended = uncond + scale · (cond − uncond)
COND, UNCOND = "cond", "uncond"


def pair_role(extra_args: Mapping[str, Any] | None) -> tuple[str, str, float] | None:
    """``(pair_id, role, scale)`` of a CFG pair member, None for any other request.

    Raises ValueError, with a sentence naming the argument, when the CFG arguments are malformed.
    """
    extra_args = extra_args or {}
    if CFG_PAIR_ID not in extra_args and CFG_ROLE not in extra_args:
        return None
    pair_id, role = extra_args.get(CFG_PAIR_ID), extra_args.get(CFG_ROLE)
    scale = extra_args.get(CFG_SCALE, 1.0)
    if not isinstance(pair_id, str) or not pair_id:
        raise ValueError(f"{CFG_PAIR_ID} must be a non-empty string naming the CFG pair; got {pair_id!r}.")
    if role not in (COND, UNCOND):
        raise ValueError(f"{CFG_ROLE} must be {COND!r} or {UNCOND!r}; got {role!r}.")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 1.0 <= scale <= 100.0:
        raise ValueError(f"{CFG_SCALE} must be a number from 1 to 100; got {scale!r}.")
    return pair_id, role, float(scale)


def codec_cap(extra_args: Mapping[str, Any] | None) -> int | None:
    """The codec cap of a phase-masked TTA request, None for any other request.

    Raises ValueError when the cap is not a positive multiple of 4 (one frame is 4 codec tokens).
    """
    cap = (extra_args or {}).get(TTA_CODEC_CAP)
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0 or cap % NUM_PHASES:
        raise ValueError(f"{TTA_CODEC_CAP} must be a positive multiple of {NUM_PHASES}; got {cap!r}.")
    return cap
