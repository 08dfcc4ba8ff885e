"""Codecs and text encoders by the name a checkpoint config gives them, imported on first use.

The releases' own (the BigVGAN-flow VAE, Qwen2.5-Omni-3B; XCodec1 is transformers') are entered
here; other kinds register themselves (:func:`register`): the demo package enters AuK-Tiny's and
Audex-Tiny's when it is imported. Each entry names its class as ``"module:attribute"``, imported
when a checkpoint uses it, so loading a release imports no demo.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from auk_app.auk.configs import BIGVGAN_FLOW, QWEN_OMNI
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class TextEncoderKind:
    """A text encoder a checkpoint may name: its conditioner class, and whether it reads the clip."""

    target: str  # "module:attribute" of a class with from_pretrained(path, *, device, dtype)
    reads_audio: bool  # Qwen2.5-Omni hears the source clip beside the instruction; MiniLM reads text only


# Each codec class has a ``config_type`` (a frozen dataclass with from_kwargs, sample_rate and hop)
# and ``from_config(config)``.
CODECS = {BIGVGAN_FLOW: "auk_app.auk.vae:AuKVAE"}
# Audex's codec by the ``codec`` field of its config.json; a config without one is XCodec1
# (``transformers.XcodecModel``, what the release ships). Each class has ``from_config(dict)``,
# code tables as parameters (loaded strictly) and ``decode(codes).audio_values`` as XcodecModel's.
AUDEX_CODECS: dict[str, str] = {}
TEXT_ENCODERS = {QWEN_OMNI: TextEncoderKind("auk_app.auk.qwen:QwenConditioner", reads_audio=True)}


def register(*, codecs: Mapping[str, str] | None = None, audex_codecs: Mapping[str, str] | None = None,
             text_encoders: Mapping[str, TextEncoderKind] | None = None) -> None:
    """Enter more kinds by name (a package's own, from the package); a name already taken by another
    target is refused, so no plugin can replace a release's kind."""
    for table, entries in ((CODECS, codecs), (AUDEX_CODECS, audex_codecs), (TEXT_ENCODERS, text_encoders)):
        for name, target in (entries or {}).items():
            if table.setdefault(name, target) != target:
                raise ValueError(f"{name!r} is registered already, as {table[name]!r}")


def load(target: str) -> Any:
    """The attribute a ``"module:attribute"`` target names, importing its module now."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


# How a kind outside the releases gets a name, said wherever a name is missing.
NOT_REGISTERED = "a kind outside the releases is entered when its package is imported (AuK-Tiny's: import auk_app.demo)"


def codec_class(name: str) -> Any:
    """The codec class a config's ``vae.codec`` names; ValueError for a name not registered."""
    if name not in CODECS:
        raise ValueError(f"vae.codec must be one of {sorted(CODECS)}, not {name!r}; {NOT_REGISTERED}.")
    return load(CODECS[name])


def audex_codec_class(name: str) -> Any:
    """The Audex codec class a codec config's ``codec`` field names; ValueError for a name not registered."""
    if name not in AUDEX_CODECS:
        raise ValueError(f"codec must be one of {sorted(AUDEX_CODECS)}, not {name!r}; {NOT_REGISTERED}.")
    return load(AUDEX_CODECS[name])


def text_encoder(kind: str) -> TextEncoderKind:
    """The registered text encoder ``kind``; ValueError for a name not registered."""
    if kind not in TEXT_ENCODERS:
        raise ValueError(f"Unknown text encoder kind {kind!r}; expected {' or '.join(map(repr, TEXT_ENCODERS))}; "
                         f"{NOT_REGISTERED}.")
    return TEXT_ENCODERS[kind]


def text_encoder_class(kind: str) -> Any:
    """The conditioner class a config's ``text_encoder.kind`` names."""
    return load(text_encoder(kind).target)
