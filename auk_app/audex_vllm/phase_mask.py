"""The RVQ phase mask as a vLLM v1 logits processor loadable by name.

``--logits-processors auk_app.audex_vllm.phase_mask:AudexPhaseMaskLogitsProcessor``. The mask
logic is :class:`auk_app.audex.tta.TTARVQPhaseMaskLogitsProcessor`, the same class the
in-process sampler drives; this subclass only changes where a request's arguments come from:
the phase table is built once from the served tokenizer, and a request opts in with the flat
``vllm_xargs`` ``{"audex_codec_cap": N}`` (vLLM 0.32 cannot carry the nested table).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import LogitsProcessor

from auk_app.audex.tta import TTARVQPhaseMaskLogitsProcessor, build_tta_phase_token_ids
from auk_app.audex import xargs
from auk_app.audex_vllm.refusal import refused


def served_phase_table(tokenizer_dir: str | Path) -> tuple[list[list[int]], int, int]:
    """``(phase_token_ids, start_tid, end_tid)`` read from ``tokenizer_dir/tokenizer.json``."""
    path = Path(tokenizer_dir) / "tokenizer.json"
    if not path.is_file():
        raise RuntimeError(
            f"The Audex phase mask needs the served model's tokenizer.json, but {path} does not exist. "
            "Serve a local folder written by `python -m auk_app.audex_vllm.served_model`."
        )
    return build_tta_phase_token_ids(Tokenizer.from_file(str(path)))


class AudexPhaseMaskLogitsProcessor(TTARVQPhaseMaskLogitsProcessor, LogitsProcessor):
    """The phase mask for requests that carry ``audex_codec_cap``; others pass untouched."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Refuse a malformed cap at the API server, as a 400 with one sentence naming it."""
        with refused():
            xargs.codec_cap(sampling_params.extra_args)

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        super().__init__(vllm_config, device, is_pin_memory)
        table, self._start_tid, end_tid = served_phase_table(vllm_config.model_config.tokenizer)
        self._phase_token_ids, self._mask_end_tid = table, end_tid

    def _tta_args(self, params: Any) -> dict[str, Any] | None:
        cap = xargs.codec_cap(getattr(params, "extra_args", None))
        if cap is None:
            return None
        # The table and end id are already latched from the tokenizer; the prompt ends with
        # <audiogen_start>, so position 0 is the first generated token.
        return {"start_tid": self._start_tid, "end_tid": self._mask_end_tid, "codec_cap": cap,
                "start_in_prompt": True}
