"""A malformed request argument as the refusal vLLM's API server answers with a 400."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from vllm.exceptions import VLLMValidationError

from auk_app.audex.xargs import ArgumentError


@contextlib.contextmanager
def refused() -> Iterator[None]:
    """Turn an :class:`ArgumentError` raised inside into vLLM's validation error, whose 400 names
    the argument as its ``param`` beside the sentence."""
    try:
        yield
    except ArgumentError as exc:
        raise VLLMValidationError(str(exc), parameter=exc.field) from None
