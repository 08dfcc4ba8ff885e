"""The demo: what lets the app run with no download, kept apart from the product.

* :mod:`auk_app.demo.harmonic_codec`: AuK-Tiny's parametric harmonic-plus-noise codec;
* :mod:`auk_app.demo.minilm`: AuK-Tiny's all-MiniLM-L6-v2 text encoder;
* :mod:`auk_app.demo.event_codec`: Audex-Tiny's parametric event codec (XCodec1's interface);
* :mod:`auk_app.demo.audex_snapshot`: where Audex-Tiny lives, and a tiny random snapshot for the tests.

The codecs and MiniLM plug in through :mod:`auk_app.auk.registry` by the names a checkpoint config
gives them (``harmonic_noise``, ``minilm``, ``audex_events``), exactly as the released VAE, Qwen2.5-Omni
and XCodec1 do;
nothing on a release's path imports this package.
"""
