"""The words of a caption that Audex-Tiny does not know, and the warning that names them.

Audex-Tiny's tokenizer holds the words of its training captions only; any other word becomes
``<unk>``, which the model passes over, so "Rain falling on a tin roof." reaches it as
"<unk> falling on a <unk> <unk>" and comes out as some other sound. Which words those are is read
from the shipped tokenizer itself (``tokenizer.json``: its normalizer writes number words as
figures, so "four hundred and forty" is known), named as the caption typed them, once each, in
order; touching unknown characters (Chinese) are one word. Stop words are not named: they carry
nothing the demo could make.
"""

from __future__ import annotations

import functools
import string
from pathlib import Path

from tokenizers import Tokenizer

from auk_app.demo.audex_snapshot import shared_demo_snapshot

STOP_WORDS = frozenset(
    "a an the of in on at to for with and or by from as into onto this that these those it its is are be was were "
    "i me my we our you your some any please just like".split()
)
PUNCTUATION = string.punctuation + "，。、；：！？（）“”‘’《》…"
MAKES = "beeps and tones, sweeps, sirens, clicks and knocks, and white, pink or brown noise"


@functools.cache
def _tokenizer(path: str) -> Tokenizer:
    return Tokenizer.from_file(path)


def unknown_words(caption: str, tokenizer_file: str | Path | None = None) -> list[str]:
    """The words of ``caption`` the tokenizer reads as ``<unk>`` (Audex-Tiny's, unless
    ``tokenizer_file`` names another), as typed, once each, stop words and punctuation left out."""
    path = tokenizer_file or shared_demo_snapshot().thinker_dir / "tokenizer.json"
    tokenizer = _tokenizer(str(path))
    encoding = tokenizer.encode(caption, add_special_tokens=False)
    unk = tokenizer.token_to_id("<unk>")
    spans: list[list[int]] = []
    for token, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
        if token != unk:
            continue
        if spans and spans[-1][1] == start:  # touching: the characters of one Chinese word
            spans[-1][1] = end
        else:
            spans.append([start, end])
    words = [caption[start:end].strip(PUNCTUATION) for start, end in spans]
    named = [w for w in words if any(c.isalpha() for c in w) and w.lower() not in STOP_WORDS]
    return list(dict.fromkeys(named))


def unknown_words_warning(words: list[str]) -> str | None:
    """One sentence naming ``words`` and what the demo makes instead; None when there are none."""
    if not words:
        return None
    quoted = [f'"{w}"' for w in words]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
    one = len(words) == 1
    return (f"Audex-Tiny, the offline demo, does not know the word{'' if one else 's'} {listed} and passes over "
            f"{'it' if one else 'them'}: it makes only {MAKES}, so expect a sound that does not follow "
            f"{'that word' if one else 'those words'}; the released Audex weights make general sounds.")


def caption_warnings(caption: str) -> list[str]:
    """The warnings to show before Audex-Tiny runs ``caption``: none, or the one naming its unknown words."""
    warning = unknown_words_warning(unknown_words(caption))
    return [warning] if warning else []
