"""The models a Studio offers, and what each was trained for, in the sentences the app says.

A :class:`ModelEntry` is one AuK checkpoint as clients name it. :func:`capability_warnings` says,
before a run, what in a request (what the recogniser found in it) the chosen model never saw:
a request it cannot serve well still runs, but nobody should mistake the result for AuK's.
"""

from __future__ import annotations

from dataclasses import dataclass

from auk_app import resolve
from auk_app.auk.checkpoint import AuKCheckpoint
from auk_app.auk.plan import window_seconds
from auk_app.config import Limits
from auk_app.recognise import Recognised, unmatched, untrained

GET_WEIGHTS = (
    f"The released weights are not on this machine. Download them with `{resolve.AUK_BASE.download_command}` "
    f"and `{resolve.QWEN_OMNI.download_command}`, then restart."
)
# The released variants, always offered: a client that names one that is not here learns how to get it.
RELEASED = {"base": ("AuK (base)", resolve.AUK_BASE), "flash": ("AuK-Flash (flash)", resolve.AUK_FLASH)}


@dataclass(frozen=True)
class ModelEntry:
    key: str  # what clients send: "demo", "base", "flash" or an extra checkpoint's name
    label: str
    checkpoint: AuKCheckpoint
    demo: bool

    def window(self, limits: Limits) -> float:
        """The longest clip the model reads at once (:func:`~auk_app.auk.plan.window_seconds`)."""
        return window_seconds(self.checkpoint, limits)


def capability_warnings(entry: ModelEntry, found: Recognised | None, language: str,
                        released: list[str]) -> list[str]:
    """One sentence per thing a request asks of ``entry`` that it was not trained for (a task its
    config does not declare, Chinese on an English-only model, a request of no task), with where
    the released weights are (``released``: the keys of those on this machine)."""
    capabilities = entry.checkpoint.capabilities
    gaps = untrained(found, language, capabilities.tasks, capabilities.languages)
    where = (f"the released weights are here: choose `{released[0]}`." if released
             else f"the released AuK weights were. {GET_WEIGHTS}")
    return [f"{entry.label} was not trained for {gap}, so expect a result that does not follow the instruction; "
            f"{where}" for gap in gaps] + unmatched(found, capabilities.tasks, entry.label)
