"""The demo: what lets the app run with no download, kept apart from the product.

* :mod:`auk_app.demo.harmonic_codec`: AuK-Tiny's parametric harmonic-plus-noise codec;
* :mod:`auk_app.demo.minilm`: AuK-Tiny's all-MiniLM-L6-v2 text encoder;
* :mod:`auk_app.demo.event_codec`: Audex-Tiny's parametric event codec (XCodec1's interface);
* :mod:`auk_app.demo.audex_snapshot`: where Audex-Tiny lives, and a tiny random snapshot for the tests.

:func:`register` enters its codecs and MiniLM by the names a checkpoint config gives them
(``harmonic_noise``, ``minilm``, ``audex_events``), in :mod:`auk_app.auk.registry` and
:mod:`auk_app.audex.codecs`, exactly as the released VAE, Qwen2.5-Omni and XCodec1 are; their
modules load when a checkpoint uses them. Whatever reads AuK-Tiny (:data:`DEMO_DIR`) or Audex-Tiny
calls it first (the Studio does); nothing on a release's path imports this package.
"""

from pathlib import Path

from auk_app.audex import codecs as audex_codecs
from auk_app.auk import registry

DEMO_DIR = Path(__file__).resolve().parents[2] / "assets" / "AuK-Tiny"  # AuK-Tiny, always shipped


def register() -> None:
    """Enter the demo's kinds by name; again changes nothing."""
    registry.register(
        codecs={"harmonic_noise": "auk_app.demo.harmonic_codec:HarmonicNoiseCodec"},
        text_encoders={"minilm": registry.TextEncoderKind("auk_app.demo.minilm:MiniLMConditioner", reads_audio=False)},
    )
    audex_codecs.register({"audex_events": "auk_app.demo.event_codec:EventCodec"})
