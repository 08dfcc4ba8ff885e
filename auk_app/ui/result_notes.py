"""A result's warnings, beside that result: what the model was not trained for, words the demo
does not know, clipping. A toast says it as soon as it is known and fades after a few seconds;
this stays under the result's player until a new result (or a picked candidate) replaces it,
when its own warnings, or none, take the place. The page dismisses what toasts still stand when
Generate is pressed and when the result arrives (:data:`auk_app.ui.page_js.DISMISS_TOASTS`), so a
previous request's toast never stands over the next result.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from auk_app.ui.page_js import DISMISS_TOASTS


def warnings_text(manifest: dict[str, Any] | None) -> str:
    """The manifest's warnings as Markdown, one "⚠" line each; empty for none (or no result)."""
    return "\n\n".join(f"⚠ {warning}" for warning in (manifest or {}).get("warnings") or [])


def warnings_block(manifest: dict[str, Any] | None) -> dict:
    """The block's update for a result's manifest: its warnings, hidden when there are none."""
    text = warnings_text(manifest)
    return gr.update(value=text, visible=bool(text))


def block(elem_id: str) -> gr.Markdown:
    """The block under a result's player, hidden until a result has warnings."""
    return gr.Markdown(visible=False, elem_id=elem_id, elem_classes=["banner", "result-warnings"])


def wire(manifest: gr.JSON, warnings: gr.Markdown, run: gr.Button) -> None:
    """The block follows the result's manifest; Generate and a new result dismiss standing toasts."""
    manifest.change(warnings_block, manifest, warnings, queue=False, api_visibility="private")
    manifest.change(None, None, None, js=DISMISS_TOASTS, queue=False, api_visibility="private")
    run.click(None, None, None, js=DISMISS_TOASTS, queue=False, api_visibility="private")
