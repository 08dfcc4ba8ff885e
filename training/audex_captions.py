"""How Audex-Tiny's captions say things: templates per family and language, and the words that fill them.

A caption is a template (a word order) filled with words drawn for it: a noun among synonyms
("beep", "sine tone", "note", …), optional adjectives ("pure", "clean"; they change nothing), a
level word ("quiet", "loud"; it changes the level), and numbers said in figures, in words ("four
hundred and forty hertz", "one and a half seconds") or in kHz, in English or Chinese. Each family
has *training* and *held-out* templates: a held-out template is a word order training never uses,
often with words it never saw (the tokenizer reads those as ``<unk>``), so the benchmark measures
wordings a new user would type, not only values. Placeholders: ``{a}`` an article with an optional
level word and adjective ("a quiet pure "), ``{lv}`` a level word alone ("quiet ", "轻柔的", or
nothing), ``{noun}``, ``{f}`` (``{f0}``, ``{f1}``) a frequency, ``{d}`` a length, ``{n}`` a count
with ``{things}`` (``{thing}`` one), ``{times}`` ("twice", "3 times"), ``{s}`` a spacing, ``{c}`` a
noise, ``{verb}`` a glide's or a click's verb.
"""

from __future__ import annotations

import numpy as np

from auk_app.demo.event_codec import BROWN, LOUD, NORMAL, PINK, SOFT, WHITE
from training.audex_numbers import TEENS, TENS, UNITS, chinese_number, english_number

CHINESE_SHARE = 0.2

LEVEL_WORDS = {"en": {SOFT: ("quiet", "soft", "faint", "gentle"), LOUD: ("loud", "strong", "powerful")},
               "zh": {SOFT: ("轻柔的", "小声的", "安静的", "轻轻的"), LOUD: ("响亮的", "大声的", "很响的")}}
ADJECTIVES = {
    "tone": ("pure", "clean", "simple", "clear", "steady", "smooth", "plain", "single", "electronic", "bright"),
    "sweep": ("smooth", "clean", "simple", "steady", "continuous", "electronic"),
    "siren": ("electronic", "simple", "classic", "synthetic"),
}
NOUNS = {
    "en": {"tone": ("beep", "tone", "sine tone", "sine wave", "note", "pure tone", "test tone", "bleep", "hum",
                    "whistle", "sound", "pitch", "ping"),
           "sweep": ("sweep", "glide", "chirp", "slide", "pitch glide", "frequency sweep", "sine sweep", "tone sweep",
                     "pitch sweep", "ramp"),
           "siren": ("siren", "wailing siren", "police siren", "alarm siren", "wail", "siren wail", "alarm")},
    "zh": {"tone": ("提示音", "音", "音调", "纯音", "正弦波", "蜂鸣声", "嘀声", "哔声", "单音"),
           "sweep": ("扫频音", "滑音", "扫频", "啁啾声"),
           "siren": ("警笛声", "警报声", "警笛", "鸣笛声")},
}
GLIDE_VERBS = {"up": ("rising", "climbing", "going up"), "down": ("falling", "dropping", "going down"),
               "any": ("gliding", "sweeping", "sliding", "moving", "going", "bending")}
CLICK_VERBS = {0: ("click", "clicking", "tap", "tapping"), 1: ("knock", "knocking")}
CLICK_WORDS = {"en": {0: ("click", "tick", "tap"), 1: ("knock", "thump")},
               "zh": {0: ("咔哒声", "咔嗒声", "点击声", "嘀嗒声"), 1: ("敲门声", "敲击声", "咚咚声")}}
NOISE_WORDS = {"en": {WHITE: ("white noise", "white noise", "white noise", "hiss", "static"),
                      PINK: ("pink noise",), BROWN: ("brown noise", "brown noise", "brownian noise", "red noise")},
               "zh": {WHITE: ("白噪声", "白噪音"), PINK: ("粉红噪声", "粉红噪音", "粉噪声"),
                      BROWN: ("褐噪声", "棕噪声", "布朗噪声")}}

# (training templates, held-out templates) per family and language; noise by shape (0 steady,
# 1 fading out, 2 fading in). Templates without {d} (or {s}) leave the length (spacing) to the
# family's default.
TEMPLATES = {
    ("tone", "en"): ((
        "{a}{f} {noun} lasting {d}", "{a}{noun} at {f} for {d}", "{d} of {a}{f} {noun}", "{noun} at {f} for {d}",
        "{a}{noun} of {f}, {d} long", "play {a}{f} {noun} for {d}", "{a}{noun} at {f} that lasts {d}",
        "{a}{f} {noun}, {d}", "{a}{noun} of {d} at {f}", "{f} {noun}, {d}", "{a}{f} {noun} for {d}",
        "{a}{noun} with a frequency of {f} and a duration of {d}", "{a}{f} {noun}", "{a}{noun} at {f}",
        "{a}{d} {f} {noun}", "for {d}, {a}{noun} at {f}", "{a}{noun}, {f}, {d}", "{a}{noun} at {f}, {d} long",
    ), (
        "{a}{noun} pitched at {f}, held for {d}", "i want {a}{f} {noun} that goes on for {d}",
        "{d} long {noun} at {f}", "{a}{noun} sounding at {f} for {d}", "{f}, {d}, {noun}",
    )),
    ("tone", "zh"): ((
        "一个{lv}{f}的{noun}，持续{d}", "{f}的{lv}{noun}，{d}", "播放{d}的{f}{noun}", "{lv}{noun}，频率{f}，时长{d}",
        "生成一段{f}的{noun}，{d}长", "{d}的{f}{noun}", "{f}{noun}", "一个{f}的{noun}",
    ), (
        "请生成频率为{f}的{noun}，长度{d}", "{f}{noun}{d}",
    )),
    ("sweep", "en"): ((
        "{a}{noun} from {f0} to {f1} over {d}", "{a}tone {verb} from {f0} to {f1} in {d}",
        "{a}{noun} from {f0} to {f1}, {d} long", "{a}{noun} from {f0} to {f1} lasting {d}",
        "{d} {noun} from {f0} to {f1}", "{a}{noun} starting at {f0} and ending at {f1}, {d}",
        "{noun} {f0} to {f1} in {d}", "{a}{noun} from {f0} to {f1}", "over {d}, {a}tone {verb} from {f0} to {f1}",
        "{a}{f0} to {f1} {noun}, {d}", "{a}{noun} {verb} from {f0} to {f1} for {d}",
    ), (
        "{a}tone that glides from {f0} to {f1}, {d} long", "{a}{d} {noun} from {f0} to {f1}",
        "{a}{noun} that begins at {f0} and ends at {f1} after {d}", "{a}{noun}, {f0} to {f1}, taking {d}",
    )),
    ("sweep", "zh"): ((
        "从{f0}滑到{f1}的{noun}，持续{d}", "{d}内从{f0}变到{f1}的{lv}{noun}", "一段{f0}到{f1}的{noun}，{d}",
        "频率从{f0}变到{f1}的{noun}，时长{d}", "从{f0}到{f1}的{noun}",
    ), (
        "{noun}由{f0}滑向{f1}，共{d}",
    )),
    ("siren", "en"): ((
        "{a}{noun} between {f0} and {f1}, {d} long", "{a}{noun} going from {f0} to {f1} and back over {d}",
        "{a}{noun} wailing between {f0} and {f1} for {d}", "{a}{noun} rising and falling between {f0} and {f1}, {d}",
        "{a}{noun} from {f0} to {f1} and back, {d}", "{a}{noun} between {f0} and {f1}",
        "{d} of {a}{noun} between {f0} and {f1}", "{a}{noun} oscillating between {f0} and {f1} over {d}",
        "{a}{noun} sweeping between {f0} and {f1}",
    ), (
        "{a}{d} {noun} between {f0} and {f1}", "{a}{noun} sweeping from {f0} to {f1}",
        "{a}{noun} that swings between {f0} and {f1} for {d}",
    )),
    ("siren", "zh"): ((
        "在{f0}和{f1}之间来回的{noun}，持续{d}", "{noun}，{f0}到{f1}，{d}", "{d}的{lv}{noun}，频率在{f0}与{f1}之间",
        "{f0}到{f1}的{noun}",
    ), (
        "一段{f0}至{f1}的{noun}，{d}",
    )),
    ("clicks", "en"): ((
        "{n} {lv}{things}", "{n} {things}, {s} apart", "{n} {lv}{things} spaced {s} apart", "a series of {n} {things}",
        "the sound of {n} {things}", "{n} short {things}", "{n} {things} on a door", "{n} {lv}{things} on wood",
        "{n} {things} every {s}", "{n} {things} with {s} between them", "{n} {things} at {s} intervals",
        "{verb} {times}", "{lv}{verb} {times}",
    ), (
        "exactly {n} {things}", "a series of {n} {lv}{things} spaced {s} apart", "{n} {things} in a row",
        "someone {verb} {times}", "{n} {things} separated by {s}",
    )),
    ("clicks", "zh"): ((
        "{n}下{lv}{things}", "{n}声{things}", "{n}次{things}，间隔{s}", "{n}下{things}，每隔{s}一下", "一串{n}声{things}",
    ), (
        "连续{n}声{things}，间隔{s}",
    )),
    ("noise0", "en"): ((
        "{d} of {c}", "a burst of {lv}{c}, {d} long", "{c} for {d}", "steady {c}, {d}", "{a}{c} burst lasting {d}",
        "constant {c} for {d}", "{a}{c}", "{c} lasting {d}",
    ), (
        "a steady burst of {c} for {d}", "{lv}{c} that stays steady for {d}",
    )),
    ("noise1", "en"): ((
        "{c} fading out over {d}", "a burst of {c} that fades away", "{lv}{c} fading out",
        "{c} that fades out, {d} long",
        "{c} fade out over {d}", "{c} dying away over {d}", "{c} getting quieter over {d}", "{c} decaying over {d}",
    ), (
        "{c} slowly fading out, {d} long", "{c} that fades away over {d}", "{c} that dies down over {d}",
    )),
    ("noise2", "en"): ((
        "{c} fading in over {d}", "{c} that fades in", "{lv}{c} fading in, {d}", "{c} fade in lasting {d}",
        "{c} getting louder over {d}", "{c} swelling over {d}", "{c} growing over {d}",
    ), (
        "{c} slowly fading in, {d} long", "{c} that gradually gets louder over {d}",
    )),
    ("noise0", "zh"): (("{d}的{lv}{c}", "持续{d}的{c}", "一段平稳的{c}，{d}", "{c}"), ("{c}，不变，持续{d}",)),
    ("noise1", "zh"): (("逐渐消失的{c}，{d}", "{c}渐弱，持续{d}", "{c}慢慢淡出", "{lv}{c}淡出，{d}"), ("{c}越来越小，{d}",)),
    ("noise2", "zh"): (("逐渐增强的{c}", "{c}渐强，{d}", "{c}慢慢淡入，持续{d}", "{lv}{c}淡入"), ("{c}越来越大，{d}",)),
    ("join", "en"): ((
        "{a}, then {b}", "{a} followed by {b}", "first {a}, then {b}", "{a} and then {b}", "{a}. then {b}",
        "{a}, next {b}", "start with {a}, then {b}",
    ), (
        "{a}, and after that {b}", "first {a} followed by {b}", "{a}; afterwards {b}",
    )),
    ("join", "zh"): (("{a}，然后{b}", "先{a}，再{b}", "{a}，接着{b}", "{a}，之后是{b}"), ("{a}，随后{b}",)),
}
PREFIXES = {("en", False): ("the sound of ", "generate ", "make ", "play ", "create "),
            ("en", True): ("please make ", "give me ", "i need "),
            ("zh", False): ("生成", "播放", "请生成"), ("zh", True): ("我想要", "给我")}
PREFIX_RATE = 0.15
# Words no training template uses, dropped into some training captions: the tokenizer leaves them
# out of its vocabulary, so they teach the LM to pass over an <unk>, as it must for a new word.
OUT_OF_VOCABULARY = ("very", "nice", "really", "little", "cool", "weird", "digital", "retro", "vintage", "analog",
                     "funny", "strange", "old", "typical", "basic", "某", "种", "特", "别", "酷", "怪")
OOV_RATE = 0.08
# Words replaced by an out-of-vocabulary one in some training captions (word dropout): a new
# user's word in place of a known one ("begins at" for "starting at", "越来越小" for "渐弱") reaches
# the LM as <unk>, and it must then read the caption from what is left (the noun, the numbers and
# their order), not copy the wrong slots.
REPLACE_RATE = 0.15
NUMBER_PARTS = {*UNITS, *TEENS, *TENS, "zero", "hundred", "thousand", "and", "point", "half", "a"}
# Units stay: a number's unit says which slots it fills.
UNIT_WORDS = {"hz", "hertz", "khz", "kilohertz", "s", "sec", "second", "seconds", "ms", "milliseconds"}
KEPT_CHINESE = set("零一二三四五六七八九十百千点两半赫兹秒毫")


def pick(rng: np.random.Generator, options) -> str:
    return str(options[int(rng.integers(len(options)))])


def templates(key: tuple[str, str], held: bool) -> tuple[str, ...]:
    return TEMPLATES[key][1 if held else 0]


def say_hz(f: int, rng: np.random.Generator, lang: str, *, unit: bool = True) -> str:
    """A frequency in figures, words or kHz, with a unit (unless ``unit`` is False)."""
    r = rng.random()
    if lang == "zh":
        number = chinese_number(f) if r < 0.15 else str(f)
        return number + (pick(rng, ("赫兹", "赫兹", "Hz", " Hz", "hz")) if unit else "")
    if r < 0.15:
        number = english_number(f, use_and=rng.random() < 0.6, teen_hundreds=f % 100 == 0 and rng.random() < 0.5)
        return number + (pick(rng, (" hertz", " Hz", " hz")) if unit else "")
    if r < 0.22 and f >= 1000 and f % 100 == 0 and unit:
        return f"{f / 1000:g} " + pick(rng, ("kHz", "khz", "kilohertz"))
    return str(f) + (pick(rng, (" Hz", " hz", " hertz", "Hz", " Hz")) if unit else "")


def say_seconds(s: float, rng: np.random.Generator, lang: str) -> str:
    """A length (in tenths of a second, the event codec's resolution) in figures or words."""
    ms, whole, tenth = round(s * 1000), int(s), round(s * 10) % 10
    if lang == "zh":
        options = [f"{s:g}秒", f"{s:g}秒", f"{ms}毫秒"]
        options += [chinese_number(whole) + ("点" + chinese_number(tenth) if tenth else "") + "秒"]
        options += ["半秒"] if s == 0.5 else ["两秒"] if s == 2.0 else []
        return pick(rng, options)
    options = [f"{s:g} seconds", f"{s:g} s", f"{s:g} sec", f"{s:g}s"]
    if s < 1.0 or rng.random() < 0.3:
        options += [f"{ms} ms", f"{ms} milliseconds", f"{ms}ms"]
    if rng.random() < 0.25:
        if tenth == 5 and whole:
            options += [f"{english_number(whole)} and a half seconds"]
        elif tenth:
            options += [f"{english_number(whole)} point {english_number(tenth)} seconds"]
        else:
            options += [f"{english_number(whole)} second" + ("s" if whole > 1 else "")]
        options += {0.5: ["half a second"], 1.0: ["a second"]}.get(s, [])
    return pick(rng, options)


def say_count(n: int, rng: np.random.Generator, lang: str) -> str:
    if lang == "zh":
        return ("两" if n == 2 and rng.random() < 0.5 else chinese_number(n)) if rng.random() < 0.7 else str(n)
    if n == 1:
        return pick(rng, ("a", "one", "a single", "1"))
    return english_number(n) if rng.random() < 0.7 else str(n)


def say_times(n: int, rng: np.random.Generator) -> str:
    return {1: "once", 2: "twice"}.get(n) or f"{say_count(n, rng, 'en')} times"


def article(level: int, family: str, rng: np.random.Generator) -> str:
    """``{a}``: "a ", then an optional level word (when the level is not normal) and adjective."""
    words = ["a"]
    if level != NORMAL:
        words.append(pick(rng, LEVEL_WORDS["en"][level]))
    if family in ADJECTIVES and rng.random() < 0.35:
        words.append(pick(rng, ADJECTIVES[family]))
    return " ".join(words) + " "


def level_word(level: int, lang: str, rng: np.random.Generator) -> str:
    """``{lv}``: a level word (English with its space), or nothing at the normal level."""
    if level == NORMAL:
        return ""
    return pick(rng, LEVEL_WORDS[lang][level]) + (" " if lang == "en" else "")


def _with_unknown_word(text: str, rng: np.random.Generator) -> str:
    """``text`` with an out-of-vocabulary word put between two words that are not parts of a number
    (inside "four hundred and forty" it would change the number the tokenizer writes)."""
    words = text.split()
    numeric = [any(c.isdigit() for c in w) or w.strip(",.") in NUMBER_PARTS for w in words]
    places = [i for i in range(len(words) + 1) if not (i and numeric[i - 1]) and not (i < len(words) and numeric[i])]
    if places:
        words.insert(int(rng.choice(places)), pick(rng, OUT_OF_VOCABULARY))
    return " ".join(words)


def _replaceable(word: str) -> bool:
    bare = word.strip(",.;").lower()
    return bool(bare) and not any(c.isdigit() for c in bare) and bare not in NUMBER_PARTS | UNIT_WORDS


def _with_word_replaced(text: str, lang: str, rng: np.random.Generator) -> str:
    """``text`` with one word (a Chinese character) that is not part of a number or its unit
    replaced by an out-of-vocabulary one."""
    if lang == "zh":
        places = [i for i, c in enumerate(text) if "\u4e00" <= c <= "\u9fff" and c not in KEPT_CHINESE]
        if not places:
            return text
        i = int(rng.choice(places))
        return text[:i] + pick(rng, [w for w in OUT_OF_VOCABULARY if not w.isascii()]) + text[i + 1:]
    words = text.split()
    places = [i for i, w in enumerate(words) if _replaceable(w)]
    if places:
        i = int(rng.choice(places))
        words[i] = pick(rng, [w for w in OUT_OF_VOCABULARY if w.isascii()]) + words[i][len(words[i].rstrip(",.;")):]
    return " ".join(words)


def finish(text: str, lang: str, held: bool, rng: np.random.Generator) -> str:
    """Spacing, "an", an optional prefix, out-of-vocabulary words in place of known ones or
    beside them (training only), capitals, a stop."""
    text = " ".join(text.split())
    if rng.random() < PREFIX_RATE:
        text = pick(rng, PREFIXES[lang, held]) + text
    if not held and rng.random() < REPLACE_RATE:
        text = _with_word_replaced(text, lang, rng)
    if lang == "en":
        text = " ".join("an" if w == "a" and nxt[:1] in "aeiou8" and rng.random() < 0.7 else w
                        for w, nxt in zip(text.split(), [*text.split()[1:], ""], strict=True))
        if not held and rng.random() < OOV_RATE:
            text = _with_unknown_word(text, rng)
    if rng.random() < 0.5:
        text = text[0].upper() + text[1:]
    if rng.random() < 0.5:
        text += "。" if lang == "zh" else "."
    return text
