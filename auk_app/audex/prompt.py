"""The two TTA prompts: the conditional ChatML prompt and its length-matched null twin.

The checkpoint's bundled chat template is not used: it opens ``<think>\\n``, while the task is
primed with a closed ``<think></think>`` followed directly by ``<audiogen_start>``. The strings
follow vLLM-Omni's current ``prompt.py`` byte for byte.
"""

from __future__ import annotations

from typing import Any

AUDEX_SYSTEM_PROMPT = "You are a helpful and harmless assistant.\n\nYou are not allowed to use any tools."
UNK_TOKEN = "<unk>"
_MAX_NULL_ITERS = 64

_HEAD = (
    "<|im_start|>system\n" + AUDEX_SYSTEM_PROMPT + "<|im_end|>\n"
    "<|im_start|>user\n<|text to audio|> Generate audio for this caption."
)
_TAIL = "<|im_end|>\n<|im_start|>assistant\n<think></think><audiogen_start>"


def build_tta_cond_prompt(caption: str) -> str:
    """The conditional prompt: the stripped caption follows ``caption.`` after one space.

    Concatenation, not ``str.format``, so braces in a caption are kept as typed.
    """
    caption = caption.strip()
    if not caption:
        raise ValueError("Audex TTA requires a non-empty caption")
    return _HEAD + " " + caption + _TAIL


def _null_prompt(n_unk: int) -> str:
    # No space before the run: <unk> is a special token, and a space would be a token of its own,
    # making some lengths unreachable.
    return _HEAD + UNK_TOKEN * n_unk + _TAIL


def build_tta_null_prompt(tokenizer: Any, cond_prompt: str) -> str:
    """The unconditional prompt: the caption slot holds a run of ``<unk>`` of matching length.

    The run length is searched so that ``len(tokenizer.encode(null)) == len(tokenizer.encode(cond))``
    (default ``encode`` arguments, as vLLM tokenizes string prompts), so the CFG pair needs no
    padding and shares RoPE positions. Raises ValueError when no run length matches: a misaligned
    pair must not be sampled.
    """
    target = len(tokenizer.encode(cond_prompt))
    n_unk = 1
    for _ in range(_MAX_NULL_ITERS):
        null = _null_prompt(n_unk)
        diff = target - len(tokenizer.encode(null))
        if diff == 0:
            return null
        if diff < 0 and n_unk == 1:
            break
        n_unk = max(1, n_unk + diff)
    raise ValueError(f"Could not length-match the CFG null prompt to {target} tokens")
