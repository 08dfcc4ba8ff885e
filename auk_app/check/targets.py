"""What an instruction asks for, as a number the edit check can measure.

The target comes from what the recogniser found in the instruction (:mod:`auk_app.recognise`: its
task, numbers and direction), never from a reading of its own, so the check measures exactly what
the warnings and the whole-recording rule took the request for. Signs follow the request: quieter
and lower are negative changes, slower a factor below 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from auk_app.recognise import Recognised, recognise

VOLUME, PITCH, SPEED, DENOISE, TRIM, TONE = "volume", "pitch", "speed", "denoise", "trim", "tone"
MEASURED = (VOLUME, PITCH, SPEED, DENOISE, TRIM, TONE)
DENOISE_MODES = ("Remove noise", "Remove noise and reverberation")  # the enhance templates that remove noise
_MEASURED_AS = {"volume": VOLUME, "pitch": PITCH, "speed": SPEED, "sine_tone": TONE, "trim_silence": TRIM}
_DIRECTIONS = {"Increase": 1, "Raise": 1, "Decrease": -1, "Lower": -1}

_TRANSCRIBE = ("what was said needs a transcriber (word error rate): the Qwen2.5-Omni thinker, which this model "
               "does not have here")
UNMEASURED = {
    "zero_shot_tts": _TRANSCRIBE,
    "instruct_tts": _TRANSCRIBE + ", and the voice description has no standard measure",
    "content_edit": _TRANSCRIBE,
    "lyric_edit": _TRANSCRIBE,
    "emotion": "emotion has no standard acoustic measure",
    "timbre": "a voice description has no standard acoustic measure",
    "de_accent": "accent has no standard acoustic measure",
    "nonverbal": "finding breaths, laughs and coughs needs a sound-event detector",
    "whisper": "whisper versus voiced speech has no standard measure with a pass bar",
    "enhance": "reverberation and repairs have no reference-free measure with a pass bar",
    "speech_separation": "which speaker remains needs speaker identification",
    "music_separation": "what remains needs a source-separation reference",
    "target_speaker": "which speaker remains needs speaker identification and a transcriber",
}  # why each builder task that is not measured cannot be; every other key maps to MEASURED


@dataclass(frozen=True)
class Target:
    """A task and its asked number: dB, semitones, a speed factor or Hz; None where the task
    names no number (denoise, trim). ``direction`` is +1 or −1 where a volume, pitch or speed
    request names a direction and no number ("a bit quieter", "speed this up a little"): the check
    then asks for a change beyond its tolerance that way. ``reason`` says why it cannot be
    measured; empty if it can."""

    task: str
    asked: float | None = None
    reason: str = ""
    direction: int = 0

    @property
    def measurable(self) -> bool:
        return not self.reason


NO_TASK = Target("unknown", reason="the instruction reads as none of the model's tasks, so it names no volume, pitch, "
                                   "speed, noise, silence or tone target")


def target_of(found: Recognised | None) -> Target:
    """The target of a recognised request (None: no task fits). A volume, pitch or speed request
    with a direction (the recogniser's ``mode``) and no ``amount`` is checked for its direction."""
    if found is None:
        return NO_TASK
    fields = found.fields
    if found.task == "enhance":
        if fields.get("mode") in DENOISE_MODES:
            return Target(DENOISE)
        return Target("enhance", reason=UNMEASURED["enhance"])
    task = _MEASURED_AS.get(found.task)
    if task is None:
        return Target(found.task, reason=UNMEASURED.get(found.task, "it has no measure"))
    if task == TRIM:
        return Target(TRIM)
    direction = _DIRECTIONS.get(fields.get("mode"))
    if not fields.get("amount"):
        if direction is None or task == TONE:
            return Target(task, reason=f"the instruction names no amount for the {task} change")
        return Target(task, direction=direction)
    amount = float(fields["amount"])
    if task in (VOLUME, PITCH):
        if direction is None:
            return Target(task, reason=f"the instruction gives no direction (up or down) for the {task} change")
        amount *= direction
    return Target(task, amount)


def target_from_text(instruction: str) -> Target:
    """The target of an instruction as it is written: :func:`target_of` what the recogniser finds."""
    return target_of(recognise(instruction))
