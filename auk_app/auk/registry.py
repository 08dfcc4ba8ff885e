"""AuK's codecs and text encoders by the name a checkpoint config gives them, imported on first use.

The releases' own (the BigVGAN-flow VAE, Qwen2.5-Omni-3B) are entered here; other kinds are
entered by their package (:func:`register`; :func:`auk_app.demo.register` enters AuK-Tiny's).
Each entry names its class as ``"module:attribute"`` (:mod:`auk_app.plugins`), imported when a
checkpoint uses it, so loading a release imports no demo.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auk_app.auk.configs import BIGVGAN_FLOW, QWEN_OMNI
from auk_app.plugins import NOT_REGISTERED, enter, load


@dataclass(frozen=True)
class TextEncoderKind:
    """A text encoder a checkpoint may name: its conditioner class, and whether it reads the clip."""

    target: str  # "module:attribute" of a class with from_pretrained(path, *, device, dtype)
    reads_audio: bool  # Qwen2.5-Omni hears the source clip beside the instruction; MiniLM reads text only


# Each codec class has a ``config_type`` (a frozen dataclass with from_kwargs, sample_rate and hop)
# and ``from_config(config)``.
CODECS = {BIGVGAN_FLOW: "auk_app.auk.vae:AuKVAE"}
TEXT_ENCODERS = {QWEN_OMNI: TextEncoderKind("auk_app.auk.qwen:QwenConditioner", reads_audio=True)}


def register(*, codecs: Mapping[str, str] | None = None,
             text_encoders: Mapping[str, TextEncoderKind] | None = None) -> None:
    """Enter more kinds by name (a package's own, from the package)."""
    enter(CODECS, codecs)
    enter(TEXT_ENCODERS, text_encoders)


def codec_class(name: str) -> Any:
    """The codec class a config's ``vae.codec`` names; ValueError for a name not registered."""
    if name not in CODECS:
        raise ValueError(f"vae.codec must be one of {sorted(CODECS)}, not {name!r}; {NOT_REGISTERED}.")
    return load(CODECS[name])


def text_encoder(kind: str) -> TextEncoderKind:
    """The registered text encoder ``kind``; ValueError for a name not registered."""
    if kind not in TEXT_ENCODERS:
        raise ValueError(f"Unknown text encoder kind {kind!r}; expected {' or '.join(map(repr, TEXT_ENCODERS))}; "
                         f"{NOT_REGISTERED}.")
    return TEXT_ENCODERS[kind]


def text_encoder_class(kind: str) -> Any:
    """The conditioner class a config's ``text_encoder.kind`` names."""
    return load(text_encoder(kind).target)
