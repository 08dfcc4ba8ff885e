"""An edit's progress as one line in a person's units: steps of a clip, or windows of a whole
recording, with the time left.

The pipeline reports phases with their own counters (``progress(phase, done, total)``): a whole
recording's "sample" sums every window's steps, "windows" counts the windows done and "decode"
the samples written, so shown as they come the line jumped from steps to "1.1M/2.9M" samples to a
percentage. Here a whole recording reads "Editing the recording: 3 of 20 windows done · about
1 min 20 s left" from its first step to its last (the steps only move the time left), and a clip
"Sampling: step 5 of 16 · about 3 s left"; the time left is what the steps done so far took,
scaled to the steps still to come.
"""

from __future__ import annotations

import time
from collections.abc import Callable

PHASES = {
    "load": "Loading the model (first run only)",
    "condition": "Encoding the instruction and the clip",
    "decode": "Decoding to 24 kHz audio",
}
SETTLE_SECONDS, SETTLE_SHARE = 2.0, 0.05  # no estimate before this long, and this share of the work, has passed


def time_left(seconds: float) -> str:
    """"about 1 min 20 s", "about 40 s", "a few seconds": rounded as a person says it."""
    if seconds < 10:
        return "a few seconds"
    if seconds < 60:
        return f"about {round(seconds / 5) * 5} s"
    minutes, rest = divmod(round(seconds / 10) * 10, 60)
    return f"about {minutes} min" + (f" {rest} s" if rest else "")


class EditProgress:
    """``progress(phase, done, total)`` as one line on Gradio's ``show`` (a ``gr.Progress``), for an
    edit of ``candidates`` seeds. ``clock`` is injectable so the time left can be tested without
    waiting for it."""

    def __init__(self, show: Callable, candidates: int = 1, clock: Callable[[], float] = time.monotonic):
        self.show, self.clock = show, clock
        self.sampling = "Sampling" if candidates == 1 else f"Sampling {candidates} candidates together"
        self.windows: tuple[int, int] | None = None  # a whole recording's windows done, of how many
        self.steps = (0, 0)
        self.started: float | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase == "windows":
            self.windows = (done, total)
        elif phase == "sample":
            if self.started is None:
                self.started = self.clock()
            self.steps = (done, total)
        if self.windows is not None:
            self._whole(phase, done, total)
        elif phase == "sample":
            self.show((done, total), desc=f"{self.sampling}: step {done} of {total}{self._left()}", unit="steps")
        else:
            self.show((done, total), desc=PHASES.get(phase, phase), unit="phase")

    def _whole(self, phase: str, done: int, total: int) -> None:
        finished, count = self.windows
        if phase == "check":
            line = f"Editing the recording: all {count} windows done · checking the result"
        elif phase == "decode" and done == total and finished == count:
            line = f"Editing the recording: all {count} windows done · writing the result"
        else:
            line = f"Editing the recording: {finished} of {count} windows done{self._left()}"
        self.show((finished, count), desc=line, unit="windows")

    def _left(self) -> str:
        """" · about 40 s left" once enough of the steps have passed to tell, else ""."""
        done, total = self.steps
        if self.started is None or not total or done >= total:
            return ""
        spent = self.clock() - self.started
        if spent < SETTLE_SECONDS or done < SETTLE_SHARE * total:
            return ""
        return f" · {time_left(spent * (total - done) / done)} left"
