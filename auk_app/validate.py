"""Pure checks on request values and clips; each failure is an InputError a user can act on."""

from __future__ import annotations

import math
import re
import secrets
import unicodedata

import numpy as np

from auk_app.config import Limits
from auk_app.errors import InputError


# −80 dBFS: ten times the 16-bit step (1/32768 ≈ −90 dBFS), so a clip below it holds dither at most.
SILENCE_PEAK = 1e-4
_SHOWN_CHARS = 80  # values echoed in messages are cut here, so a bad 1000-point grid stays one line


def shown(value) -> str:
    """``repr(value)``, abbreviated: messages name the value without echoing a huge one."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS - 20]}… ({len(text)} characters)"


def is_real(value) -> bool:
    """A finite int or float that a float can hold: not a bool (JSON's true is no number), not NaN or
    ±inf, not a whole number past 1.8e308 (JSON carries 10**400, and float() would raise on it)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def is_whole(value) -> bool:
    """A real number with no fractional part: 80 or a number box's 80.0, not 80.5, True or "80"."""
    return is_real(value) and float(value).is_integer()


def _length(n_samples: int, sample_rate: int) -> str:
    seconds = n_samples / sample_rate
    if seconds >= 1:
        return f"{seconds:.1f} s"
    if n_samples < 100:
        return f"{n_samples} sample{'s' * (n_samples != 1)} ({seconds * 1000:.2f} ms)"
    return f"{seconds * 1000:.1f} ms"


def check_format(sample_rate: int, channels: int, n_samples: int, limits: Limits) -> None:
    """What a file's header alone can refuse; the audio reader runs it before decoding anything."""
    if not limits.min_sample_rate <= sample_rate <= limits.max_sample_rate:
        raise InputError(
            f"The clip's sample rate is {sample_rate} Hz; accepted rates are {limits.min_sample_rate / 1000:g} kHz to "
            f"{limits.max_sample_rate / 1000:g} kHz. The file's header is probably damaged: re-export it "
            "(e.g. at 24 or 48 kHz) and upload it again."
        )
    if channels > limits.max_channels:
        raise InputError(
            f"The clip has {channels} channels; at most {limits.max_channels} are accepted. "
            "Export it as mono or stereo and upload it again."
        )
    if n_samples == 0:
        raise InputError("The clip holds no audio (0 samples): the file is empty, or cut short before its first "
                         "sound. Upload a clip with sound in it, or export it again.")
    seconds = n_samples / sample_rate
    if seconds > limits.max_input_seconds:
        region_hint = (
            f", or choose a region (region_start and region_end, up to {limits.max_target_seconds:g} s) to edit "
            f"within it: a file with a region may last up to {limits.max_region_source_seconds:g} s"
            if limits.max_input_seconds < limits.max_region_source_seconds else ""
        )
        raise InputError(
            f"The clip lasts {_length(n_samples, sample_rate)}; the limit is {limits.max_input_seconds:g} s. "
            f"Trim it to at most {limits.max_input_seconds:g} s{region_hint}."
        )
    if n_samples * channels > limits.max_decoded_samples:
        raise InputError(
            f"The clip holds {n_samples * channels / 1e6:.1f} million samples ({seconds:.1f} s × "
            f"{sample_rate / 1000:g} kHz × {channels} channels); the server decodes at most "
            f"{limits.max_decoded_samples / 1e6:g} million ({limits.max_decoded_samples / 96_000 / 60:.3g} minutes of "
            "48 kHz stereo). Export it at 48 kHz or less, in mono or stereo, or trim it, and upload it again."
        )
    if seconds < limits.min_seconds:
        raise InputError(
            f"The clip lasts {_length(n_samples, sample_rate)}; the model needs at least "
            f"{limits.min_seconds * 1000:.0f} ms (two 20 ms latent frames). Upload a longer clip."
        )


def check_clip(mono: np.ndarray, sample_rate: int, limits: Limits, *, channels: int = 1) -> None:
    """Refuse clips the model cannot use: a bad format or length, non-finite, absurdly loud or silent samples."""
    check_format(sample_rate, channels, mono.size, limits)
    if not np.isfinite(mono).all():
        raise InputError("The clip contains NaN or infinite samples. Re-export it from your editor and upload it again.")
    peak = float(np.abs(mono).max())
    if peak > limits.max_peak:
        raise InputError(
            f"The clip peaks at {20 * np.log10(peak):+.1f} dBFS ({peak:.3g} × full scale); the limit is "
            f"{20 * np.log10(limits.max_peak):+.0f} dBFS ({limits.max_peak:g} ×). The file is damaged or wrongly "
            "scaled: normalise it in your editor and upload it again."
        )
    if peak < SILENCE_PEAK:
        shown_peak = "−∞ dBFS" if peak == 0 else f"{20 * np.log10(peak):.1f} dBFS"
        raise InputError(
            f"The clip is silent (peak {shown_peak}, below −80 dBFS): there is nothing to edit. "
            "Upload a clip with sound in it, or remove it to generate speech from the instruction alone."
        )


def _check_text(value, what: str, limit: int, example: str) -> str:
    """Stripped user text: text (a number, a list or true is no instruction, whatever it would print
    as), not empty (nor only invisible format characters, such as zero-width spaces and joiners), at
    most ``limit`` characters."""
    if value is not None and not isinstance(value, str):
        raise InputError(f"The {what} must be text; got {shown(value)}. {example}")
    text = value.strip() if isinstance(value, str) else ""
    if not "".join(ch for ch in text if unicodedata.category(ch) != "Cf").strip():
        raise InputError(f"The {what} is empty. {example}")
    if len(text) > limit:
        raise InputError(f"The {what} has {len(text)} characters; the limit is {limit}. Shorten it.")
    return text


def check_instruction(instruction: str, limits: Limits) -> str:
    return _check_text(instruction, "instruction", limits.max_instruction_chars,
                       "Describe the edit or the sound, e.g. \"Raise the pitch by 2 semitones.\"")


def without_control_tokens(text: str, tokenizer) -> str:
    """User text with every added token's string removed, so it stays plain text in a prompt.

    Tokenizers match added tokens (``<|im_end|>``, ``<audiogen_start>``, ``<|AUDIO|>``, ``[SEP]``)
    anywhere in a string: spliced into a chat prompt unchanged, a caption or an instruction could
    close its turn or start the audio stream. Removal repeats, since it can join two halves of one.
    """
    added = sorted(tokenizer.get_added_vocab(), key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, added))) if added else None
    while pattern is not None and (cleaned := pattern.sub("", text)) != text:
        text = cleaned
    return text


def plain_text(text: str, tokenizer, what: str, subject: str) -> str:
    """``text`` without control tokens (:func:`without_control_tokens`), refused when nothing else is
    left: a prompt of only special tokens would run on an empty instruction or caption."""
    plain = without_control_tokens(text, tokenizer)
    if not plain.strip():
        raise InputError(f"The {what} holds only special tokens of the model. Describe {subject} in words.")
    return plain


def check_caption(caption: str, limits: Limits) -> str:
    return _check_text(caption, "caption", limits.max_caption_chars,
                       "Describe the sound to generate, e.g. “Rain falling on a tin roof”.")


RANDOM_SEED_SPACE = 2**31  # randomised seeds stay below 2^31 so they survive any int32 round trip


def random_seed() -> int:
    return secrets.randbelow(RANDOM_SEED_SPACE)


def check_seed(seed) -> int:
    """A whole number in [0, 2^63) (a number box's 5.0 counts as 5), returned as an int; None draws one."""
    if seed is None:
        return random_seed()
    if not is_whole(seed) or not 0 <= seed < 2**63:
        raise InputError(
            f"seed must be a whole number from 0 to 2^63-1; got {shown(seed)}. "
            "Leave it out (or tick “Randomise seed”) for a random one."
        )
    return int(seed)


def check_flag(value, name: str) -> bool:
    """A switch: True or False only. Raw API clients send JSON, where the string "false" would
    count as true and 0 or null would pass as something nobody chose."""
    if not isinstance(value, bool):
        raise InputError(f"{name} must be true or false; got {shown(value)}.")
    return value
