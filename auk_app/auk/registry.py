"""Codecs and text encoders by the name a checkpoint config gives them, imported on first use.

A release (the BigVGAN-flow VAE, Qwen2.5-Omni-3B, XCodec1) and the demo models (the harmonic-noise
codec, all-MiniLM-L6-v2, Audex-Tiny's event codec) are looked up here alike; each entry names its class as ``"module:attribute"``,
so loading a release never imports the demo package, and this module imports nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class TextEncoderKind:
    """A text encoder a checkpoint may name: its conditioner class, and whether it reads the clip."""

    target: str  # "module:attribute" of a class with from_pretrained(path, *, device, dtype)
    reads_audio: bool  # Qwen2.5-Omni hears the source clip beside the instruction; MiniLM reads text only


BIGVGAN_FLOW = "bigvgan_flow"  # the released VAE, what a config that names no codec means
QWEN_OMNI = "qwen2_5_omni"  # the released text encoder, what a config that names none means
# Each codec class has a ``config_type`` (a frozen dataclass with from_kwargs, sample_rate and hop)
# and ``from_config(config)``.
CODECS = {
    BIGVGAN_FLOW: "auk_app.auk.vae:AuKVAE",
    "harmonic_noise": "auk_app.demo.harmonic_codec:HarmonicNoiseCodec",
}
# Audex's codec by the ``codec`` field of its config.json; a config without one is XCodec1
# (``transformers.XcodecModel``, what the release ships). Each class has ``from_config(dict)``,
# code tables as parameters (loaded strictly) and ``decode(codes).audio_values`` as XcodecModel's.
AUDEX_CODECS = {
    "audex_events": "auk_app.demo.event_codec:EventCodec",
}
TEXT_ENCODERS = {
    QWEN_OMNI: TextEncoderKind("auk_app.auk.qwen:QwenConditioner", reads_audio=True),
    "minilm": TextEncoderKind("auk_app.demo.minilm:MiniLMConditioner", reads_audio=False),
}


def load(target: str) -> Any:
    """The attribute a ``"module:attribute"`` target names, importing its module now."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


def codec_class(name: str) -> Any:
    """The codec class a config's ``vae.codec`` names; ValueError for a name not registered."""
    if name not in CODECS:
        raise ValueError(f"vae.codec must be one of {sorted(CODECS)}, not {name!r}")
    return load(CODECS[name])


def audex_codec_class(name: str) -> Any:
    """The Audex codec class a codec config's ``codec`` field names; ValueError for a name not registered."""
    if name not in AUDEX_CODECS:
        raise ValueError(f"codec must be one of {sorted(AUDEX_CODECS)}, not {name!r}")
    return load(AUDEX_CODECS[name])


def text_encoder_class(kind: str) -> Any:
    """The conditioner class a config's ``text_encoder.kind`` names."""
    return load(TEXT_ENCODERS[kind].target)
