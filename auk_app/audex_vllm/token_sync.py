"""The cond row's sampled token becomes the uncond row's: one wrap of the V1 model runner.

vLLM offers no hook between sampling and the bookkeeping that appends each row's token, so this
wraps ``vllm.v1.worker.gpu_model_runner.GPUModelRunner._sample`` (vLLM 0.32; the CPU runner
inherits it). After the original sampler runs, every pair the CFG processor blended this step
gets its uncond row overwritten with the cond row's token, so both requests append the same id,
stop on the same step and stay token-identical. Version-sensitive: the V2 model runner
(``VLLM_USE_V2_MODEL_RUNNER=1``, vLLM's default on CUDA) does not go through this method, so the
server is run with the V1 runner; ``tests/audex_vllm`` checks the pairs stay identical.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_WRAPPED = "_audex_token_sync"

# ``copy(processors, sampled_token_ids)``: rewrite rows of ``sampled_token_ids`` [num_rows, n] in
# place, given the batch's logits processors (the CFG processor brings its own, so this module
# needs nothing of it).
CopyTokens = Callable[[Any, Any], None]


def install(copy: CopyTokens) -> None:
    """Wrap ``GPUModelRunner._sample`` once per process (idempotent) to run ``copy`` on every
    step's sampled tokens."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    original = GPUModelRunner._sample
    if getattr(original, _WRAPPED, False):
        return

    def _sample(self: Any, logits: Any, spec_decode_metadata: Any) -> Any:
        output = original(self, logits, spec_decode_metadata)
        copy(self.input_batch.logitsprocs.all, output.sampled_token_ids)
        return output

    setattr(_sample, _WRAPPED, True)
    GPUModelRunner._sample = _sample
