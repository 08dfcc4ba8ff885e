"""The one progress and stop contract of every pipeline, so the UI, the API and the engines speak it alike."""

from __future__ import annotations

from collections.abc import Callable

# ``progress(phase, done, total)``: the phase's name ("load", "condition", "sample", "decode", a whole
# recording's "windows" and "check", or an Audex run's label), then how far it is.
Progress = Callable[[str, int, int], None]
# Polled between steps; True stops the request with Cancelled.
ShouldStop = Callable[[], bool]


def silent(phase: str, done: int, total: int) -> None:
    """The progress of a caller that does not listen."""
