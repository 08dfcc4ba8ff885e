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
