"""Hugging Face ZeroGPU hook: ``@spaces.GPU`` when the ``spaces`` package is importable, else nothing.

On ZeroGPU a GPU is attached only while a decorated function runs, for at most the seconds it
asks for; shorter requests get better queue priority, so the duration is computed from each
request (Handlers.edit_gpu_seconds and audex_gpu_seconds). Off Spaces ``spaces`` is not
installed and the functions run unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def gpu(duration: Callable[..., int]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator factory: ``spaces.GPU(duration=duration)`` or the identity."""
    try:
        import spaces
    except ImportError:
        return lambda fn: fn
    return spaces.GPU(duration=duration)
