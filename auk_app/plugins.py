"""Kinds outside the releases entered by name, and their classes imported on first use.

A table maps a name a config gives (a codec, a text encoder) to ``"module:attribute"``; the model
packages keep their own tables (:mod:`auk_app.auk.registry`, :mod:`auk_app.audex.codecs`) and a
package that brings kinds of its own enters them by calling its register function
(:func:`auk_app.demo.register` enters AuK-Tiny's and Audex-Tiny's), so loading a release imports
no plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from importlib import import_module
from typing import Any

# How a kind outside the releases gets a name, said wherever a name is missing.
NOT_REGISTERED = ("a kind outside the releases is entered by its package's register function (AuK-Tiny's: "
                  "auk_app.demo.register())")


def enter(table: MutableMapping[str, Any], entries: Mapping[str, Any] | None) -> None:
    """Enter ``entries`` in ``table``; a name already taken by another target is refused, so no
    plugin can replace a release's kind (entering the same target again changes nothing)."""
    for name, target in (entries or {}).items():
        if table.setdefault(name, target) != target:
            raise ValueError(f"{name!r} is registered already, as {table[name]!r}")


def load(target: str) -> Any:
    """The attribute a ``"module:attribute"`` target names, importing its module now."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)
