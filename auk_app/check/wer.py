"""Word error rate against a target text, with the normalisation that makes it fair.

``jiwer`` counts the edits (substitutions, deletions, insertions over the reference's words:
the standard Levenshtein alignment, on RapidFuzz). Before it counts, both texts are normalised
here: Unicode NFKC, case folded, punctuation and symbols dropped, whitespace collapsed, so
"Hello, World!" and "hello world" match. Chinese (and Japanese) is not written in words, so a
text with CJK characters is scored by character error rate over its characters, spaces ignored,
as Chinese ASR and TTS evaluations do (Seed-TTS-eval, AISHELL).
"""

from __future__ import annotations

import re
import unicodedata

import jiwer

# CJK Unified Ideographs (+ extension A, compatibility), kana: scripts scored by characters
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def normalize(text: str) -> str:
    """NFKC, case folded, punctuation and symbols removed (an apostrophe inside a word is kept:
    "don't"), whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    text = re.sub(r"(?<=\w)['’](?=\w)", "'", text)
    kept = "".join(c if c == "'" or not unicodedata.category(c).startswith(("P", "S")) else " " for c in text)
    kept = re.sub(r"(?<!\w)'|'(?!\w)", " ", kept)
    return " ".join(kept.split())


def is_cjk(text: str) -> bool:
    """Whether ``text`` is scored by characters: it holds Chinese or Japanese characters."""
    return bool(_CJK.search(text or ""))


def error_rate(reference: str, hypothesis: str) -> tuple[float, str]:
    """(rate, unit) of ``hypothesis`` against ``reference``: WER over words, or CER over characters
    (spaces ignored) when the reference is Chinese or Japanese. 0 is a perfect match; it can exceed
    1 when the hypothesis adds words. Raises ValueError for a reference with nothing to score."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        raise ValueError(f"the target text {reference!r} has no words to score against")
    if is_cjk(ref):
        return float(jiwer.cer(ref.replace(" ", ""), hyp.replace(" ", ""))), "CER"
    return float(jiwer.wer(ref, hyp)), "WER"
