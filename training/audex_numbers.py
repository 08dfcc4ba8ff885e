"""Numbers said in words, for Audex-Tiny's captions and its tokenizer.

Audex-Tiny copies a caption's digits into the event codec's slots, so a number must reach it as
digits whatever way it was typed. The tokenizer's normalizer (saved in ``tokenizer.json``, so vLLM
applies it too) rewrites English number words ("four hundred and forty", "twelve hundred",
"one and a half"), Chinese numerals ("四百四十", "一点五", "两") and kHz ("1.2 kHz") as figures
before it splits digits; :func:`english_number` and :func:`chinese_number` say a number the ways
the caption grammar uses. Each rule replaces a fixed text (the normalizer has no back-references),
so a number word becomes its digit *at its place*: "four hundred and " becomes "4" when tens
follow, "40" when only units follow, "400" when nothing does.
"""

from __future__ import annotations

from tokenizers import Regex, normalizers

UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
CHINESE_DIGITS = "一二三四五六七八九"

_L, _R = r"(?<![a-z])", r"(?![a-z])"
_UNIT = "(?:" + "|".join(UNITS) + ")" + _R
_TWO_PLACES = "(?:" + "|".join(TENS + TEENS) + ")" + _R


def english_number(n: int, *, use_and: bool = True, teen_hundreds: bool = False) -> str:
    """``n`` (0–9999) in English words: 1200 as "one thousand two hundred" (or "twelve hundred"
    with ``teen_hundreds``), 440 as "four hundred and forty" (or "four hundred forty")."""
    if not 0 <= n <= 9999:
        raise ValueError(f"{n} is not a number from 0 to 9999")
    if n == 0:
        return "zero"
    words = []
    thousands, hundreds, rest = n // 1000, n // 100 % 10, n % 100
    if teen_hundreds and thousands == 1 and hundreds:
        words += [TEENS[hundreds], "hundred"]
    else:
        if thousands:
            words += [UNITS[thousands - 1], "thousand"]
        if hundreds:
            words += [UNITS[hundreds - 1], "hundred"]
    if rest and words and use_and:
        words.append("and")
    if 10 <= rest < 20:
        words.append(TEENS[rest - 10])
    elif rest:
        tens, units = divmod(rest, 10)
        words += [w for w in (TENS[tens - 2] if tens else "", UNITS[units - 1] if units else "") if w]
    return " ".join(words)


def chinese_number(n: int) -> str:
    """``n`` (0–9999) in Chinese numerals, the standard way: 440 四百四十, 1050 一千零五十, 15 十五."""
    if not 0 <= n <= 9999:
        raise ValueError(f"{n} is not a number from 0 to 9999")
    if n == 0:
        return "零"
    out, gap = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit:
            out += ("零" if gap and out else "") + ("" if unit == "十" and digit == 1 and not out else
                                                   CHINESE_DIGITS[digit - 1]) + unit
            gap = False
        elif out:
            gap = True
    return out


def _replace(pattern: str, content: str) -> normalizers.Replace:
    return normalizers.Replace(Regex(pattern), content)


def _english_rules() -> list[normalizers.Replace]:
    rules = []
    for d, unit in enumerate(UNITS, 1):  # thousands first: they look ahead at the raw hundreds
        head = _L + ("(?:a|one)" if d == 1 else unit) + r" thousand,?(?: and)? ?"
        rules += [_replace(head + "(?=" + _UNIT[:-len(_R)] + " hundred" + _R + ")", str(d)),
                  _replace(head + "(?=" + _TWO_PLACES + ")", f"{d}0"),
                  _replace(head + "(?=" + _UNIT + ")", f"{d}00"),
                  _replace(_L + ("(?:a|one)" if d == 1 else unit) + " thousand" + _R, f"{d}000")]
    for value, word in [*enumerate(UNITS, 1), *enumerate(TEENS, 10)]:
        head = _L + word + r" hundred(?: and)?[ -]"
        rules += [_replace(head + "(?=" + _TWO_PLACES + ")", str(value)),
                  _replace(head + "(?=" + _UNIT + ")", f"{value}0"),
                  _replace(_L + word + " hundred" + _R, f"{value}00")]
    for d, word in enumerate(TENS, 2):
        rules += [_replace(_L + word + "[ -](?=" + _UNIT + ")", str(d)), _replace(_L + word + _R, f"{d}0")]
    rules += [_replace(_L + word + _R, str(value)) for value, word in enumerate(TEENS, 10)]
    rules += [_replace(_L + word + _R, str(d)) for d, word in enumerate(UNITS, 1)]
    rules += [_replace(_L + "zero" + _R, "0"), _replace(r"(?<=\d) point (?=\d)", "."),
              _replace(r"(?<=\d) and a half" + _R, ".5"), _replace(_L + "half a second" + _R, "0.5 seconds")]
    return rules


def _chinese_rules() -> list[normalizers.Replace]:
    digit = "[" + CHINESE_DIGITS + "两]"
    rules = []
    for d, char in enumerate(CHINESE_DIGITS, 1):
        chars = f"[{char}两]" if d == 2 else char
        rules += [_replace(chars + "千(?=" + digit + "百)", str(d)), _replace(chars + "千零(?=" + digit + "十)", f"{d}0"),
                  _replace(chars + "千零(?=" + digit + ")", f"{d}00"), _replace(chars + "千", f"{d}000")]
    for d, char in enumerate(CHINESE_DIGITS, 1):
        chars = f"[{char}两]" if d == 2 else char
        rules += [_replace(chars + "百(?=" + digit + "十)", str(d)), _replace(chars + "百零(?=" + digit + ")", f"{d}0"),
                  _replace(chars + "百", f"{d}00")]
    for d, char in enumerate(CHINESE_DIGITS, 1):
        rules += [_replace(char + "十(?=" + digit + ")", str(d)), _replace(char + "十", f"{d}0")]
    rules += [_replace("十(?=" + digit + ")", "1"), _replace("十", "10"), _replace("两", "2"), _replace("零", "0")]
    rules += [_replace(char, str(d)) for d, char in enumerate(CHINESE_DIGITS, 1)]
    rules += [_replace(r"(?<=\d)点(?=\d)", "."), _replace("半秒", "0.5秒")]
    return rules


def _khz_rules() -> list[normalizers.Replace]:
    """"1.2 kHz" -> "1200 hz", "2 kilohertz" -> "2000 hz" (one decimal at most: the codec's Hz are whole)."""
    khz = r" ?(?:khz|kilohertz)" + _R
    return [_replace(r"(?<![\d.]\d)(?<=\d)\.(?=\d" + khz + ")", ""),
            _replace(r"(?<![\d.]\d\d)(?<=\d\d)(?=" + khz + ")", "00"),
            _replace(r"(?<![\d.]\d)(?<=\d)(?=" + khz + ")", "000"), _replace(r"(?<=\d)" + khz, " hz")]


def number_normalizers() -> list[normalizers.Normalizer]:
    """The rules, in order, for a lower-cased NFKC caption: Chinese numerals, English number words,
    kHz; the zero-padding of three-digit numbers comes after them."""
    return [*_chinese_rules(), *_english_rules(), *_khz_rules()]
