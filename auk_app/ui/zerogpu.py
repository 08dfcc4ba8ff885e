"""Hugging Face ZeroGPU hook: ``@spaces.GPU`` when the ``spaces`` package is importable, else nothing.

On ZeroGPU a GPU is attached only while a decorated function runs, for at most the seconds it
asks for; shorter requests get better queue priority, so the duration is computed from each
request (:func:`edit_seconds`, :func:`audex_seconds`). Off Spaces ``spaces`` is not installed and
the functions run unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from auk_app.audex.params import MAX_CODEC_CAP
from auk_app.errors import AppError
from auk_app.knobs import audex_request
from auk_app.results import EditOrder
from auk_app.service import Studio

MOST_SECONDS = 180  # a budget is capped here: ZeroGPU queues longer asks behind shorter ones


def edit_seconds(studio: Studio, values: Mapping[str, Any]) -> int:
    """One edit's budget: loading, plus a cost per Euler step growing with the target length and the
    candidates (batched, each after the first costs about half of one)."""
    try:
        order = EditOrder.from_knobs(values, studio.config.limits)
        steps = studio.entry(order.model).checkpoint.defaults.over(order.request.knobs()).steps
        target, extra = order.request.seconds or 30.0, order.candidates - 1
    except AppError:
        steps, target, extra = 32, 30.0, 0
    return int(min(MOST_SECONDS, 30 + steps * target * 0.05 * (1 + extra / 2)))


def audex_seconds(studio: Studio, values: Mapping[str, Any]) -> int:
    """A text-to-audio budget: about 10 ms per guided token, twice with the comparison run."""
    try:
        tokens = audex_request(values, studio.config.limits, seconds=studio.audex_seconds).tokens_asked()
    except AppError:
        tokens = 2 * MAX_CODEC_CAP
    return int(min(MOST_SECONDS, 20 + tokens * 0.01))


def gpu(duration: Callable[..., int]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator factory: ``spaces.GPU(duration=duration)`` or the identity."""
    try:
        import spaces
    except ImportError:
        return lambda fn: fn
    return spaces.GPU(duration=duration)
