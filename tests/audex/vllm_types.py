"""Stand-ins for the vLLM v1 types the phase mask reads, so the tests and the eager reference loop
drive :class:`~auk_app.audex.tta.TTARVQPhaseMaskLogitsProcessor` as vLLM does, without vLLM."""

import enum
from dataclasses import dataclass, field


class MoveDirectionality(enum.Enum):
    """Stand-in for vLLM's enum: the processor must recognise members by name only."""

    SWAP = 0
    UNIDIRECTIONAL = 1


@dataclass
class Params:
    """The one field of vLLM's SamplingParams the mask reads."""

    extra_args: dict | None


@dataclass
class BatchUpdate:
    """vLLM v1 BatchUpdate shape: ``added`` (index, params, prompt ids, live output list)."""

    added: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    moved: list = field(default_factory=list)


def tta_rvq_args(vocab, codec_cap: int | None) -> dict:
    """The contract's ``extra_args["tta_rvq"]`` for a request whose prompt ends with ``<audiogen_start>``
    (:mod:`auk_app.audex.tta`), from an :class:`~auk_app.audex.vocab.AudexVocab`."""
    return {"phase_token_ids": [list(ids) for ids in vocab.phase_token_ids], "start_tid": vocab.start_tid,
            "end_tid": vocab.end_tid, "codec_cap": codec_cap, "start_in_prompt": True}
