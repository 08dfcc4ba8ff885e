"""The Gradio component of each knob, made from its declaration in :mod:`auk_app.knobs`.

The page shows a knob as its ``widget`` says (a slider, a checkbox, …) with its label and help;
the API takes every knob through hidden components of its own, where a sampling knob is a number
that may stay empty (the checkpoint's default), which a slider cannot.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from auk_app.config import Limits
from auk_app.knobs import Knob


def elem_id(knob: Knob, prefix: str = "") -> str:
    """The knob's element id on the page (what the browser tests find it by)."""
    return prefix + knob.name.replace("_", "-")


def page_widget(knob: Knob, limits: Limits, *, prefix: str = "", **props: Any) -> gr.components.Component:
    """``knob`` as the page shows it; ``props`` add to or override the declaration's (a value, choices,
    a placeholder)."""
    shown = {"label": knob.label, "elem_id": elem_id(knob, prefix), **props}
    if knob.widget != "audio":  # a player has no info line
        shown.setdefault("info", knob.describe(limits))
    if knob.widget == "slider":
        low, high, step = knob.span(limits)
        return gr.Slider(low, high, step=step, **{"value": knob.default, **shown})
    return _component(knob, shown)


def api_widget(knob: Knob, choices: list[str] | None = None) -> gr.components.Component:
    """``knob`` as a hidden input of a named endpoint, holding the API's default."""
    props = {"label": knob.label, "visible": False}
    if knob.widget == "slider":
        return gr.Number(knob.default, **props)
    if knob.widget == "choice":
        props["choices"] = choices
    return _component(knob, props)


def _component(knob: Knob, props: dict[str, Any]) -> gr.components.Component:
    kind = knob.widget
    if kind == "audio":
        return gr.Audio(**{"type": "filepath", **props})
    if kind in ("text", "grid"):
        return gr.Textbox(**props)
    if kind == "choice":
        # Custom values allowed: an unknown name gets the validator's sentence, not Gradio's bare HTTP 400.
        return gr.Dropdown(**{"value": knob.default, "allow_custom_value": True, **props})
    if kind == "checkbox":
        return gr.Checkbox(**{"value": knob.default, **props})
    if kind == "number":
        return gr.Number(**{"value": knob.default, **props})
    raise ValueError(f"no component for the widget {kind!r} of {knob.name}")
