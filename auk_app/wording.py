"""What people type, made regular for the task recogniser: one kind of quote, ASCII punctuation,
numbers as digits.

* Unicode NFKC turns full-width letters, digits and punctuation into ASCII (，→ , ：→ :); the
  ideographic full stop and comma become . and , too.
* Every double quote (“ ” „ 「 」 『 』 « » ＂) becomes ", every single one (‘ ’ ‚) becomes ';
  a quoted span is what lies between a pair, and a ' inside a word ("it's") opens none.
* Number words become digits where they are amounts (before a unit, or after "by", "to", "at",
  "of"): "five dB" 5 dB, "twenty-one" 21, "one and a half" 1.5, "one point five" 1.5; Chinese
  numerals before a unit (两个半音, 一点五倍, 十二分贝) and 百分之N (N %). The caller keeps quotes out.
"""

from __future__ import annotations

import re
import unicodedata

_DOUBLE_QUOTES = "“”„‟「」『』«»＂〝〞"
_SINGLE_QUOTES = "‘’‚‛"
CJK = "\u3400-\u9fff\uf900-\ufaff"
_TRANSLATE = str.maketrans({**{q: '"' for q in _DOUBLE_QUOTES}, **{q: "'" for q in _SINGLE_QUOTES},
                            "。": ".", "、": ",", "｡": ".", "−": "-", "–": "-", "—": " - "})
# A quoted span: "…", or '…' opened where no letter precedes (a Chinese character may: 删掉'at seven')
# and closed where none follows; inside it, a ' before a letter is an apostrophe ('don't').
_QUOTED = re.compile(rf'"([^"]+)"|(?<![^\W{CJK}])\'((?:[^\']|\'(?=[a-z]))+?)\'(?![a-z])', re.IGNORECASE)

_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_WORD_VALUES = {word: n for n, word in enumerate(_UNITS)} | {word: 20 + 10 * n for n, word in enumerate(_TENS)}
_NUMBER_WORD = r"(?:" + "|".join(sorted(_WORD_VALUES, key=len, reverse=True)) + r"|hundred|thousand)"
_ENGLISH_NUMBER = re.compile(
    rf"\b(?P<whole>{_NUMBER_WORD}(?:(?:\s+|-|\s+and\s+)(?!and\b){_NUMBER_WORD})*|\d+)"
    rf"(?P<point>\s+point(?:\s+(?:{'|'.join(_UNITS[:10])}))+)?(?P<half>\s+and\s+a\s+half)?\b", re.IGNORECASE)
# English number words become digits only as amounts: before a unit, or after "by", "to", "at" or
# "of" ("by two"); elsewhere "one" is mostly a pronoun ("the one who speaks first").
_AMOUNT_UNIT = re.compile(r"\s*-?\s*(?:db\b|decibels?|semitones?|half[- ]?(?:steps?|tones?)|whole[- ]?(?:steps?|tones?)"
                          r"|octaves?|cents?|x\b|×|times|percent|per ?cent|%|hz\b|hertz|khz|kilohertz|notes?|keys?)",
                          re.IGNORECASE)
_AMOUNT_BEFORE = re.compile(r"\b(?:by|to|at|of)\s+$", re.IGNORECASE)

_ZH_DIGITS = {c: n for n, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_ZH_NUMERAL = "零〇一二两三四五六七八九十百"
# Chinese numerals become digits only before a unit: 一 also means "a", 一点 "a little", 第二个 "the second".
_ZH_UNIT = r"(?=\s*个?(?:半音|八度|分贝|倍|赫兹|db|hz|x|%))"
_ZH_NUMBER = re.compile(rf"[{_ZH_NUMERAL}]+(?:点[{_ZH_NUMERAL}]+)?{_ZH_UNIT}", re.IGNORECASE)
_ZH_PERCENT = re.compile(rf"百分之([{_ZH_NUMERAL}]+|\d+(?:\.\d+)?)")


def normalise(text: str) -> str:
    """NFKC, one kind of quote, ASCII punctuation, single spaces."""
    text = unicodedata.normalize("NFKC", text or "").translate(_TRANSLATE)
    return " ".join(text.split())


def quoted_spans(text: str) -> list[re.Match]:
    """The quoted spans of normalised ``text``, in order; group 1 or 2 holds a span's words."""
    return list(_QUOTED.finditer(text))


def digits(text: str) -> str:
    """``text`` with its number words as digits (see the module's docstring); case kept."""
    text = _ZH_PERCENT.sub(lambda m: f"{plain(zh_number(m.group(1)))}%", text)
    text = _ZH_NUMBER.sub(lambda m: plain(zh_number(m.group(0))), text)
    return _ENGLISH_NUMBER.sub(_english_digits, text)


def _english_digits(match: re.Match) -> str:
    whole, text = match.group("whole"), match.string
    amount = _AMOUNT_UNIT.match(text, match.end()) or _AMOUNT_BEFORE.search(text[:match.start()])
    if not amount or whole.isdigit() and not match.group("half"):
        return match.group(0)
    value = float(whole) if whole.isdigit() else _english_whole(whole)
    if match.group("point"):
        decimals = "".join(str(_WORD_VALUES[w.lower()]) for w in match.group("point").split()[1:])
        value += float("0." + decimals)
    if match.group("half"):
        value += 0.5
    return plain(value)


def _english_whole(words: str) -> float:
    """"twenty-one" 21, "three hundred and forty" 340, "two thousand" 2000."""
    total, current = 0, 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total, current = total + max(current, 1) * 1000, 0
        elif word != "and":
            current += _WORD_VALUES[word]
    return float(total + current)


def zh_number(text: str) -> float:
    """Chinese numerals up to 999 with an optional 点 decimal part (两, 十二, 一百二十, 一点五), or digits."""
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    whole, _, decimal = text.partition("点")
    value = 0.0
    if whole:
        hundreds, _, rest = whole.rpartition("百")
        tens, _, ones = rest.rpartition("十")
        value = (_zh_digit(hundreds) * 100 if "百" in whole else 0) + (
            (_zh_digit(tens) if tens else 1) * 10 if "十" in rest else 0) + _zh_digit(ones)
    if decimal:
        value += float("0." + "".join(str(_ZH_DIGITS[c]) for c in decimal))
    return value


def _zh_digit(text: str) -> int:
    """One Chinese digit (an empty string is 0; 零 inside 一百零五 is skipped)."""
    text = text.replace("零", "").replace("〇", "")
    return _ZH_DIGITS[text] if text else 0


def plain(value: float) -> str:
    """A number as people write it, to three decimals: 5.0 → "5", 1.5 → "1.5", 2/3 → "0.667"."""
    value = round(value, 3)
    return str(int(value)) if value == int(value) else f"{value:g}"
