"""What an instruction asks for, as a number the edit check can measure.

Three sources, most exact first: the instruction builder's structured fields; the cookbook's
English and Chinese templates (``auk_app.instructions.TEMPLATES``), parsed back into those fields;
and numbers with their units in free text ("make it 6 dB quieter", "降低6分贝", "speed up 1.5x").
Signs follow the user: quieter, lower, slower, 降低 are negative changes (a factor below 1 for speed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from auk_app import instructions
from auk_app.instructions import EN, LANGUAGES, TEMPLATES, ZH, ZH_WORDS, Fields

VOLUME, PITCH, SPEED, DENOISE, TRIM, TONE = "volume", "pitch", "speed", "denoise", "trim", "tone"
MEASURED = (VOLUME, PITCH, SPEED, DENOISE, TRIM, TONE)
DENOISE_MODES = ("Remove noise", "Remove noise and reverberation")  # the enhance templates that remove noise

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
    names no number (denoise, trim). ``reason`` says why it cannot be measured; empty if it can."""

    task: str
    asked: float | None = None
    reason: str = ""

    @property
    def measurable(self) -> bool:
        return not self.reason


# ----------------------------------------------------------------------------- builder fields


def target_from_fields(key: str, fields: Fields) -> Target:
    """The target of builder task ``key`` filled with ``fields`` (English dropdown values, or the
    Chinese words a Chinese template carries)."""
    chosen = instructions.task(key)
    filled = {name: (fields.get(name) or slot.default).strip() for name, slot in chosen.slots.items()}
    if key in (VOLUME, PITCH):
        return Target(key, _signed_amount(chosen, filled))
    if key == SPEED:
        return Target(SPEED, float(filled["amount"]))
    if key == "enhance" and filled["mode"] in DENOISE_MODES:
        return Target(DENOISE)
    return Target(key, reason=UNMEASURED[key])


def _signed_amount(chosen: instructions.Task, filled: dict[str, str]) -> float:
    """The amount, negative for the direction dropdown's second choice (Lower, Decrease): the
    builder's own choices decide the sign, in either language."""
    up, down = chosen.slots["mode"].choices
    mode = {ZH_WORDS[up]: up, ZH_WORDS[down]: down}.get(filled["mode"], filled["mode"])
    if mode not in (up, down):
        raise ValueError(f"{chosen.key} direction {filled['mode']!r} is neither {up} nor {down}")
    return float(filled["amount"]) * (1 if mode == up else -1)


# ----------------------------------------------------------------------------- cookbook templates


def _fields_pattern(template: str) -> re.Pattern:
    """A cookbook template as a whole-text pattern that captures each {field} by name. The amount
    is a number: in "将音量{mode}{amount}分贝" nothing else tells where the direction word ends."""
    parts = re.split(r"(\{\w+\})", template)
    pattern = "".join(
        (_AMOUNT if p == "{amount}" else f"(?P<{p[1:-1]}>.+?)") if p.startswith("{") else re.escape(re.sub(r"\s+", " ", p))
        for p in parts
    )
    return re.compile(pattern, re.IGNORECASE)


_AMOUNT = r"(?P<amount>\d+(?:\.\d+)?)"
_FIELD_PATTERNS = {key: [_fields_pattern(pair[LANGUAGES.index(lang)]) for lang in (EN, ZH)] for key, pair in TEMPLATES.items()}


def template_fields(instruction: str) -> tuple[str, dict[str, str]] | None:
    """(task key, builder fields) of an instruction that follows a cookbook template, English or
    Chinese; None for free wording. The template's variant becomes its field again."""
    key = instructions.template_key(instruction)
    if key is None:
        return None
    text = " ".join(instruction.split())
    match = next((m for p in _FIELD_PATTERNS[key] if (m := p.fullmatch(text))), None)
    if match is None:  # the frame fits but the amount is not a number
        return None
    task_key, _, variant = key.partition(":")
    fields = match.groupdict()
    if variant:
        fields[instructions.task(task_key).variant] = variant
    return task_key, fields


# ----------------------------------------------------------------------------- free text

_NUMBER_WORDS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_WORDS |= {"a": 1, "an": 1, "half": 0.5}
_ZH_DIGITS = {c: n for n, c in enumerate("零一二三四五六七八九")} | {"两": 2}
_ZH_NUMBER = r"[零一二两三四五六七八九十]+"
_NUMBER = rf"[+\-−]?\d+(?:\.\d+)?|{_ZH_NUMBER}|\b(?:{'|'.join(_NUMBER_WORDS)})\b"
_DOWN = r"\b(?:quieter|softer|lower|decrease|reduce|down|cut|attenuate|slower|slow)\b|降|减|调低|调小|变小|放慢|减慢"
_UP = r"\b(?:louder|increase|raise|boost|up|amplify|higher|faster)\b|升|提高|增|调高|调大|变大|加大|加快"
_REMOVE = r"\b(?:remove|reduce|clean|cut|trim|strip|delete|get rid of|suppress)\b|去|删|消除|降噪|剪|裁"

# unit cues, each with the task it names: the earliest in the text decides when several appear
_UNITS = (
    (VOLUME, rf"(?P<n>{_NUMBER})\s*(?:dB\b|decibels?\b|分贝)"),
    (PITCH, rf"(?P<n>{_NUMBER})\s*(?:semitones?\b|个?半音)"),
    (PITCH, rf"(?P<cents>{_NUMBER})\s*cents?\b"),
    (PITCH, rf"(?:(?P<octaves>{_NUMBER})\s*(?:octaves?\b|个?八度)|\boctave\b|八度)"),
    (SPEED, rf"(?P<n>{_NUMBER})\s*(?:x\b|×|倍)"),
    (SPEED, rf"(?P<percent>{_NUMBER})\s*%\s*(?:faster|slower)"),
    (SPEED, r"\b(?P<half>half)[ -](?:speed|as fast)\b|\b(?P<double>twice as fast|double (?:the )?speed)\b"),
    (TONE, rf"(?P<n>{_NUMBER})\s*(?:Hz\b|hertz\b|赫兹)"),
)
_WORD_CUES = ((TRIM, r"silen|静音"), (DENOISE, r"nois|hiss|噪"))  # need a removal word too


def target_from_text(instruction: str) -> Target:
    """The target an instruction asks for: a cookbook template's fields when it follows one,
    else the earliest number with a unit (dB, semitones, cents, octaves, ×, %, Hz) in free text,
    else a removal of silence or noise; a target with a reason when none is found."""
    parsed = template_fields(instruction)
    if parsed is not None:
        try:
            return target_from_fields(*parsed)
        except ValueError:  # a template's frame with other words in it ("Raise the volume by…"): free text
            pass
    hits = [(m.start(), task, m) for task, pattern in _UNITS if (m := re.search(pattern, instruction, re.IGNORECASE))]
    if hits:
        _, task, match = min(hits, key=lambda hit: hit[0])
        return _free_target(task, match, instruction)
    if re.search(_REMOVE, instruction, re.IGNORECASE):
        for task, cue in _WORD_CUES:
            if re.search(cue, instruction, re.IGNORECASE):
                return Target(task)
    return Target("unknown", reason="the instruction names no volume, pitch, speed, noise, silence or tone target")


def _free_target(task: str, match: re.Match, text: str) -> Target:
    groups = {name: value for name, value in match.groupdict().items() if value}
    if task == SPEED:
        return _speed_target(groups, text)
    if task == TONE:
        return Target(TONE, abs(number(groups["n"])))
    if "cents" in groups:
        raw, scale = groups["cents"], 0.01
    elif task == PITCH and "n" not in groups:
        raw, scale = groups.get("octaves", "1"), 12
    else:
        raw, scale = groups["n"], 1
    return _directed(task, number(raw) * scale, raw.startswith(("+", "-", "−")), text)


def _directed(task: str, amount: float, signed: bool, text: str) -> Target:
    """A signed target: an explicit sign (−6 dB, +2 semitones) wins, else the first direction
    word (quieter, lower, 降低…); with neither the direction is unknown and nothing is measured."""
    if signed:
        return Target(task, amount)
    down, up = (re.search(cue, text, re.IGNORECASE) for cue in (_DOWN, _UP))
    if not (down or up):
        return Target(task, reason=f"the instruction gives no direction (up or down) for the {task} change")
    first_down = down is not None and (up is None or down.start() < up.start())
    return Target(task, -abs(amount) if first_down else abs(amount))


def _speed_target(groups: dict[str, str], text: str) -> Target:
    """A speed factor: "1.5x", "50% faster", "half speed"; a slow-down by a factor above 1
    ("slow down 2x") means its inverse."""
    if "half" in groups:
        return Target(SPEED, 0.5)
    if "double" in groups:
        return Target(SPEED, 2.0)
    slow = re.search(r"\bslow|慢", text, re.IGNORECASE)
    if "percent" in groups:
        change = abs(number(groups["percent"])) / 100
        return Target(SPEED, 1 - change if slow else 1 + change)
    factor = abs(number(groups["n"]))
    return Target(SPEED, 1 / factor if slow and factor > 1 else factor)


def number(text: str) -> float:
    """A number as written: digits with an optional sign (−6), an English word (two, half) or
    Chinese numerals up to 99 (两, 十二)."""
    text = text.strip().replace("−", "-")
    if text.lower() in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[text.lower()])
    if re.fullmatch(_ZH_NUMBER, text):
        tens, _, ones = text.rpartition("十")
        if "十" not in text:
            return float(_ZH_DIGITS[ones])
        return float((_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0))
    return float(text)
