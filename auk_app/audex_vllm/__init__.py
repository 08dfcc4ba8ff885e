"""Audex text-to-audio on a vLLM server: the plugin loaded by ``vllm serve``.

Only this package imports vLLM: ``phase_mask``, ``cfg``, ``refusal`` and ``scheduler`` run
inside the server; ``served_model`` (plain Python) writes the folder it serves. The request
arguments both sides agree on live in :mod:`auk_app.audex.xargs`. Serve an Audex checkpoint with::

    python -m auk_app.audex_vllm.served_model <audex-snapshot> <served-dir>
    vllm serve <served-dir> --dtype bfloat16 --no-enable-prefix-caching \\
        --scheduler-cls auk_app.audex_vllm.scheduler.AudexPairScheduler \\
        --logits-processors auk_app.audex_vllm.cfg:AudexCFGLogitsProcessor \\
                            auk_app.audex_vllm.phase_mask:AudexPhaseMaskLogitsProcessor

Nothing is imported here, so importing the package stays free.
"""
