"""Offline instruction builder: the 16 AuK tasks, their canonical wording and a target duration.

AuK picks its task purely from the instruction text (spec/auk.md §7), and the model was trained
on a handful of templates, so the closer a request stays to them the better it works. Each task
here names the fields a person fills in (words to replace, semitones, dB, speed factor, emotion,
voice description…), renders the template, and proposes a duration:

* same-length tasks → 0 (automatic), which the pipeline turns into the source's exact length;
* speed → source ÷ factor; emotion → source × the upstream prompt enhancer's factor;
* speech from text → 0.0656 s per UTF-8 byte (English) or 0.0803 s (Chinese), the prompt
  enhancer's baseline; content edits add or remove that much for the changed words.

Estimates are quantised as upstream's prompt enhancer does (``_quantize_model_duration`` in
``auk/infer/pe.py``): to the nearest whole 20 ms latent frame, at least one, capped at the target
limit, and proposed as a number of seconds that the pipeline's own rounding
(``config.frames_for_seconds``, upstream's ``ceil(s · 24000 / 480)``) maps back to exactly
those frames. Everything is pure: the UI shows and applies the result, nothing runs a model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from auk_app.config import AUK_FRAME_RATE, Limits, frames_for_seconds, seconds_for_frames

SECONDS_PER_BYTE_EN = 0.0656  # prompt-enhancer TTS baseline, spec §7
SECONDS_PER_BYTE_ZH = 0.0803
SHORT_TEXT_BYTES = 10  # below this the enhancer assumes slow, deliberate speech…
SHORT_TEXT_SPEED = 0.3  # …at 0.3× the baseline rate
EMOTION_STRETCH = {"sad": 1.22, "fearful": 1.16}  # the enhancer's factors; every other emotion 1.06
DEFAULT_EMOTION_STRETCH = 1.06
NONVERBAL_SECONDS = 1.0  # room for one added laugh, cough or breath (our estimate; spec gives none)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

FIELD_NAMES = ("mode", "text", "original", "option", "amount")  # the builder's five generic inputs
CHOICE_FIELDS = ("mode", "option", "amount")  # dropdowns; "text" and "original" are text boxes
Fields = Mapping[str, str]


@dataclass(frozen=True)
class Slot:
    """How one generic builder input is used by a task: a text box, or a dropdown with choices."""

    label: str
    choices: tuple[str, ...] = ()
    default: str = ""
    placeholder: str = ""


@dataclass(frozen=True)
class Duration:
    """A proposed target length and why; ``seconds`` 0 means automatic or not known yet (``reason`` says which)."""

    seconds: float
    reason: str


@dataclass(frozen=True)
class Task:
    key: str
    category: str
    name: str
    needs_audio: bool
    slots: dict[str, Slot]
    render: Callable[[Fields], str]
    duration: Callable[[Fields, float | None], Duration]
    reliable: bool | None = None  # community test verdict without the prompt enhancer; None: not tested
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.category} · {self.name}"


@dataclass(frozen=True)
class Built:
    """What the builder shows: the instruction, the duration to use and a problem to fix, if any."""

    instruction: str
    duration: Duration
    problem: str = ""
    reliability: str = ""
    note: str = ""


# ----------------------------------------------------------------------------- durations


def estimate_frames(seconds: float) -> int:
    """An estimate in whole 20 ms latent frames: the nearest, at least one, as upstream's prompt
    enhancer rounds (nearest, unlike ceil, is also blind to an estimate's float noise: 5 s × 1.06
    is 5.300000000000001 s, which ceil would make 266 frames)."""
    return max(1, round(seconds * AUK_FRAME_RATE))


def speech_seconds(text: str, *, whole_utterance: bool = True) -> float:
    """Spoken length of ``text`` by the prompt enhancer's bytes-per-second baseline.

    The slow rate for very short texts applies to a whole utterance only, not to words changed
    inside one (a content edit).
    """
    n_bytes = len(text.strip().encode("utf-8"))
    rate = SECONDS_PER_BYTE_ZH if _CJK.search(text) else SECONDS_PER_BYTE_EN
    seconds = n_bytes * rate
    return seconds / SHORT_TEXT_SPEED if whole_utterance and 0 < n_bytes < SHORT_TEXT_BYTES else seconds


def _same_length(fields: Fields, source: float | None) -> Duration:
    if source is None:
        return Duration(0.0, "automatic: the source's exact length (upload a clip)")
    return Duration(0.0, f"automatic: the source's exact length, {source:.2f} s")


def _text_estimate(fields: Fields, source: float | None) -> Duration:
    text = fields.get("text", "")
    n_bytes = len(text.strip().encode("utf-8"))
    if not n_bytes:
        return Duration(0.0, "type the text to speak to get an estimate")
    slow = " at the slow rate used for very short texts" if n_bytes < SHORT_TEXT_BYTES else ""
    return Duration(speech_seconds(text), f"estimated from {n_bytes} UTF-8 bytes of text{slow}")


def _content_delta(fields: Fields, source: float | None) -> Duration:
    if source is None:
        return Duration(0.0, "upload the clip to edit; the length then follows from the changed words")
    mode = fields.get("mode", "")
    new, old = (speech_seconds(fields.get(name, ""), whole_utterance=False) for name in ("text", "original"))
    if mode == "Replace":
        delta = new - old if new and old else 0.0
    elif mode.startswith("Add"):
        delta = new
    else:  # Remove
        delta = -new
    sign = "+" if delta >= 0 else "−"
    return Duration(max(source + delta, 1 / AUK_FRAME_RATE), f"source {source:.2f} s {sign} {abs(delta):.2f} s for the changed words")


def _speed(fields: Fields, source: float | None) -> Duration:
    factor = float(fields.get("amount") or 1.0)
    if source is None:
        return Duration(0.0, f"upload the clip: the duration is its length ÷ {factor:g}")
    return Duration(source / factor, f"source {source:.2f} s ÷ {factor:g}")


def _emotion(fields: Fields, source: float | None) -> Duration:
    emotion = fields.get("option", "")
    stretch = EMOTION_STRETCH.get(emotion, DEFAULT_EMOTION_STRETCH)
    if source is None:
        return Duration(0.0, f"upload the clip: the duration is its length × {stretch:g}")
    return Duration(source * stretch, f"source {source:.2f} s × {stretch:g}, as the prompt enhancer stretches {emotion or 'emotional'} speech")


def _nonverbal(fields: Fields, source: float | None) -> Duration:
    if not fields.get("mode", "").startswith("Add"):
        return _same_length(fields, source)
    if source is None:
        return Duration(0.0, f"upload the clip: the duration is its length + {NONVERBAL_SECONDS:g} s")
    return Duration(source + NONVERBAL_SECONDS, f"source {source:.2f} s + {NONVERBAL_SECONDS:g} s for the added sound")


# ----------------------------------------------------------------------------- templates


def _quoted(fields: Fields, name: str) -> str:
    return fields.get(name, "").strip()


def _zero_shot(f: Fields) -> str:
    return f'Say the following with the same voice: "{_quoted(f, "text")}"'


def _instruct_tts(f: Fields) -> str:
    voice, text = _quoted(f, "original"), _quoted(f, "text")
    if _CJK.search(voice + text):
        return f'请基于下面的描述: "{voice}",生成语音内容"{text}".'
    return f'Generate speech based on the following description: "{voice}". The content to speak is: "{text}".'


def _content_edit(f: Fields) -> str:
    mode, new, old = f.get("mode", "Replace"), _quoted(f, "text"), _quoted(f, "original")
    if mode == "Replace":
        return f"把‘{old}’改成‘{new}’" if _CJK.search(old + new) else f"Replace '{old}' with '{new}'."
    if mode == "Add before":
        return f"Add '{new}' before '{old}'."
    if mode == "Add after":
        return f"Add '{new}' after '{old}'."
    return f"Remove '{new}'."


_NONVERBAL_PLURAL = {"breath": "breaths", "laugh": "laughs", "cough": "coughs"}
_ENHANCE = {
    "Remove noise": "Remove only the background noise, preserve everything else, and output audio of the same length.",
    "Remove reverberation": "Remove only the reverberation, preserve everything else, and output audio of the same length.",
    "Remove noise and reverberation": (
        "Preserve all speakers, remove noise and reverberation, and output clean speech of the same length."
    ),
}
_WHISPER = {
    "Speech → whisper": "Convert this speech into a soft whisper while preserving the speaker and content.",
    "Whisper → speech": "Convert this whisper into normal speech while preserving the speaker and content.",
}
_MUSIC = {
    "the singing voice": "Keep only the singing voice and remove everything else.",
    "all human voices": "Keep only the human voices and remove everything else.",
}


def _enhance(f: Fields) -> str:
    mode = f.get("mode", "Remove noise")
    if mode == "Repair":
        return f"Repair the {f.get('option') or 'clipping'} and restore natural, clear speech."
    return _ENHANCE[mode]


def _nonverbal_text(f: Fields) -> str:
    sound = f.get("option") or "laugh"
    mode = f.get("mode", "Remove all")
    if mode == "Remove all":
        return f"Remove all {_NONVERBAL_PLURAL.get(sound, sound + 's')} from the audio."
    where = "beginning" if mode == "Add at the beginning" else "end"
    return f"Add a {sound} at the {where} of the speech."


# ----------------------------------------------------------------------------- catalogue

_TEXT = "text"
_EMOTIONS = ("happy", "angry", "sad", "fearful", "surprised", "disgusted", "calm", "excited")

TASKS: tuple[Task, ...] = (
    Task(
        "zero_shot_tts", "Speech generation", "Zero-shot TTS (clone the clip's voice)", True,
        {_TEXT: Slot("Text to speak", placeholder="Ladies and gentlemen, it's an honor to be here.")},
        _zero_shot, _text_estimate, reliable=True,
    ),
    Task(
        "instruct_tts", "Speech generation", "Instruct TTS (voice from a description, no clip)", False,
        {
            "original": Slot("Voice description", placeholder="A warm, low female voice, speaking slowly."),
            _TEXT: Slot("Text to speak", placeholder="The library opens at nine."),
        },
        _instruct_tts, _text_estimate, reliable=True,
        note="Known limitation: parts of the description can leak into the speech.",
    ),
    Task(
        "content_edit", "Content editing", "Speech content editing", True,
        {
            "mode": Slot("Edit", ("Replace", "Add before", "Add after", "Remove"), "Replace"),
            "original": Slot("Words to replace / anchor words", placeholder="seven o'clock"),
            _TEXT: Slot("New words / words to add or remove", placeholder="eight o'clock"),
        },
        _content_edit, _content_delta, reliable=False, note="Spell digits out as words.",
    ),
    Task(
        "lyric_edit", "Content editing", "Lyric editing (a cappella)", True,
        {
            "original": Slot("Original lyrics", placeholder="under the moonlight"),
            _TEXT: Slot("New lyrics", placeholder="under the streetlight"),
        },
        lambda f: f'Change "{_quoted(f, "original")}" to "{_quoted(f, "text")}" in the vocal recording.',
        _same_length, reliable=False,
    ),
    Task(
        "pitch", "Acoustic editing", "Pitch", True,
        {"mode": Slot("Direction", ("Raise", "Lower"), "Raise"), "amount": Slot("Semitones", ("1", "2", "3"), "2")},
        # "semitones" even for 1: the training template's wording, which the model keys on.
        lambda f: f"{f.get('mode') or 'Raise'} the pitch by {f.get('amount') or '2'} semitones.",
        _same_length, reliable=False,
    ),
    Task(
        "speed", "Acoustic editing", "Speed", True,
        {"amount": Slot("Speed factor", ("0.5", "0.75", "1.25", "1.5", "2.0"), "1.5")},
        lambda f: f"Adjust the speech speed to {f.get('amount') or '1.5'}x.",
        _speed, reliable=False,
    ),
    Task(
        "volume", "Acoustic editing", "Volume", True,
        {"mode": Slot("Direction", ("Increase", "Decrease"), "Decrease"), "amount": Slot("dB", ("5", "10", "15"), "10")},
        lambda f: f"{f.get('mode') or 'Decrease'} the volume by {f.get('amount') or '10'} dB.",
        _same_length, reliable=True,
    ),
    Task(
        "emotion", "Paralinguistic", "Emotion", True,
        {"option": Slot("Emotion", _EMOTIONS, "happy")},
        lambda f: f"Change the emotion to {f.get('option') or 'happy'}.",
        _emotion, reliable=False,
    ),
    Task(
        "timbre", "Paralinguistic", "Timbre", True,
        {"original": Slot("New timbre", placeholder="a deep, husky male voice")},
        lambda f: f'Keep the spoken content unchanged and change the timbre to: "{_quoted(f, "original")}".',
        _same_length, reliable=False,
    ),
    Task(
        "de_accent", "Paralinguistic", "De-accent", True, {},
        lambda f: "Remove the regional accent while preserving the speaker's voice and content.",
        _same_length, reliable=False,
    ),
    Task(
        "nonverbal", "Paralinguistic", "Nonverbal sounds", True,
        {
            "mode": Slot("Edit", ("Remove all", "Add at the beginning", "Add at the end"), "Remove all"),
            "option": Slot("Sound", ("breath", "laugh", "cough"), "breath"),
        },
        _nonverbal_text, _nonverbal, reliable=False,
    ),
    Task(
        "whisper", "Paralinguistic", "Whisper conversion", True,
        {"mode": Slot("Direction", tuple(_WHISPER), "Speech → whisper")},
        lambda f: _WHISPER[f.get("mode") or "Speech → whisper"],
        _same_length, reliable=False,
    ),
    Task(
        "enhance", "Enhancement & separation", "Speech enhancement", True,
        {
            "mode": Slot("Fix", (*_ENHANCE, "Repair"), "Remove noise"),
            "option": Slot("Repair what", ("telephone effect", "muffling", "clipping", "dropouts"), "clipping"),
        },
        _enhance, _same_length, reliable=True,
    ),
    Task(
        "speech_separation", "Enhancement & separation", "Speech separation", True,
        {"option": Slot("Keep the speaker who starts", ("first", "second"), "first")},
        lambda f: f"Keep only the {f.get('option') or 'first'} speaker to start talking and remove all other speakers.",
        _same_length, reliable=True,
    ),
    Task(
        "music_separation", "Enhancement & separation", "Music separation", True,
        {"option": Slot("Keep", tuple(_MUSIC), "the singing voice")},
        lambda f: _MUSIC[f.get("option") or "the singing voice"],
        _same_length, reliable=True,
    ),
    Task(
        "target_speaker", "Enhancement & separation", "Target speaker extraction", True,
        {_TEXT: Slot("What the speaker to keep says", placeholder="see you tomorrow")},
        lambda f: f'Keep only the speaker who says "{_quoted(f, "text")}" and remove all other speakers.',
        _same_length,
    ),
)
TASKS_BY_KEY = {task.key: task for task in TASKS}


def task(key: str) -> Task:
    try:
        return TASKS_BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown task {key!r}; known: {', '.join(TASKS_BY_KEY)}") from None


def build(key: str, fields: Fields, *, source_seconds: float | None, limits: Limits = Limits()) -> Built:
    """The instruction and duration for task ``key`` with ``fields`` (missing fields take defaults)."""
    chosen = task(key)
    filled = {name: (fields.get(name) or slot.default) for name, slot in chosen.slots.items()}
    instruction = chosen.render(filled)
    duration = chosen.duration(filled, source_seconds)
    if duration.seconds > 0:
        frames, reason = estimate_frames(duration.seconds), duration.reason
        if frames > frames_for_seconds(limits.max_target_seconds):
            frames, reason = frames_for_seconds(limits.max_target_seconds), f"{reason}, capped at the {limits.max_target_seconds:g} s limit"
        duration = Duration(seconds_for_frames(frames), f"{reason}; {frames} frames = {frames / AUK_FRAME_RATE:g} s of audio")
    problem = ""
    empty = [slot.label for name, slot in chosen.slots.items() if not slot.choices and not filled[name].strip()]
    if empty:
        problem = f"Fill in: {', '.join(empty)}."
    elif chosen.needs_audio and source_seconds is None:
        problem = "This task edits a clip: upload or record one."
    elif not chosen.needs_audio and source_seconds is not None:
        problem = "This task generates from text alone: remove the clip, or the model will treat it as a voice to edit."
    if chosen.reliable is None:
        reliability = ""
    elif chosen.reliable:
        reliability = "Community tests: works reliably."
    else:
        reliability = "Community tests: often unstable; try a few seeds."
    return Built(instruction, duration, problem, reliability, chosen.note)
