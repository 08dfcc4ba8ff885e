"""Audex text-to-audio: RVQ phase mask, guided LM sampling, XCodec1 decoding.

Modules, bottom up: ``tta`` (token-space constants, the phase-mask logits processor, phase table,
validation), ``vocab`` (the layout read from a tokenizer), ``prompt``, ``params`` (AudexSampling,
the one checked sampling type from request to sampler), ``rvq`` (stream <-> code grid),
``report`` (validity report), ``thinker`` / ``xcodec`` (strict checkpoint loading),
``token_sampler`` (the TokenSampler protocol and its result), ``sampler`` (LocalSampler: the
guided decode loop in process), ``remote`` (RemoteSampler: an Audex vLLM server), ``pipeline``
(AudexPipeline) and ``request`` (the app's checked request and its result).
Nothing is imported here, so ``import auk_app.audex`` stays free.
"""
