"""What a result changed that its request did not ask for: its level, its sounding length or its
pitch, each beyond the tolerance the check allows the task that asks for it.

"Speed this up a little" on a model not trained for speed came back 6 dB quieter at the same
length; a check of the speed alone says only that the speed did not change. Each task leaves out
what it changes by design: volume the level, speed and trimming the length, pitch the pitch, noise
removal the level and the length (the noise it removes was part of both). The pitch is read only
where the source holds one pitch (:attr:`Clip.single_pitch`).
"""

from __future__ import annotations

import math

from auk_app.check.measures import Clip, pitch_change, speed_factor, volume_change
from auk_app.check.result import value_text
from auk_app.check.targets import DENOISE, PITCH, SPEED, TRIM, VOLUME
from auk_app.check.tolerances import PITCH_TOLERANCE_CENTS, SPEED_TOLERANCE, VOLUME_TOLERANCE_DB

CHANGE_LEVEL = {VOLUME, DENOISE}  # tasks that change the level by design
CHANGE_LENGTH = {SPEED, TRIM, DENOISE}  # … the sounding length
CHANGE_PITCH = {PITCH}  # … the pitch


def unasked(task: str, source: Clip, result: Clip) -> tuple[str, ...]:
    """What ``result`` changed of ``source`` beyond the tolerances that ``task`` did not ask for, each
    as the line says it: "level −6.3 dB", "sounding length 1.90 s → 1.20 s", "pitch +2 semitones"."""
    changed = []
    if task not in CHANGE_LEVEL:
        level, _ = volume_change(source, result)
        if math.isfinite(level) and abs(level) > VOLUME_TOLERANCE_DB:
            changed.append(f"level {value_text(level, 'dB')}")
    if task not in CHANGE_LENGTH:
        factor = speed_factor(source, result)
        if math.isfinite(factor) and abs(factor - 1) > SPEED_TOLERANCE:
            changed.append(f"sounding length {source.active_seconds:.2f} s → {result.active_seconds:.2f} s")
    if task not in CHANGE_PITCH and source.single_pitch:
        shift = pitch_change(source, result)
        if math.isfinite(shift) and abs(shift) > PITCH_TOLERANCE_CENTS:
            changed.append(f"pitch {value_text(shift, 'cents')}")
    return tuple(changed)
