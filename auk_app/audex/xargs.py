"""The request arguments (``vllm_xargs``) the app sends and the plugin reads: one contract.

vLLM 0.32 takes only flat values there (str, int, float or flat lists), so a TTA request names
its codec cap and the plugin builds the 4 x 1024 phase table from the served tokenizer itself.
A CFG pair is two requests with one ``cfg_pair_id`` and one ``seed``: the conditional one and
its null-prompt companion, whose logits are blended into both rows every step, so the same seed
draws the same token in both.
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


class ArgumentError(ValueError):
    """A malformed request argument: the sentence, and ``field``, the argument it names (the
    plugin reports it as the refusal's ``param``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def pair_role(extra_args: Mapping[str, Any] | None) -> tuple[str, str, float] | None:
    """``(pair_id, role, scale)`` of a CFG pair member, None for a request with none of the CFG
    arguments. Any of them without the others is refused, not run unguided.

    Raises :class:`ArgumentError` naming the first malformed or missing argument.
    """
    extra_args = extra_args or {}
    given = [name for name in (CFG_PAIR_ID, CFG_ROLE, CFG_SCALE) if name in extra_args]
    if not given:
        return None
    pair_id, role = extra_args.get(CFG_PAIR_ID), extra_args.get(CFG_ROLE)
    scale = extra_args.get(CFG_SCALE, 1.0)
    if CFG_ROLE in extra_args and role not in (COND, UNCOND):
        raise ArgumentError(CFG_ROLE, f"{CFG_ROLE} must be {COND!r} or {UNCOND!r}; got {role!r}.")
    for name in (CFG_PAIR_ID, CFG_ROLE):
        if name not in extra_args:
            raise ArgumentError(name, f"{name} is missing: a request that gives {' and '.join(given)} is a member of "
                                      f"a CFG pair, two requests that share one {CFG_PAIR_ID} and give {CFG_ROLE} "
                                      f"{COND!r} and {UNCOND!r}.")
    if not isinstance(pair_id, str) or not pair_id:
        raise ArgumentError(CFG_PAIR_ID, f"{CFG_PAIR_ID} must be a non-empty string naming the CFG pair; "
                                         f"got {pair_id!r}.")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 1.0 <= scale <= 100.0:
        raise ArgumentError(CFG_SCALE, f"{CFG_SCALE} must be a number from 1 to 100; got {scale!r}.")
    return pair_id, role, float(scale)


def check_pair_seed(seed: int | None) -> None:
    """A pair member must be seeded: both members draw each token from the same blended logits, and
    only the same seed makes them draw the same one. :class:`ArgumentError` naming ``seed`` if not."""
    if seed is None:
        raise ArgumentError("seed", "A CFG pair member needs a seed, the same in both members, so that they draw "
                                    "the same tokens from the blended logits; give seed.")


def codec_cap(extra_args: Mapping[str, Any] | None) -> int | None:
    """The codec cap of a phase-masked TTA request, None for any other request.

    Raises :class:`ArgumentError` when the cap is not a positive multiple of 4 (one frame is 4 codec tokens).
    """
    cap = (extra_args or {}).get(TTA_CODEC_CAP)
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0 or cap % NUM_PHASES:
        raise ArgumentError(TTA_CODEC_CAP, f"{TTA_CODEC_CAP} must be a positive multiple of {NUM_PHASES}; got {cap!r}.")
    return cap
