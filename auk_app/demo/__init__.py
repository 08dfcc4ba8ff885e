"""The demo: what lets the app run with no download, kept apart from the product.

* :mod:`auk_app.demo.harmonic_codec`: AuK-Tiny's parametric harmonic-plus-noise codec;
* :mod:`auk_app.demo.minilm`: AuK-Tiny's all-MiniLM-L6-v2 text encoder;
* :mod:`auk_app.demo.audex_snapshot`: the tiny, random, untrained Audex snapshot.

The first two plug in through :mod:`auk_app.auk.registry` by the names a checkpoint config
gives them (``harmonic_noise``, ``minilm``), exactly as the released VAE and Qwen2.5-Omni do;
nothing on a release's path imports this package.
"""
