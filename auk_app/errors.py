"""Errors whose message is written for the person using the app.

Each message names the value, the limit and what to do about it. Only the UI layer
turns these into Gradio errors; anything else that escapes is a bug and is logged.
"""


class AppError(Exception):
    """Base class: ``str(error)`` is a complete English sentence for the user."""


class InputError(AppError, ValueError):
    """A request value or an uploaded clip that cannot be used as given."""


class CheckpointError(AppError):
    """Weights that are missing, unreadable or do not match the expected layout."""


class Cancelled(AppError):
    """The user stopped the run; nothing was produced."""


class KnobError(InputError):
    """A value that only fails beside another knob's (no duration without a clip, a region past its
    end); ``knob`` is the one a validator marks."""

    def __init__(self, knob: str, message: str):
        super().__init__(message)
        self.knob = knob


class EngineError(AppError):
    """A model or a model server that gave something the app cannot serve (non-finite samples, a
    result that does not fit its plan); nothing is written."""
