"""Offline instruction builder: the 16 AuK tasks, their canonical wording and a target duration.

AuK picks its task purely from the instruction text, and the model was trained
on a handful of templates, so the closer a request stays to them the better it works. The
templates are upstream's cookbook sentences, verbatim, in English and Chinese (``TEMPLATES``; AuK
is bilingual). Each task names the fields a person fills in (words to replace, semitones, dB,
speed factor, emotion, voice description…), renders the template in the chosen language, and
proposes a duration:

* same-length tasks → 0 (automatic), which the pipeline turns into the source's exact length;
* speed → source ÷ factor; emotion → source × the upstream prompt enhancer's factor;
* speech from text → 0.0656 s per UTF-8 byte (English) or 0.0803 s (Chinese), the prompt
  enhancer's baseline; content edits add or remove that much for the changed words. Where the
  source clip's pace is known (what it says, and its voiced time: ``auk_app.pace``), new words
  take as long as its speaker would take to say them instead.

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

from auk_app import lengths
from auk_app.auk.configs import LANGUAGES
from auk_app.config import FRAME_RATE
from auk_app.config import Limits, frames_for_seconds, seconds_for_frames
from auk_app.lengths import WHOLE_TASKS
from auk_app.pace import SpeakingRate, count_syllables, speaking_rate

SECONDS_PER_BYTE_EN = 0.0656  # the upstream prompt enhancer's TTS baseline
SECONDS_PER_BYTE_ZH = 0.0803
SHORT_TEXT_BYTES = 10  # below this the enhancer assumes slow, deliberate speech…
SHORT_TEXT_SPEED = 0.3  # …at 0.3× the baseline rate
EMOTION_STRETCH = {"sad": 1.22, "fearful": 1.16}  # the enhancer's factors; every other emotion 1.06
DEFAULT_EMOTION_STRETCH = 1.06
NONVERBAL_SECONDS = 1.0  # room for one added laugh, cough or breath (our estimate)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

EN, ZH = LANGUAGES  # the order of each template pair
LANGUAGE_CHOICES = (("English", EN), ("中文", ZH))  # the builder's language choice: label, value
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
    duration: Callable[[Fields, float | None, SpeakingRate | None], Duration]
    variant: str | None = None  # the field whose value picks one of the task's templates
    paced: bool = False  # says new words, whose length follows the source speaker's pace where it is known
    transcript: str | None = None  # the field where the builder takes what the source clip says
    reliable: bool | None = None  # community test verdict without the prompt enhancer; None: not tested
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.category} · {self.name}"

    def templates(self, fields: Fields) -> tuple[str, str]:
        """The (English, Chinese) cookbook template for ``fields``."""
        return TEMPLATES[f"{self.key}:{fields.get(self.variant)}" if self.variant else self.key]

    def render(self, fields: Fields, language: str = EN) -> str:
        """The instruction in ``language`` (``EN`` or ``ZH``): free text as typed, dropdown values in
        the template's language."""
        values = {name: (fields.get(name) or "").strip() for name in FIELD_NAMES}
        if language == ZH:
            values.update({name: ZH_WORDS.get(values[name], values[name]) for name in CHOICE_FIELDS})
        return self.templates(fields)[LANGUAGES.index(language)].format(**values)


@dataclass(frozen=True)
class Built:
    """What the builder shows: the instruction, the duration to use and a problem to fix, if any."""

    instruction: str
    duration: Duration
    problem: str = ""
    reliability: str = ""
    note: str = ""
    pace: SpeakingRate | None = None  # the source speaker's pace the duration follows, if it does


# ----------------------------------------------------------------------------- durations


def estimate_frames(seconds: float) -> int:
    """An estimate in whole 20 ms latent frames: the nearest, at least one, as upstream's prompt
    enhancer rounds (nearest, unlike ceil, is also blind to an estimate's float noise: 5 s × 1.06
    is 5.300000000000001 s, which ceil would make 266 frames)."""
    return max(1, round(seconds * FRAME_RATE))


def speech_seconds(text: str, *, whole_utterance: bool = True) -> float:
    """Spoken length of ``text`` by the prompt enhancer's bytes-per-second baseline.

    The slow rate for very short texts applies to a whole utterance only, not to words changed
    inside one (a content edit).
    """
    n_bytes = len(text.strip().encode("utf-8"))
    rate = SECONDS_PER_BYTE_ZH if _CJK.search(text) else SECONDS_PER_BYTE_EN
    seconds = n_bytes * rate
    return seconds / SHORT_TEXT_SPEED if whole_utterance and 0 < n_bytes < SHORT_TEXT_BYTES else seconds


def _same_length(fields: Fields, source: float | None, pace: SpeakingRate | None = None) -> Duration:
    if source is None:
        return Duration(0.0, "automatic: the source's exact length (upload a clip)")
    return Duration(0.0, f"automatic: the source's exact length, {source:.2f} s")


def _text_estimate(fields: Fields, source: float | None, pace: SpeakingRate | None) -> Duration:
    text = fields.get("text", "")
    n_bytes = len(text.strip().encode("utf-8"))
    if not n_bytes:
        return Duration(0.0, "type the text to speak to get an estimate")
    if pace is not None:
        return Duration(pace.seconds_for(text), f"{count_syllables(text)} syllables at {pace.describe()}")
    slow = " at the slow rate used for very short texts" if n_bytes < SHORT_TEXT_BYTES else ""
    return Duration(speech_seconds(text), f"estimated from {n_bytes} UTF-8 bytes of text{slow}")


def _content_delta(fields: Fields, source: float | None, pace: SpeakingRate | None) -> Duration:
    if source is None:
        return Duration(0.0, "upload the clip to edit; the length then follows from the changed words")
    mode = fields.get("mode", "")
    if pace is not None:
        new, old = (pace.seconds_for(fields.get(name, "")) for name in ("text", "original"))
    else:
        new, old = (speech_seconds(fields.get(name, ""), whole_utterance=False) for name in ("text", "original"))
    if mode == "Replace":
        delta = new - old if new and old else 0.0
    elif mode.startswith("Add"):
        delta = new
    else:  # Remove
        delta = -new
    sign = "+" if delta >= 0 else "−"
    at = f" at {pace.describe()}" if pace is not None else ""
    reason = f"source {source:.2f} s {sign} {abs(delta):.2f} s for the changed words{at}"
    return Duration(max(source + delta, 1 / FRAME_RATE), reason)


def _speed(fields: Fields, source: float | None, pace: SpeakingRate | None = None) -> Duration:
    factor = float(fields.get("amount") or 1.0)
    if source is None:
        return Duration(0.0, f"upload the clip: the duration is its length ÷ {factor:g}")
    return Duration(source / factor, f"source {source:.2f} s ÷ {factor:g}")


def _emotion(fields: Fields, source: float | None, pace: SpeakingRate | None = None) -> Duration:
    emotion = fields.get("option", "")
    stretch = EMOTION_STRETCH.get(emotion, DEFAULT_EMOTION_STRETCH)
    if source is None:
        return Duration(0.0, f"upload the clip: the duration is its length × {stretch:g}")
    return Duration(source * stretch, f"source {source:.2f} s × {stretch:g}, as the prompt enhancer stretches {emotion or 'emotional'} speech")


def _nonverbal(fields: Fields, source: float | None, pace: SpeakingRate | None = None) -> Duration:
    if not fields.get("mode", "").startswith("Add"):
        return _same_length(fields, source)
    if source is None:
        return Duration(0.0, f"upload the clip: the duration is its length + {NONVERBAL_SECONDS:g} s")
    return Duration(source + NONVERBAL_SECONDS, f"source {source:.2f} s + {NONVERBAL_SECONDS:g} s for the added sound")


# ----------------------------------------------------------------------------- templates

# The cookbook's templates verbatim (Tencent-Hunyuan/AuK, docs/COOKBOOK.md, sections 1.1–5.4): (English, Chinese).
# A key is the task, or "task:variant" where the task's ``variant`` field picks the sentence; {name}
# is a builder field. The model keys on its training wording: change these only with the cookbook.
TEMPLATES: dict[str, tuple[str, str]] = {
    # Section 1.1: the cookbook gives one template for both languages ("EN & CN").
    "zero_shot_tts": ('Say the following with the same voice: "{text}"',) * 2,
    "instruct_tts": (
        'Generate speech based on the following description: "{original}". The content to speak is: "{text}".',
        '请基于下面的描述: "{original}",生成语音内容"{text}".',
    ),
    "content_edit:Replace": ("Replace '{original}' with '{text}'.", "把‘{original}’改成‘{text}’"),
    "content_edit:Add before": ("Add '{text}' before '{original}'.", "在‘{original}’前面加上‘{text}’"),
    "content_edit:Add after": ("Add '{text}' after '{original}'.", "在‘{original}’后面加上‘{text}’"),
    "content_edit:Remove": ("Remove '{text}'.", "删掉‘{text}’"),
    "content_edit:Remove before": ("Remove '{text}' before '{original}'.", "删掉‘{original}’前面的‘{text}’"),
    "content_edit:Remove after": ("Remove '{text}' after '{original}'.", "删掉‘{original}’后面的‘{text}’"),
    "lyric_edit": ('Change "{original}" to "{text}" in the vocal recording.', "把这段歌词中的“{original}”改成“{text}”。"),
    # "semitones" even for 1: the template's wording, which the model keys on.
    "pitch": ("{mode} the pitch by {amount} semitones.", "将音调{mode}{amount}个半音。"),
    "speed": ("Adjust the speech speed to {amount}x.", "将语速调整为{amount}倍。"),
    "volume": ("{mode} the volume by {amount} dB.", "将音量{mode}{amount}分贝。"),
    "emotion": ("Change the emotion to {option}.", "将情感转变为{option}。"),
    "timbre": (
        'Keep the spoken content unchanged and change the timbre to: "{original}".',
        "请将这段音频的音色修改为符合以下描述的声音：“{original}”。",
    ),
    "de_accent": (
        "Remove the regional accent while preserving the speaker's voice and content.",
        "请去掉这段语音里的方言口音，保持说话人音色一致。",
    ),
    # breath, laugh and cough all take a plain -s in the English plural
    "nonverbal:Remove all": ("Remove all {option}s from the audio.", "删除音频中所有的{option}。"),
    "nonverbal:Add at the beginning": ("Add a {option} at the beginning of the speech.", "在语音开头增加{option}。"),
    "nonverbal:Add at the end": ("Add a {option} at the end of the speech.", "在语音结尾增加{option}。"),
    "whisper:Speech → whisper": (
        "Convert this speech into a soft whisper while preserving the speaker and content.",
        "用小声耳语的方式把这段话说出来。",
    ),
    "whisper:Whisper → speech": (
        "Convert this whispered speech into a normal speaking voice while preserving the speaker and content.",
        "把这段耳语转换成正常说话的声音。",
    ),
    "enhance:Remove noise": (
        "Remove only the background noise, preserve everything else, and output audio of the same length.",
        "请只去除背景噪声，保留其他内容，输出等长结果。",
    ),
    "enhance:Remove reverberation": (
        "Remove only the room reverberation, preserve everything else, and output audio of the same length.",
        "请只去除房间混响，保留其他内容，输出等长结果。",
    ),
    "enhance:Remove noise and reverberation": (
        "Preserve all speakers, remove noise and reverberation, and output clean speech of the same length.",
        "请保留所有说话人，去除噪声和混响，输出等长的纯净语音。",
    ),
    "enhance:Repair": (
        "Repair the {option} and restore natural, clear speech.",
        "请修复这段音频的{option}，恢复自然清晰的人声。",
    ),
    "speech_separation": (
        "Keep only the {option} speaker to start talking and remove all other speakers.",
        "只保留第{option}个开始说话的人，去掉其余说话人。",
    ),
    "music_separation:the singing voice": (
        "Keep only the singing voice and remove everything else.",
        "请只保留歌声，其余声音都去掉。",
    ),
    "music_separation:all human voices": (
        "Keep all human voices, including speech and singing, and remove everything else.",
        "请保留所有人声，包括说话和歌唱，其余声音都去掉。",
    ),
    "target_speaker": (
        'Keep only the speaker who says "{text}" and remove all other speakers.',
        "请只保留说“{text}”的人，去掉其他说话人。",
    ),
}

# Chinese for the dropdown values a Chinese template takes, in the cookbook's own words and order:
# 升高/降低 (sections 3.1, 3.3), the eight emotions (4.1), the nonverbal sounds (4.4, whose "add"
# form names no sounds of its own, so it takes the "remove" form's), the four repairs (5.1). The
# speaker order fills section 5.2's {序号} with a Chinese numeral, as upstream's prompt enhancer does
# (``_integer_to_zh``); the cookbook itself shows no filled example. Numbers stay digits.
ZH_WORDS = {
    "Raise": "升高", "Lower": "降低", "Increase": "升高", "Decrease": "降低",
    "happy": "开心", "angry": "愤怒", "sad": "悲伤", "fearful": "恐惧", "surprised": "惊讶", "disgusted": "厌恶",
    "calm": "平静", "excited": "兴奋",
    "breath": "换气声", "laugh": "笑声", "cough": "咳嗽声",
    "telephone effect": "电话感", "muffling": "闷声", "clipping": "削波", "dropouts": "丢包",
    "first": "一", "second": "二",
}  # fmt: skip


# ----------------------------------------------------------------------------- catalogue

_TEXT = "text"
_EMOTIONS = ("happy", "angry", "sad", "fearful", "surprised", "disgusted", "calm", "excited")


def _variants(key: str) -> tuple[str, ...]:
    """The variants the template table has for ``key``, in table order."""
    return tuple(k.split(":", 1)[1] for k in TEMPLATES if k.startswith(key + ":"))


TASKS: tuple[Task, ...] = (
    Task(
        "zero_shot_tts", "Speech generation", "Zero-shot TTS (clone the clip's voice)", True,
        {
            _TEXT: Slot("Text to speak", placeholder="Ladies and gentlemen, it's an honor to be here."),
            "original": Slot("What the clip says (optional: times the text at its speaker's pace)",
                             placeholder="the words spoken in the uploaded clip"),
        },
        _text_estimate, reliable=True, paced=True, transcript="original",
    ),
    Task(
        "instruct_tts", "Speech generation", "Instruct TTS (voice from a description, no clip)", False,
        {
            "original": Slot("Voice description", placeholder="A warm, low female voice, speaking slowly."),
            _TEXT: Slot("Text to speak", placeholder="The library opens at nine."),
        },
        _text_estimate, reliable=True,
        note="Known limitation: parts of the description can leak into the speech.",
    ),
    Task(
        "content_edit", "Content editing", "Speech content editing", True,
        {
            "mode": Slot("Edit", _variants("content_edit"), "Replace"),
            "original": Slot("Words to replace / anchor words", placeholder="seven o'clock"),
            _TEXT: Slot("New words / words to add or remove", placeholder="eight o'clock"),
        },
        _content_delta, variant="mode", reliable=False, note="Spell digits out as words.", paced=True,
    ),
    Task(
        "lyric_edit", "Content editing", "Lyric editing (a cappella)", True,
        {
            "original": Slot("Original lyrics", placeholder="under the moonlight"),
            _TEXT: Slot("New lyrics", placeholder="under the streetlight"),
        },
        _same_length, reliable=False,
    ),
    Task(
        "pitch", "Acoustic editing", "Pitch", True,
        {"mode": Slot("Direction", ("Raise", "Lower"), "Raise"), "amount": Slot("Semitones", ("1", "2", "3"), "2")},
        _same_length, reliable=False,
    ),
    Task(
        "speed", "Acoustic editing", "Speed", True,
        {"amount": Slot("Speed factor", ("0.5", "0.75", "1.25", "1.5", "2.0"), "1.5")},
        _speed, reliable=False,
    ),
    Task(
        "volume", "Acoustic editing", "Volume", True,
        {"mode": Slot("Direction", ("Increase", "Decrease"), "Decrease"), "amount": Slot("dB", ("5", "10", "15"), "10")},
        _same_length, reliable=True,
    ),
    Task(
        "emotion", "Paralinguistic", "Emotion", True,
        {"option": Slot("Emotion", _EMOTIONS, "happy")},
        _emotion, reliable=False,
    ),
    Task(
        "timbre", "Paralinguistic", "Timbre", True,
        {"original": Slot("New timbre", placeholder="a deep, husky male voice")},
        _same_length, reliable=False,
    ),
    Task("de_accent", "Paralinguistic", "De-accent", True, {}, _same_length, reliable=False),
    Task(
        "nonverbal", "Paralinguistic", "Nonverbal sounds", True,
        {
            "mode": Slot("Edit", _variants("nonverbal"), "Remove all"),
            "option": Slot("Sound", ("breath", "laugh", "cough"), "breath"),
        },
        _nonverbal, variant="mode", reliable=False,
    ),
    Task(
        "whisper", "Paralinguistic", "Whisper conversion", True,
        {"mode": Slot("Direction", _variants("whisper"), "Speech → whisper")},
        _same_length, variant="mode", reliable=False,
    ),
    Task(
        "enhance", "Enhancement & separation", "Speech enhancement", True,
        {
            "mode": Slot("Fix", _variants("enhance"), "Remove noise"),
            "option": Slot("Repair what", ("telephone effect", "muffling", "clipping", "dropouts"), "clipping"),
        },
        _same_length, variant="mode", reliable=True,
    ),
    Task(
        "speech_separation", "Enhancement & separation", "Speech separation", True,
        {"option": Slot("Keep the speaker who starts", ("first", "second"), "first")},
        _same_length, reliable=True,
    ),
    Task(
        "music_separation", "Enhancement & separation", "Music separation", True,
        {"option": Slot("Keep", _variants("music_separation"), "the singing voice")},
        _same_length, variant="option", reliable=True,
    ),
    Task(
        "target_speaker", "Enhancement & separation", "Target speaker extraction", True,
        {_TEXT: Slot("What the speaker to keep says", placeholder="see you tomorrow")},
        _same_length,
    ),
)
TASKS_BY_KEY = {task.key: task for task in TASKS}


def task(key: str) -> Task:
    try:
        return TASKS_BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown task {key!r}; known: {', '.join(TASKS_BY_KEY)}") from None


# ----------------------------------------------------------------------------- what a model was trained for


def supports(tasks: tuple[str, ...] | None, key: str) -> bool:
    """Whether a model trained for ``tasks`` (None: every task) covers ``key``, a task or "task:template"."""
    return tasks is None or key in tasks or key.split(":", 1)[0] in tasks


def coverage(tasks: tuple[str, ...] | None, task_key: str) -> str:
    """"all", "some" or "none" of a task's templates that ``tasks`` covers: how the builder marks it."""
    keys = [k for k in TEMPLATES if k == task_key or k.startswith(task_key + ":")]
    covered = sum(supports(tasks, k) for k in keys)
    return "all" if covered == len(keys) else "some" if covered else "none"


def build(
    key: str, fields: Fields, *, source_seconds: float | None, limits: Limits, language: str = EN,
    voiced_seconds: float | None = None, transcript: str | None = None,
) -> Built:
    """The instruction in ``language`` (``EN`` or ``ZH``) and the duration for task ``key`` with
    ``fields`` (missing fields take defaults). New words follow the source speaker's pace where it
    is known: the source clip's ``voiced_seconds`` (``pace.voiced_seconds``) and what it says,
    ``transcript`` or the task's own transcript field."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown instruction language {language!r}; known: {', '.join(LANGUAGES)}")
    chosen = task(key)
    filled = {name: (fields.get(name) or slot.default) for name, slot in chosen.slots.items()}
    english, chinese = chosen.templates(filled)
    instruction = chosen.render(filled, language)
    if transcript is None and chosen.transcript:
        transcript = filled[chosen.transcript]
    pace = speaking_rate(transcript or "", voiced_seconds) if chosen.paced and source_seconds is not None else None
    duration = chosen.duration(filled, source_seconds, pace)
    if duration.seconds > 0:
        frames, reason = estimate_frames(duration.seconds), duration.reason
        cap = frames_for_seconds(limits.max_target_seconds)
        if frames > cap:
            frames, reason = cap, f"{reason}, capped at the {limits.max_target_seconds:g} s limit"
        reason = f"{reason}; {frames} frames = {frames / FRAME_RATE:g} s of audio"
        duration = Duration(seconds_for_frames(frames), reason)
    problem = ""
    empty = [slot.label for name, slot in chosen.slots.items()
             if not slot.choices and f"{{{name}}}" in english and not filled[name].strip()]
    if empty:
        problem = f"Fill in: {', '.join(empty)}."
    elif source_seconds is not None and source_seconds > limits.max_target_seconds and not supports(WHOLE_TASKS, key):
        # Longer than any region: only an edit that keeps the timing and the words runs on it, whole.
        problem = (f"The clip lasts {source_seconds:.2f} s: {lengths.OTHER_EDITS} with this task, choose a region of "
                   f"at most {limits.max_target_seconds:g} s; {lengths.WHOLE_EDITS} run on the whole of it.")
    elif chosen.needs_audio and source_seconds is None:
        problem = "This task edits a clip: upload or record one."
    elif not chosen.needs_audio and source_seconds is not None:
        problem = "This task generates from text alone: remove the clip, or the model will treat it as a voice to edit."
    if chosen.reliable is None:
        reliability = ""
    elif chosen.reliable:
        reliability = "Community tests of the released AuK: works reliably."
    else:
        reliability = "Community tests of the released AuK: often unstable; try a few seeds."
    notes = [chosen.note]
    if language == ZH and english == chinese:
        notes.append("The cookbook gives this task one template for both languages, so 中文 uses it as it is.")
    return Built(instruction, duration, problem, reliability, " ".join(note for note in notes if note), pace)
