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

from typing import Any

_WRAPPED = "_audex_token_sync"


def install() -> None:
    """Wrap ``GPUModelRunner._sample`` once per process (idempotent)."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    original = GPUModelRunner._sample
    if getattr(original, _WRAPPED, False):
        return

    def _sample(self: Any, logits: Any, spec_decode_metadata: Any) -> Any:
        output = original(self, logits, spec_decode_metadata)
        copy_cond_tokens(self.input_batch.logitsprocs.all, output.sampled_token_ids)
        return output

    setattr(_sample, _WRAPPED, True)
    GPUModelRunner._sample = _sample


def copy_cond_tokens(processors: Any, sampled_token_ids: Any) -> None:
    """``sampled_token_ids`` is ``[num_rows, n]``: row uncond := row cond for each blended pair."""
    from auk_app.audex_vllm.cfg import AudexCFGLogitsProcessor

    for processor in processors:
        if isinstance(processor, AudexCFGLogitsProcessor):
            for cond, uncond, _scale in processor.pairs(sampled_token_ids.shape[0]):
                sampled_token_ids[uncond] = sampled_token_ids[cond]
