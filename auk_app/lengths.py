"""What a clip of a given length can be edited as, said one way wherever the app says it: the upload
verdict and /inspect_audio, the instruction builder, the refusal of an edit that cannot run whole,
the region's help and the limits text.

Three ways to edit, from the same limits and the model's window (the longest clip it was trained on:
AuK's 30 s, AuK-Tiny's 6 s):

* any edit, in one piece, for a clip of up to the window (and, weaker, up to ``max_input_seconds``);
* the whole recording in windows, up to ``max_whole_file_seconds``, for the edits that keep the
  timing and the words (:data:`WHOLE_TASKS`), whatever they are asked in;
* a region of up to ``max_target_seconds`` of a recording of up to ``max_region_source_seconds``,
  for every other edit.
"""

from __future__ import annotations

from auk_app.config import Limits

WHOLE_TASKS = ("volume", "pitch", "enhance", "music_separation")  # every variant of these keeps timing and words
WHOLE_EDITS = "edits that keep the timing and the words (volume, pitch, noise removal and other clean-ups)"
OTHER_EDITS = "to change the speed, the words or the voice"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 120 else f"{seconds:g} s"


def uses(seconds: float, window: float, limits: Limits) -> str:
    """What a clip of ``seconds`` can be edited as, in a sentence; "" for a clip any edit takes whole."""
    if seconds <= window or seconds > limits.max_whole_file_seconds:
        return ""
    whole = f"{WHOLE_EDITS.capitalize()} run on the whole {seconds:.1f} s in {window:g} s windows"
    if seconds <= limits.max_input_seconds:
        return (f"{whole}; other edits take it in one piece, weaker past the {window:g} s the model was trained on, "
                f"or a region of it.")
    if seconds <= limits.max_region_source_seconds:
        return f"{whole}; {OTHER_EDITS}, choose a region of at most {limits.max_target_seconds:g} s."
    return (f"{whole}; {OTHER_EDITS}, cut it to at most {_minutes(limits.max_region_source_seconds)} and choose a "
            f"region of at most {limits.max_target_seconds:g} s.")


def whole_refusal(window: float, limits: Limits) -> str:
    """The sentence that refuses any other edit of a whole recording longer than the window."""
    return (f"Only {WHOLE_EDITS} can run on a whole recording longer than the model's {window:g} s window; "
            f"{OTHER_EDITS}, choose a region of at most {limits.max_target_seconds:g} s (region_start and "
            "region_end).")


def summary(limits: Limits) -> str:
    """The limits text: the three ways, with their lengths."""
    return (f"Any edit takes a clip of up to {limits.max_input_seconds:g} s, or a region of up to "
            f"{limits.max_target_seconds:g} s of a recording of up to {_minutes(limits.max_region_source_seconds)}; "
            f"{WHOLE_EDITS} also run on a whole recording of up to {_minutes(limits.max_whole_file_seconds)}, in "
            "windows.")
