"""Pure checks on request values and clips; each failure is an InputError a user can act on."""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence

import numpy as np

from auk_app.config import AUK_HOP, AUK_SAMPLE_RATE, Limits
from auk_app.errors import InputError


def check_clip(mono: np.ndarray, sample_rate: int, limits: Limits, *, channels: int = 1) -> None:
    """Refuse clips the model cannot use: empty, non-finite, too short, too long, too many channels."""
    if channels > limits.max_channels:
        raise InputError(
            f"The clip has {channels} channels; at most {limits.max_channels} are accepted. "
            "Export it as mono or stereo and upload it again."
        )
    if mono.size == 0:
        raise InputError("The clip is empty (0 samples). Upload a clip with sound in it.")
    if not np.isfinite(mono).all():
        raise InputError("The clip contains NaN or infinite samples. Re-export it from your editor and upload it again.")
    seconds = mono.size / sample_rate
    min_seconds = AUK_HOP / AUK_SAMPLE_RATE
    if seconds < min_seconds:
        raise InputError(
            f"The clip lasts {seconds * 1000:.1f} ms; the model needs at least {min_seconds * 1000:.0f} ms "
            "(one 20 ms latent frame). Upload a longer clip."
        )
    if seconds > limits.max_input_seconds:
        raise InputError(
            f"The clip lasts {seconds:.1f} s; the limit is {limits.max_input_seconds:g} s. "
            f"Trim it to at most {limits.max_input_seconds:g} s and upload it again."
        )


def check_instruction(instruction: str, limits: Limits) -> str:
    text = (instruction or "").strip()
    if not text:
        raise InputError("The instruction is empty. Describe the edit or the sound, e.g. \"Raise the pitch by 2 semitones.\"")
    if len(text) > limits.max_instruction_chars:
        raise InputError(
            f"The instruction has {len(text)} characters; the limit is {limits.max_instruction_chars}. Shorten it."
        )
    return text


def check_seconds(seconds: float | None, limits: Limits) -> float | None:
    """Target length in seconds, or None (0 means automatic)."""
    if seconds is None:
        return None
    if not isinstance(seconds, (int, float)) or math.isnan(seconds) or seconds < 0:
        raise InputError(f"The duration must be 0 (automatic) or a positive number of seconds; got {seconds!r}.")
    if seconds == 0:
        return None
    if seconds > limits.max_target_seconds:
        raise InputError(
            f"The requested duration is {seconds:g} s; the limit is {limits.max_target_seconds:g} s. Ask for less."
        )
    return float(seconds)


def check_duration_known(seconds: float | None, has_clip: bool) -> None:
    """A target length must come from somewhere: ``seconds`` (None = automatic) or the clip."""
    if seconds is None and not has_clip:
        raise InputError(
            "Without a source clip the model cannot infer a duration: there is no length to match. Set the "
            "duration in seconds (e.g. 3, or the builder's estimate), or upload a clip to edit."
        )


RANDOM_SEED_SPACE = 2**31  # randomised seeds stay below 2^31 so they survive any int32 round trip


def random_seed() -> int:
    return secrets.randbelow(RANDOM_SEED_SPACE)


def check_seed(seed) -> int:
    """A whole number in [0, 2^63) (a number box's 5.0 counts as 5), returned as an int."""
    if seed is None or isinstance(seed, bool) or not isinstance(seed, (int, float)) or not float(seed).is_integer() \
            or not 0 <= seed < 2**63:
        raise InputError(
            f"The seed must be a whole number from 0 to 2^63-1; got {seed!r}. "
            "Leave it out (or tick “Randomise seed”) for a random one."
        )
    return int(seed)


def check_sampling(nfe: int | None, cfg: float | None, sway: float | None, limits: Limits) -> None:
    if nfe is not None and (isinstance(nfe, bool) or not float(nfe).is_integer() or not limits.min_nfe <= nfe <= limits.max_nfe):
        raise InputError(f"nfe (Euler steps) must be a whole number from {limits.min_nfe} to {limits.max_nfe}; got {nfe!r}.")
    if cfg is not None and not (isinstance(cfg, (int, float)) and 0 <= cfg <= limits.max_cfg):
        raise InputError(f"cfg (guidance strength) must be between 0 and {limits.max_cfg:g}; got {cfg!r}.")
    if sway is not None and not (isinstance(sway, (int, float)) and limits.min_sway <= sway <= limits.max_sway):
        raise InputError(f"sway must be between {limits.min_sway:g} and {limits.max_sway:g}; got {sway!r}.")


def parse_t_grid(value: str | Sequence[float] | None, limits: Limits) -> list[float] | None:
    """A comma-separated or listed time grid: finite, strictly increasing, within [0, 1]."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            grid = [float(part) for part in value.replace(";", ",").split(",") if part.strip()]
        except ValueError:
            raise InputError(
                f"The time grid {value!r} is not a comma-separated list of numbers, e.g. \"0, 0.3, 0.7, 1\"."
            ) from None
    else:
        grid = [float(t) for t in value]
    problem = None
    if not 2 <= len(grid) <= limits.max_grid_points:
        problem = f"needs 2 to {limits.max_grid_points} points; it has {len(grid)}"
    elif not all(math.isfinite(t) and 0.0 <= t <= 1.0 for t in grid):
        problem = "must lie within [0, 1]"
    elif any(b <= a for a, b in zip(grid, grid[1:])):
        problem = "must be strictly increasing"
    if problem:
        raise InputError(f"The time grid {grid} {problem}, e.g. \"0, 0.3, 0.7, 1\".")
    return grid
