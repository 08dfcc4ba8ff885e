"""The TTA token layout read from a tokenizer: markers, phase table and token -> codec id map.

Everything downstream (mask arguments, the validity report, decoding) works from this object
instead of the real checkpoint's constants, so a tokenizer with another layout (the demo's tiny
one, a fixture's) behaves exactly like the real one, where ``<audiocodec_N>`` = 196613 + N.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from auk_app.audex.tta import AUDEX_AUDIOCODEC_VOCAB_SIZE, build_tta_phase_token_ids


@dataclass(frozen=True)
class AudexVocab:
    """Token ids the TTA path needs.

    ``codec_of`` maps the token id of every ``<audiocodec_N>`` the tokenizer defines (N < 8192,
    upper half included) to N.
    """

    start_tid: int
    end_tid: int
    phase_token_ids: tuple[tuple[int, ...], ...]  # [4][1024]
    codec_of: Mapping[int, int]
    tokenizer_size: int

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> AudexVocab:
        """Read the layout; ValueError (from build_tta_phase_token_ids) on missing markers/codecs."""
        phase_token_ids, start_tid, end_tid = build_tta_phase_token_ids(tokenizer)
        vocab = tokenizer.get_vocab()
        codec_of = {
            vocab[name]: n
            for n in range(AUDEX_AUDIOCODEC_VOCAB_SIZE)
            if (name := f"<audiocodec_{n}>") in vocab
        }
        return cls(
            start_tid=start_tid,
            end_tid=end_tid,
            phase_token_ids=tuple(tuple(ids) for ids in phase_token_ids),
            codec_of=codec_of,
            tokenizer_size=max(vocab.values()) + 1,
        )

    def codec_ids(self, token_ids: Iterable[int]) -> list[int]:
        """The codec ids of the codec tokens in ``token_ids``; markers and stray tokens are dropped."""
        return [self.codec_of[t] for t in token_ids if t in self.codec_of]
