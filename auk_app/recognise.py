"""Recognise a request's task, and its numbers, direction and language, from what people write.

    found = recognise("make it five decibels quieter please")
    found.task, found.fields, found.language   # "volume", {"mode": "Decrease", "amount": "5"}, "en"
    found.instruction()                        # "Decrease the volume by 5 dB." (the cookbook's wording)

Rules and word lists, not a model, so that every decision can be read here. A request is first
made regular (``auk_app.wording``: quotes, punctuation, number words), then tried against the
cookbook's templates with their punctuation optional, then against each task's cues in a fixed
order, most specific first: a task that names quoted words (target speaker, word edits, speech
from text) before the acoustic edits with a number (pitch, speed, volume), and those before the
ones named by a word alone (emotion, timbre). Each task's cues are its nouns and verbs in English
and Chinese; a removal needs a removal verb ("Add reverb" is no dereverberation), and a direction
comes from a sign or the first direction word. None: no task of the cookbook (nor a tone) fits.
The lexicon was written from the cookbook's tasks, not from the held-out wordings that measure it
(``bench/bench_recogniser.py``); the mechanical faults their first run showed were fixed after it,
as docs/recogniser.md says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from auk_app.instructions import EN, LANGUAGES, TASKS, TASKS_BY_KEY, TEMPLATES, ZH, ZH_WORDS, supports, task
from auk_app.wording import CJK, digits, normalise, plain, quoted_spans

# Tasks outside the cookbook: a name, and the wording a checkpoint that declares the task (its config's
# ``capabilities.tasks``) was trained on: AuK-Tiny's text to tone (training/instructions.py), and the
# trimming of silence at the ends, which the edit check measures and no model declares (no wording).
EXTRA_TASKS = {"sine_tone": ("Sine tone (text to tone)", "Generate a {amount} Hz sine tone."),
               "trim_silence": ("Silence trimming", None)}
Fields = Mapping[str, str]


@dataclass(frozen=True)
class Recognised:
    """A recognised request: its task (a TASKS key or an EXTRA_TASKS one), the builder fields found
    (English choice values; a field not found is missing) and the request's own language."""

    task: str
    fields: Fields = field(default_factory=dict)
    language: str = EN

    @property
    def key(self) -> str:
        """The template key: the task, or "task:variant" ("enhance:Remove noise") once the variant is known."""
        if self.task in EXTRA_TASKS or not task(self.task).variant:
            return self.task
        variant = self.fields.get(task(self.task).variant)
        return f"{self.task}:{variant}" if variant else self.task

    @property
    def name(self) -> str:
        if self.task in EXTRA_TASKS:
            return EXTRA_TASKS[self.task][0]
        variant = self.key.partition(":")[2]
        return task(self.task).name + (f" ({variant})" if variant else "")

    def instruction(self, language: str | None = None) -> str | None:
        """The cookbook's instruction for this request in ``language`` (default: the request's), or
        None while a field its template needs was not found."""
        language = language or self.language
        if self.task in EXTRA_TASKS:
            template = EXTRA_TASKS[self.task][1] or ""  # trained in English only, if at all
        else:
            template = TEMPLATES.get(self.key, ("",) * 2)[LANGUAGES.index(language)]
        needed = re.findall(r"\{(\w+)\}", template)
        if not template or not all(self.fields.get(name) for name in needed):
            return None
        if self.task in EXTRA_TASKS:
            return template.format(**self.fields)
        return task(self.task).render(self.fields, language)


def recognise(text: str) -> Recognised | None:
    """The task ``text`` asks for, with what it says of the task's fields; None when no task fits."""
    request = Request(text)
    if not request.bare:
        return None
    found = _template(request)
    if found is not None:
        return Recognised(*found, request.language)
    for key, detect in DETECTORS:
        fields = detect(request)
        if fields is not None:
            return Recognised(key, {k: v for k, v in fields.items() if v}, request.language)
    return None


def cookbook_key(text: str) -> str | None:
    """The template key ("pitch", "enhance:Remove noise") of a request in a cookbook template's
    wording, punctuation aside; None for free wording."""
    found = _template(Request(text))
    return None if found is None else Recognised(*found).key


def rewrite(text: str, language: str | None = None) -> str | None:
    """The cookbook instruction for a free-form request, in ``language`` (default: the request's),
    or None when the task or one of its fields is not recognised for sure."""
    found = recognise(text)
    return None if found is None else found.instruction(language)


def language_of(text: str) -> str:
    """The request's own language: Chinese when it has Chinese outside its quotes."""
    return Request(text).language


def untrained(found: Recognised | None, language: str, tasks: tuple[str, ...] | None,
              languages: tuple[str, ...]) -> list[str]:
    """What a request (what the recogniser ``found`` in it, in ``language``) asks of a model trained
    for ``tasks`` (None: the cookbook's) and ``languages`` that it never saw, as phrases ("Pitch",
    "Chinese instructions"): the task, in any wording, when the model lacks it (a task outside the
    cookbook counts only where the model declares it), and Chinese on an English-only model."""
    gaps = []
    if found is not None and not (supports(tasks, found.key) and (found.task not in EXTRA_TASKS or tasks is not None)):
        gaps.append(found.name)
    if ZH not in languages and language == ZH:
        gaps.append("Chinese instructions (it reads English only)")
    return gaps


def unmatched(found: Recognised | None, tasks: tuple[str, ...] | None, label: str) -> list[str]:
    """The sentence for a request that reads as no task at all (``found`` None), naming what the model
    ``label`` (trained for ``tasks``, None: the cookbook's) was trained for and the fix; [] otherwise."""
    if found is not None:
        return []
    if tasks is None:
        trained = f"for the {len(TASKS)} tasks of the instruction builder"
    else:
        names = [_task_name(key) for key in tasks]
        trained = "only for " + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0])
    return [f"{label} was trained {trained}, and this request reads as none of them, so expect a result that "
            "does not follow it; word it as one of those, as the instruction builder does."]


def _task_name(key: str) -> str:
    """A declared task's name with its template's variant ("Speech enhancement (Remove noise)"); an
    unknown key as it is."""
    chosen, _, variant = key.partition(":")
    if chosen in EXTRA_TASKS:
        return EXTRA_TASKS[chosen][0]
    if chosen not in TASKS_BY_KEY:
        return key
    return TASKS_BY_KEY[chosen].name + (f" ({variant})" if variant else "")


class Request:
    """A request made regular: ``normal`` (``wording.normalise``), ``text`` (number words as digits
    outside quotes), ``quotes`` (the quoted spans, in order) and ``bare`` (lower case, each quoted
    span replaced by «0», «1», …)."""

    def __init__(self, raw: str):
        normal = normalise(raw)
        spans = quoted_spans(normal)
        self.quotes = [(m.group(1) or m.group(2)).strip() for m in spans]
        text, bare, last = [], [], 0
        for i, match in enumerate(spans):
            outside = digits(normal[last:match.start()])
            text += [outside, match.group(0)]
            bare += [outside.lower(), f" «{i}» "]
            last = match.end()
        text.append(digits(normal[last:]))
        bare.append(digits(normal[last:]).lower())
        self.normal = normal
        self.text = "".join(text)
        self.bare = " ".join("".join(bare).split())
        self.language = ZH if re.search(f"[{CJK}]", self.bare) else EN

    def find(self, pattern: str) -> re.Match | None:
        return re.search(pattern, self.bare)

    def quote(self, index: str | int) -> str:
        return self.quotes[int(index)]


# ----------------------------------------------------------------------------- the cookbook's own wording

_NUMBER = r"[+-]?\d+(?:\.\d+)?"
N = f"({_NUMBER})"  # a number as a group, in ``Request.bare``


def _choices(task_key: str, name: str) -> dict[str, str]:
    """A choice field's values as written (English in lower case, and Chinese) → the English value."""
    choices = task(task_key).slots[name].choices
    return {**{c.lower(): c for c in choices}, **{ZH_WORDS[c]: c for c in choices if c in ZH_WORDS}}


def _loose(template: str, task_key: str) -> re.Pattern:
    """A template as a whole-text pattern: its words in order, its quotes (of either kind) around the
    same fields, its other punctuation and its spaces optional (a full stop inside or outside the
    quotes), an amount any number and a choice field any of its values."""
    slots = {} if task_key in EXTRA_TASKS else task(task_key).slots
    parts = []
    for piece in re.split(r"(\{\w+\})", normalise(template)):
        name = piece[1:-1] if piece.startswith("{") else None
        if name == "amount":
            parts.append(f"(?P<amount>{_NUMBER})")
        elif name and slots[name].choices:
            values = sorted(_choices(task_key, name), key=len, reverse=True)
            parts.append(f"(?P<{name}>{'|'.join(map(re.escape, values))})")
        elif name:  # quoted words: no quote inside but an apostrophe ("it's"), their own full stop ("Hello.")
            parts.append(f"(?P<{name}>(?:[^\"']|'(?=[a-z]))+?[.!?]*)")
        else:
            parts += [r"\s*" if c == " " else re.escape(c) if c.isalnum() else "[\"']" if c in "\"'" else r"[^\w\s]?"
                      for c in piece]
    return re.compile(r"[^\w\s]*\s*" + "".join(parts) + r"[^\w\s]*", re.IGNORECASE)


# Most literal wording first: "Remove '{text}'." also fits the whole of "Remove 'a' before 'b'.".
_TEMPLATE_PATTERNS = sorted(
    [(key, _loose(text, key.partition(":")[0])) for key, pair in TEMPLATES.items() for text in set(pair)]
    + [(key, _loose(text, key)) for key, (_, text) in EXTRA_TASKS.items() if text],
    key=lambda item: -len(re.sub(r"\{\w+\}|\W", "", item[1].pattern)))


def _template(request: Request) -> tuple[str, dict[str, str]] | None:
    """(task, fields) of a request in a cookbook template's wording, punctuation aside."""
    for key, pattern in _TEMPLATE_PATTERNS:
        match = pattern.fullmatch(request.text)
        if match is None:
            continue
        task_key, _, variant = key.partition(":")
        fields = {name: value.strip() for name, value in match.groupdict().items()}
        for name, value in fields.items():
            if name != "amount" and task_key not in EXTRA_TASKS and task(task_key).slots[name].choices:
                fields[name] = _choices(task_key, name)[value.lower()]
            elif name != "text":  # a description's own full stop, inside its quotes
                fields[name] = value.rstrip(".,;:!?")
        if variant:
            fields[task(task_key).variant] = variant
        return task_key, fields
    return None


# ----------------------------------------------------------------------------- free wording: shared cues

Q = r"«(\d+)»"  # a quoted span in ``Request.bare``
_KEEP = (r"\b(?:keep|keeping|only|isolate|isolating|extract|extracting|separate|pull out|leave|just|solo|preserve|"
         r"except|retain|single out|get)\b|保留|只要|只留|提取|分离|留下|单独")
_REMOVE = (r"\b(?:remove|removing|delete|deleting|cut|cutting|drop|omit|erase|take(?: \w+){0,4}? out|get rid of|"
           r"eliminate|strip|"
           r"kill|clean|cleaning|suppress\w*|reduce|reducing|minimi[sz]e|lose|mute|without|no more|no|less|"
           r"filter(?:ing)? out|edit out|lower|dry|fix|fixing|repair|undo)\b|去掉|去除|删掉|删除|删去|消除|清除|"
           r"减少|降低|不要|没有|去|除")
_ADD = (r"\b(?:add|adding|insert|inserting|put|include|apply|applying|give it|simulate|(?<!no )more)\b|"
        r"\b(?:start|begin|end|finish|open|close)(?: it| this| the \w+)? with\b|加上|加入|添加|增加|插入|加")


def _number(match: re.Match | None, group: int | str = 1) -> float | None:
    return None if match is None or match.group(group) is None else float(match.group(group))


def _first(r: Request, *patterns: str) -> int | None:
    """The index of the pattern found earliest in the request; None if none is."""
    found = [(m.start(), i) for i, p in enumerate(patterns) if (m := r.find(p))]
    return min(found)[1] if found else None


def _signed(r: Request, value: float | None, up: str, down: str) -> tuple[int | None, float | None]:
    """(+1 up, −1 down or None; the size): a signed number decides, else the first direction word."""
    if value is not None and value < 0:
        return -1, -value
    if value is not None and r.find(r"\+\s*\d"):
        return 1, value
    first = _first(r, up, down)
    return (None if first is None else (1, -1)[first]), value


# ----------------------------------------------------------------------------- tasks named by quoted words


def _target_speaker(r: Request) -> dict | None:
    says = r.find(rf"\b(?:who|that|which|one|guy|person|speaker|man|woman|girl|boy|voice|whoever)\s+(?:is\s+)?"
                  rf"(?:says?|said|saying|speaks?|spoke|utters?|mentions?)\s*:?\s*{Q}"
                  rf"|说(?:了|出)?\s*{Q}\s*的")
    if says is None or not r.find(_KEEP):
        return None
    return {"text": r.quote(says.group(1) or says.group(2))}


_LYRIC = r"\b(?:lyrics?|sing|sings|sung|singing|song|chorus|verse)\b|歌词|唱|歌"
_ZH_ASPECT = r"音色|声音|语速|速度|音量|音调|音高|情感|情绪|语气|口音|噪|混响|风格|嗓音|声线|歌声|人声|耳语|说话"
_REPLACED = (  # (pattern, group of the words replaced, group of the new words)
    (rf"\bsubstitute\s*{Q}\s*for\s*{Q}", 2, 1),
    (rf"\b(?:say|use|put|read|sing)\s*{Q}\s*(?:instead of|in place of|rather than)\s*{Q}", 2, 1),
    (rf"(?:instead of|in place of|rather than)\s*{Q},?\s*(?:\w+\s+){{0,3}}{Q}", 1, 2),
    (rf"\b(?:replace|change|swap|switch|turn|correct|alter|edit|fix|modify|make|substitute)\b[^«]*{Q}\s*"
     rf"(?:with|by|to|into|for|->|→|=>|as)\s*{Q}", 1, 2),
    (rf"{Q}\s*(?:should be|becomes?|->|→|=>)\s*{Q}", 1, 2),
    (rf"{Q}\s*(?:改成|换成|改为|替换成|替换为|变成|换为|改作)\s*{Q}", 1, 2),
    (rf"用\s*{Q}\s*(?:替换|代替|替代|取代)(?:掉)?\s*{Q}", 2, 1),
)


def _replaced(r: Request) -> dict | None:
    """The words replaced and the new words: quoted, or after "the word" / 把 when nothing is quoted."""
    for pattern, old, new in _REPLACED:
        if match := r.find(pattern):
            return {"original": r.quote(match.group(old)), "text": r.quote(match.group(new))}
    if r.quotes:
        return None
    match = re.search(r"\b(?:replace|change|swap)\s+(?:the\s+)?(?:word|words|phrase|name)\s+(.+?)\s+"
                      r"(?:with|to|for|into)\s+(?:the\s+)?(?:word\s+)?(.+?)[.!]*$", r.text, re.IGNORECASE) \
        or re.search(r"把(.+?)(?:改成|换成|改为|替换成|替换为|变成)(.+?)[.!]*$", r.text)
    if match and not re.search(_ZH_ASPECT, match.group(1) + match.group(2)) and not re.search(r"\d", match.group(2)):
        return {"original": match.group(1).strip(), "text": match.group(2).strip()}
    return None


def _added(r: Request) -> dict | None:
    before = r"before|in front of|ahead of|前面|前|之前"
    if match := r.find(rf"\b(?:add|insert|put|include|say)\s*{Q}\s*(?:right\s+|just\s+|directly\s+)?"
                       rf"(before|in front of|ahead of|after|following|behind)\s*{Q}"):
        new, where, anchor = match.groups()
    elif match := r.find(rf"\b(before|after)\s*{Q},?\s*(?:add|insert|put|say)\s*{Q}"):
        where, anchor, new = match.groups()
    elif match := r.find(rf"在\s*{Q}\s*(前面|前|之前|后面|后|之后)\s*(?:加上|加入|添加|增加|插入|加)\s*{Q}"):
        anchor, where, new = match.groups()
    else:
        match = r.find(rf"\b(?:add|insert)\s*{Q}|(?:加上|加入|添加|插入)\s*{Q}")
        return {"text": r.quote(match.group(1) or match.group(2))} if match else None
    mode = "Add before" if re.fullmatch(before, where) else "Add after"
    return {"mode": mode, "text": r.quote(new), "original": r.quote(anchor)}


_DELETE = r"\b(?:remove|delete|cut|drop|omit|erase|take out|get rid of|leave out|skip|strip)\b|删掉|删除|去掉|删去|去除"


def _removed(r: Request) -> dict | None:
    if match := r.find(rf"(?:{_DELETE})\s*(?:out\s+)?(?:the\s+)?(?:words?\s+|phrase\s+)?{Q}(?:\s*(?:that\s+|which\s+)?"
                       rf"(?:comes\s+|is\s+|appears\s+)?(?:right\s+|just\s+)?"
                       rf"(before|after|following|preceding)\s*{Q})?"):
        removed, where, anchor = match.groups()
    elif match := r.find(rf"(?:{_DELETE})\s*{Q}\s*(前面|后面|之前|之后|前|后)的\s*{Q}"):
        anchor, where, removed = match.groups()
    elif match := r.find(rf"把\s*{Q}\s*(?:{_DELETE})"):
        removed, where, anchor = match.group(1), None, None
    else:
        return None
    if where is None:
        return {"mode": "Remove", "text": r.quote(removed)}
    mode = "Remove before" if re.fullmatch(r"before|preceding|前面|之前|前", where) else "Remove after"
    return {"mode": mode, "text": r.quote(removed), "original": r.quote(anchor)}


def _content_edit(r: Request) -> dict | None:
    replaced = _replaced(r)
    if replaced is not None:
        return None if r.find(_LYRIC) else {"mode": "Replace", **replaced}
    return _added(r) or _removed(r)


def _lyric_edit(r: Request) -> dict | None:
    return _replaced(r) if r.find(_LYRIC) else None


_SPEAK = (r"\b(?:say|says|saying|speak|speaking|read|reading|pronounce|utter|narrate|recite|announce|tell|"
          r"generate (?:speech|audio|a voice|a recording|a clip)|synthesi[sz]e|text[- ]to[- ]speech|tts|"
          r"produce speech|create speech|voice-?over)\b|说|读|念|朗读|播报|合成|生成语音|生成一段语音|配音")
_CLONE = (r"\b(?:same|this|that|my|his|her|their|the original|the reference|the speaker'?s|the clip'?s|own|"
          r"identical|matching)\s+(?:\w+\s+)?(?:voice|speaker|timbre)\b|\bclon\w*|\bvoice of (?:this|the) "
          r"(?:clip|recording|speaker|audio)|同样的声音|相同的声音|同一个声音|这个声音|原来的声音|原声|克隆|同样的音色|"
          r"相同的音色|这个人的声音|同一个人|原说话人|这段音频的声音|同样的嗓音")
_DESCRIBED = (r"\bdescri\w*|\b(?:voice|speaker|narrator|man|woman|girl|boy|child|kid|lady|gentleman|person|"
              r"announcer|male|female)\b|描述|的声音|男声|女声|嗓音|童声")
_CONTENT = r"(?:\b(?:say|says|saying|speak|read|pronounce|content|text|words|line|sentence|script)\b|内容|文本|台词|说|读|念)"


def _zero_shot_tts(r: Request) -> dict | None:
    found = _tts(r)
    return found[1] if found and found[0] == "zero_shot_tts" else None


def _instruct_tts(r: Request) -> dict | None:
    found = _tts(r)
    return found[1] if found and found[0] == "instruct_tts" else None


def _tts(r: Request) -> tuple[str, dict] | None:
    """Speech from text: zero-shot with a clone cue or no voice named, instruct with a voice description."""
    if not r.find(_SPEAK):
        return None
    spoken = r.find(rf"{_CONTENT}[^«]{{0,30}}?{Q}")
    index = int(spoken.group(1)) if spoken else 0 if len(r.quotes) == 1 else None
    text = None if index is None else r.quotes[index]
    if text is None and (after := re.search(r":\s*([^:\"']+?)\s*$", r.normal)):
        text = after.group(1)
    if text is None and not r.quotes:
        return None
    if r.find(_CLONE) or not r.find(_DESCRIBED):
        return "zero_shot_tts", {"text": text}
    others = [q for i, q in enumerate(r.quotes) if i != index]
    return "instruct_tts", {"text": text, "original": others[0].rstrip(".,;:!?") if others else _description(r)}


def _description(r: Request) -> str | None:
    """A voice description written out: "in a warm, low female voice", "用温柔的女声"."""
    match = r.find(r"(?:\b(?:in|with|using|by|as|like|make|have|let|get)\s+|^)((?:an?|the)\s+[^«.;:]*\b(?:voice|"
                   r"speaker|narrator|man|woman|girl|boy|child|lady|gentleman|announcer)\b(?:'s voice)?"
                   r"(?:\s+(?:who|that|with)\s+[^«.;:,]*)?)|用\s*(.+?)(?:的声音|的语气)?\s*(?:说|读|念|朗读)")
    return None if match is None else (match.group(1) or match.group(2)).strip(" ,")


# ----------------------------------------------------------------------------- enhancement and separation

_NOISE = (r"\b(?:noise|noises|noisy|hiss\w*|hum|humming|buzz\w*|static|crackl\w*|rumble|background sounds?|traffic|"
          r"wind|fan|denois\w*|de-nois\w*|clean (?:it |this |the \w+ )?up|cleanup)\b|噪|杂音|嘶嘶|底噪|电流声|嗡嗡|"
          r"沙沙|环境音|背景音(?!乐)")
_REVERB = (r"\b(?:reverb\w*|echo\w*|room (?:sound|tone|acoustics|reflections)|reflections|dereverb\w*|"
           r"de-reverb\w*|roomy|boomy)\b|混响|回声|回音|房间声|空旷")
_REPAIRS = (
    ("telephone effect", r"\b(?:tele)?phone\w*|\bband-?limited|\bnarrow-?band|\btinny\b|电话"),
    ("muffling", r"\bmuffl\w*|\bmuddy\b|\bmuted\b|\bdull\b|\bunderwater\b|闷"),
    ("clipping", r"\bclipp\w*|\bclipped\b|\bdistort\w*|\boverdriv\w*|\bsaturat\w*|削波|爆音|破音|失真|过载"),
    ("dropouts", r"\bdrop-?outs?\b|\bdropp\w* out\b|\bgaps?\b|\bcuts? out\b|\bcutting out\b|\bpacket loss\b|"
                 r"\bglitch\w*|\bstutter\w*|\bskipp\w*|丢包|断断续续|断续|卡顿|掉字|断音"),
)
_REPAIR = (r"\b(?:repair\w*|fix\w*|restor\w*|undo|remove|correct|recover|clean|reduce|get rid|eliminate|"
           r"de-?clip\w*|unclip\w*|unmuffl\w*|without|less|clearer|clear up|crisper)\b|修复|修正|恢复|去掉|去除|消除|修")


def _added_to(r: Request, thing: str) -> bool:
    """Whether ``thing`` is asked for more of ("add reverb", "加点混响"), not removed."""
    return bool(r.find(rf"(?:{_ADD})[^.,;«]{{0,30}}?(?:{thing})"))


def _enhance(r: Request) -> dict | None:
    for option, cue in _REPAIRS:
        if r.find(cue) and r.find(_REPAIR) and not _added_to(r, cue):
            return {"mode": "Repair", "option": option}
    if not r.find(_REMOVE) and not r.find(r"\bde-?(?:nois|reverb)\w*|\bclean\w*|降噪|干净"):
        return None
    noise, reverb = (bool(r.find(cue)) and not _added_to(r, cue) for cue in (_NOISE, _REVERB))
    if noise and reverb:
        return {"mode": "Remove noise and reverberation"}
    if noise or reverb:
        return {"mode": "Remove noise" if noise else "Remove reverberation"}
    return None


_SILENCE = (r"\b(?:silen\w*|pauses?|dead air|gaps? of nothing|empty (?:space|bits?))\b|静音|空白|停顿|无声")


def _trim_silence(r: Request) -> dict | None:
    """Silence cut from the ends: a silence cue beside a removal or trimming verb (not an added pause)."""
    if not r.find(_SILENCE) or _added_to(r, _SILENCE):
        return None
    return {} if r.find(rf"{_REMOVE}|\b(?:trim\w*|shorten)\b|剪掉|裁掉|切掉") else None


_VOCALS = (r"\b(?:vocals?|singing|singer'?s?|sung|a ?cappella|acapella|voice track|vox)\b|人声|歌声|清唱|唱歌|演唱")
_MUSIC = (r"\b(?:music|musical|instrument\w*|accompaniment|backing(?: track)?|band|beats?|bgm|karaoke|guitars?|"
          r"piano|drums?|bass)\b|伴奏|音乐|乐器|背景音乐")
_ALL_VOICES = (r"\ball (?:the )?(?:human )?voices|\bspeech and singing|\bsinging and (?:speech|talking)|"
               r"\btalking and singing|\bhuman voices|\bevery voice|\bspeech\b|\bspoken\b|\btalking\b|\bdialog\w*|"
               r"\bpodcast|所有人声|说话和唱歌|说话和歌唱|语音|说话")


def _object(r: Request, verb: str, *things: str) -> int | None:
    """Which of ``things`` a ``verb`` acts on: the one nearest after it in the same clause; None if none."""
    ends = [(m.end(), i) for i, thing in enumerate(things) if (m := r.find(rf"(?:{verb})[^.;]*?(?:{thing})"))]
    return min(ends)[1] if ends else None


def _music_separation(r: Request) -> dict | None:
    voice = rf"{_VOCALS}|\bvoices?\b|人声"
    kept, removed = _object(r, _KEEP, voice, _MUSIC), _object(r, _REMOVE, voice, _MUSIC)
    musical = r.find(_VOCALS) or r.find(_MUSIC)
    if not ((kept == 0 and musical) or (removed == 1 and kept != 1)):
        return None
    return {"option": "all human voices" if r.find(_ALL_VOICES) else "the singing voice"}


_SPEAKER = (r"\b(?:speakers?|person|people|talkers?|voices?|guy|man|woman|one|whoever|participants?|interviewer|"
            r"interviewee|host|guest)\b|说话人|说话的人|人|讲话")
_FIRST = (r"\b(?:first|1st|earliest|initial|opening)\b|第一|第1|先|最先|首先")
_SECOND = r"\b(?:second|2nd|latter|later)\b|第二|第2|后说|后面"


def _speech_separation(r: Request) -> dict | None:
    if not (r.find(_SPEAKER) and (r.find(_KEEP) or r.find(r"\bseparat\w*|分开|分离"))):
        return None
    ordinal = _first(r, _FIRST, _SECOND)
    if ordinal is None and not r.find(r"\bseparat\w*|分开|分离|\bother (?:speakers?|voices?|people)|其他|其余"):
        return None
    return {"option": None if ordinal is None else ("first", "second")[ordinal]}


# ----------------------------------------------------------------------------- edits with a number

_UNIT_END = r"(?![a-z])"  # a unit's end: not \b, which finds none between "Hz" and a Chinese character


def _sine_tone(r: Request) -> dict | None:
    hz = r.find(rf"{N}\s*(?:hz{_UNIT_END}|hertz|赫兹)")
    khz = r.find(rf"{N}\s*(?:khz{_UNIT_END}|kilohertz|千赫)")
    if not (hz or khz) or not r.find(r"\b(?:tone|sine|sinusoid\w*|beep|wave|note|whistle|hum)\b|正弦|纯音|音|哔|嘀"):
        return None
    if r.find(r"\b(?:raise|lower|shift|transpose|pitch)\b|升高|降低|音调"):
        return None
    return {"amount": plain(_number(hz) if hz else 1000 * _number(khz))}


_PITCH = (r"\b(?:pitch\w*|semitones?|half[- ]?steps?|whole[- ]?steps?|half[- ]?tones?|whole[- ]?tones?|octaves?|"
          r"transpos\w*|key|cents)\b|(?<!声)音调|音高|半音|八度|变调|升调|降调|调子")
# In Chinese a direction is one character of a longer word: 音高 (pitch) holds 高 (high), 声音调小 holds 音调.
_PITCH_UP = r"\b(?:raise|raising|higher|up|upward\w*|increase|sharpen|high|lift|boost)\b|升高|提高|调高|升|(?<!音)高|上调"
_PITCH_DOWN = r"\b(?:lower|lowering|down|downward\w*|decrease|deeper|drop|flatten|low|reduce)\b|降低|调低|降|(?<!音)低|下调"
_INTERVALS = ((r"semitones?|half[- ]?steps?|half[- ]?tones?|个?半音", 1), (r"whole[- ]?steps?|whole[- ]?tones?", 2),
              (r"octaves?|个?八度", 12), (r"cents?", 0.01))


def _interval(r: Request) -> float | None:
    """The semitones a request names, signed as written: "2 semitones", "-300 cents", "an octave", "by 2"."""
    for unit, size in _INTERVALS:
        if amount := r.find(rf"{N}\s*-?\s*(?:{unit})"):
            return _number(amount) * size
        if r.find(rf"\b(?:an?|one)\s+(?:{unit})\b"):
            return float(size)
    return 12.0 if r.find("八度") else _number(r.find(rf"\bby\s+{N}\b"))


# "Keep the pitch, make it 6 dB quieter": the pitch named only as what stays.
_PITCH_KEPT = (r"\b(?:keep|keeping|preserve|preserving|maintain|maintaining|without changing|same)\s+(?:the\s+|its\s+)?"
               r"(?:same\s+|original\s+)?(?:pitch|key)\b|(?:保持|不改变|不变)(?:原来的)?(?:音调|音高)")


def _pitch(r: Request) -> dict | None:
    interval = _interval(r)
    if not r.find(_PITCH) or (interval is None and r.find(_PITCH_KEPT)):
        return None
    direction, size = _signed(r, interval, _PITCH_UP, _PITCH_DOWN)
    return {"mode": {1: "Raise", -1: "Lower"}.get(direction), "amount": None if size is None else plain(size)}


_SPEED = (r"\b(?:speed\w*|fast\w*|slow\w*|tempo|pace|quick\w*|rate|hurr\w*|rush\w*|time-?stretch\w*|playback)\b|"
          r"语速|速度|倍速|快|慢")
_SLOW = r"\bslow\w*|\bdecelerat\w*|\breduce the (?:speed|tempo|pace)|慢|减速|降低语速"
# Faster, said without a number ("speed this up a little"): the edit check then measures the direction.
_FAST = (r"\b(?:fast\w*|quick\w*|hurr\w*|rush\w*|accelerat\w*|up)\b|\bincrease the (?:speed|tempo|pace)|"
         r"快|加速|提高语速")


def _speed(r: Request) -> dict | None:
    factor = r.find(rf"{N}\s*(?:x{_UNIT_END}|×|times\b|倍)")
    if not (r.find(_SPEED) or factor):
        return None
    slow = r.find(_SLOW)
    percent = r.find(rf"{N}\s*(?:%|percent|per cent)")
    if r.find(r"\bhalf[- ](?:speed|as fast|the speed|tempo|pace)\b|\bby half\b|半速|慢一半|一半的速度"):
        value = 0.5
    elif r.find(r"\b(?:double (?:the )?(?:speed|tempo|pace)|twice as (?:fast|quick)|double[- ]speed)\b|双倍|两倍速"):
        value = 2.0
    elif percent and r.find(rf"{N}\s*(?:%|percent|per cent)\s*(?:of\b|speed|速度|语速)|(?:\bto|\bat|到|为)\s*{N}\s*%"):
        value = _number(percent) / 100
    elif percent:
        value = 1 - _number(percent) / 100 if slow else 1 + _number(percent) / 100
    elif factor:
        value = _number(factor)
        value = 1 / value if slow and value > 1 else value
    else:
        value = None
    direction = "Decrease" if slow else "Increase" if r.find(_FAST) else None
    return {"amount": None if value is None or value <= 0 else plain(value), "mode": direction}


_VOLUME = (r"\b(?:volume|loud\w*|quiet\w*|soft(?:er|ly)?|gain|level|amplif\w*|attenuat\w*|decibels?)\b|"
           rf"(?<![a-z])db{_UNIT_END}|音量|大声|小声|响度|分贝|增益|声音(?:大|小|调大|调小|放大|减小)")
_VOLUME_UP = r"\b(?:louder|increase|raise|boost|up|amplify|higher|more|lift|pump|gain)\b|大|增|升|提高|调高|放大|加大"
_VOLUME_DOWN = (r"\b(?:quieter|softer|decrease|lower|reduce|down|cut|attenuate|less|drop|dim|lessen)\b|小|降|减|"
                r"调低|压低")


def _volume(r: Request) -> dict | None:
    if not r.find(_VOLUME):
        return None
    amount = r.find(rf"{N}\s*(?:db{_UNIT_END}|decibels?|分贝)") or r.find(rf"\bby\s+{N}\b")
    direction, size = _signed(r, _number(amount), _VOLUME_UP, _VOLUME_DOWN)
    return {"mode": {1: "Increase", -1: "Decrease"}.get(direction), "amount": None if size is None else plain(size)}


# ----------------------------------------------------------------------------- edits named by a word

_NONVERBAL = (
    ("breath", r"\bbreath\w*|\binhal\w*|\bexhal\w*|\bgasp\w*|\bsigh\w*|\bpant(?:s|ing)?\b|换气|呼吸|吸气|喘气|喘息|叹气"),
    ("laugh", r"\blaugh\w*|\bgiggl\w*|\bchuckl\w*|\bhaha\w*|笑"),
    ("cough", r"\bcough\w*|\bthroat[- ]?clear\w*|\bclear\w* (?:his|her|their|the|my) throat|咳"),
)
_AT_START = r"\b(?:beginning|begin\w*|start\w*|front|opening|first|intro)\b|开头|开始|最前|前面"
_AT_END = r"\b(?:end|ends|ending|finish\w*|close|closing|last|afterwards|outro|tail)\b|结尾|最后|末尾|结束|后面"


def _nonverbal(r: Request) -> dict | None:
    sound = next((option for option, cue in _NONVERBAL if r.find(cue)), None)
    if sound is None:
        return None
    if r.find(_REMOVE) and not r.find(_ADD):
        return {"mode": "Remove all", "option": sound}
    if not r.find(_ADD):
        return None
    place = _first(r, _AT_START, _AT_END)
    return {"mode": None if place is None else ("Add at the beginning", "Add at the end")[place], "option": sound}


_WHISPER = r"\bwhisper\w*|耳语|悄悄话|悄悄|(?<!换)气声|低语"
_TO_WHISPER = (r"\b(?:into|to|as|like|in)\s+(?:a\s+)?(?:soft\s+|quiet\s+|gentle\s+|hushed\s+)?whisper\b|"
               r"\bwhisper (?:it|this|the)\b|\bwhisper\w* (?:voice|version|tone)|用.{0,4}耳语|悄悄|"
               r"(?:变成|改成|转成|换成|转换成|变为)(?:小声)?耳语")
_TO_SPEECH = (r"\b(?:into|to|as|with|in)\s+(?:a\s+)?(?:normal|regular|ordinary|full|natural|clear|voiced|loud)\b|"
              r"\bun-?whisper\w*|\bout loud\b|\baloud\b|\bnormal (?:voice|speech)|\bspeaking voice|\bvoiced speech|"
              r"\bwhispered (?:speech|voice|audio|recording|clip|words)|\bfrom (?:a )?whisper|正常|大声")


def _whisper(r: Request) -> dict | None:
    if not r.find(_WHISPER):
        return None
    to_speech = r.find(_TO_SPEECH) and not r.find(_TO_WHISPER)
    return {"mode": "Whisper → speech" if to_speech else "Speech → whisper"}


_ACCENT = r"\baccent\w*|\bdialect\w*|\bregional\b|\bbrogue\b|\btwang\w*|口音|方言|乡音|地方腔|腔调"
_NEUTRAL = (r"\b(?:remove|removing|without|neutral\w*|standard|lose|reduce|get rid|less|no|eliminate|correct|fix|"
            r"native|plain|general|clean|strip|soften|tone down|unaccented)\b|去|除|消除|标准|普通话|纠正|减轻|改掉")


def _de_accent(r: Request) -> dict | None:
    return {} if r.find(_ACCENT) and r.find(_NEUTRAL) else None


_EMOTIONS = (
    ("happy", r"\bhapp(?:y|ier|ily|iness)\b|\bjoy\w*|\bcheer\w*|\bglad\b|\bdelight\w*|\bupbeat\b|\bmerr(?:y|ily)\b|"
              r"\bjolly\b|开心|高兴|快乐|愉快|欢快|喜悦"),
    ("angry", r"\bangr(?:y|ier|ily)\b|\banger\b|\bmad\b|\bfurious\w*|\brage\b|\benraged\b|\birritat\w*|\bannoyed\b|"
              r"愤怒|生气|恼火|气愤|发火"),
    ("sad", r"\bsad(?:der|ly|ness)?\b|\bsorrow\w*|\bunhappy\b|\bmelanchol\w*|\bgloom\w*|\bdepress\w*|\bmournful\w*|"
            r"\btearful\w*|\bheartbroken\b|悲伤|难过|伤心|忧伤|沮丧|哀伤"),
    ("fearful", r"\bfear\w*|\bscared\b|\bafraid\b|\bfrighten\w*|\bterrif\w*|\banxious\w*|\bnervous\w*|\bpanic\w*|"
                r"\bworried\b|恐惧|害怕|惊恐|紧张|畏惧"),
    ("surprised", r"\bsurpris\w*|\bastonish\w*|\bamazed?\b|\bamazement\b|\bshocked\b|\bstunned\b|惊讶|吃惊|惊奇|诧异|震惊"),
    ("disgusted", r"\bdisgust\w*|\brevolted\b|\bgrossed out\b|\brepuls\w*|厌恶|恶心|嫌弃|反感"),
    ("calm", r"\bcalm\w*|\brelax\w*|\bpeaceful\w*|\bserene\w*|\bsoothing\b|\btranquil\w*|\bcomposed\b|平静|冷静|放松|淡定|"
             r"沉稳|平和"),
    ("excited", r"\bexcit\w*|\benthusias\w*|\bthrilled\b|\benergetic\w*|\beager\w*|\bpumped\b|\bhyped\b|兴奋|激动|热情|"
                r"亢奋"),
)
# An emotion word names the task only beside a word about how the speech comes across ("Add happy
# music" asks for music); an adverb ("angrily") or a comparative ("sadder") needs nothing more.
_EMOTION_CONTEXT = (r"\b(?:emotion\w*|mood|feel\w*|tone|sound\w*|more|less|make|makes|making|say|said|speak\w*|"
                    r"read|deliver\w*|become|turn|change|convert|version|way|voice|like|as if|express\w*)\b|"
                    r"情感|情绪|语气|感情|听起来|变得|变成|改成|转变|转换|带着|用|更|一点|些")


def _emotion(r: Request) -> dict | None:
    found = [(m.start(), m.group(0), option) for option, cue in _EMOTIONS if (m := r.find(cue))]
    if not found:
        return None
    _, word, option = min(found)
    return {"option": option} if re.search(r"(?:ly|ier|der)$", word) or r.find(_EMOTION_CONTEXT) else None


_PERSONA = (r"(?:man|men|woman|women|child|children|kid|girl|boy|lady|gentleman|guy|robot|old|elderly|young|"
            r"teen\w*|baby|male|female|chipmunk|cartoon|monster|alien|giant|announcer|narrator|singer|person|"
            r"someone|grand\w+)\b")
_TIMBRE = (r"\btimbre\b|\bvoice\b|\bvocal (?:quality|colou?r|character)\b|\bspeaker identity\b|"
           rf"\b(?:sound(?:s|ing)? like|into|to) (?:an?|the|some)\s+(?:\w+\s+)?{_PERSONA}|音色|声线|嗓音|声音")
_CHANGE = (r"\b(?:change|changing|make|turn|convert|transform|swap|switch|replace|give|into|modify|alter|become|"
           r"sound like)\b|换成|变成|改成|修改|改为|变为|转换|换|变|像")
_AS = (r"(?:\bto\b|\binto\b|\blike\b|:|\bwith\b|\bgive (?:it|this|the \w+|him|her|them)\b|换成|变成|改成|改为|变为|"
       r"修改为|像)\s*(.+?)[.!]*$")


def _timbre(r: Request) -> dict | None:
    if not (r.find(_TIMBRE) and r.find(_CHANGE)):
        return None
    if r.quotes:
        return {"original": r.quotes[0].rstrip(".,;:!?")}
    described = r.find(_AS)
    return {"original": described.group(1).strip(" ,") if described else None}


DETECTORS: tuple[tuple[str, Callable[[Request], dict | None]], ...] = (
    ("target_speaker", _target_speaker),
    ("lyric_edit", _lyric_edit),
    ("content_edit", _content_edit),
    ("zero_shot_tts", _zero_shot_tts),
    ("instruct_tts", _instruct_tts),
    ("enhance", _enhance),
    ("trim_silence", _trim_silence),
    ("sine_tone", _sine_tone),
    ("pitch", _pitch),
    ("speed", _speed),
    ("whisper", _whisper),
    ("volume", _volume),
    ("music_separation", _music_separation),
    ("speech_separation", _speech_separation),
    ("nonverbal", _nonverbal),
    ("de_accent", _de_accent),
    ("emotion", _emotion),
    ("timbre", _timbre),
)
