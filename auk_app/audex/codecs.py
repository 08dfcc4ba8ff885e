"""Audex's codecs by the ``codec`` field of a codec config.json, imported on first use.

A config without one is XCodec1 (``transformers.XcodecModel``, what the release ships). Another
kind of XCodec1's interface is entered by its package (:func:`register`; the demo's event codec):
its class has ``from_config(dict)``, code tables as parameters (loaded strictly) and
``decode(codes).audio_values`` as XcodecModel's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auk_app.plugins import NOT_REGISTERED, enter, load

CODECS: dict[str, str] = {}  # name -> "module:attribute"


def register(codecs: Mapping[str, str]) -> None:
    enter(CODECS, codecs)


def codec_class(name: str) -> Any:
    """The codec class a codec config's ``codec`` field names; ValueError for a name not registered."""
    if name not in CODECS:
        raise ValueError(f"codec must be one of {sorted(CODECS)}, not {name!r}; {NOT_REGISTERED}.")
    return load(CODECS[name])
