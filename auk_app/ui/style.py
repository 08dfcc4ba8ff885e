"""The page's look: the theme, its fonts and the CSS, phones included.

On a wide screen each tab has two columns; below ``PHONE_WIDTH`` they dissolve into one (the
columns become ``display: contents``) and their sections are put in the order a person works in:
what to edit, the instruction, Generate, the result, then the examples, the builder and the
settings (``_ORDER``). Tables wrap their cells and, when still too wide, scroll inside their own
box with a visible bar. The app's own Chinese wording has a font shipped with the page, last in
the font list: a browser without a CJK font of its own draws it instead of empty boxes.
"""

from __future__ import annotations

import base64
import functools
from pathlib import Path

import gradio as gr

PHONE_WIDTH = 720  # px: below this the two columns of a tab would wrap; the sections are ordered instead
WEB_FONT = Path(__file__).resolve().parents[2] / "assets" / "fonts" / "auk-cjk-subset.woff2"
WEB_FONT_FAMILY = "AuK CJK Subset"
# Section element ids in a person's order on a phone, per tab.
_ORDER = {
    "edit": ("edit-source", "edit-action", "edit-result", "edit-examples", "edit-builder", "edit-settings",
             "edit-advanced", "edit-instruction-examples"),
    "audex": ("audex-caption", "audex-action", "audex-result", "audex-knobs", "audex-examples"),
}

_BASE = """
.status-line {font-size: 0.92em; opacity: 0.9}
.banner {border-left: 4px solid #f59e0b; background: rgba(245, 158, 11, 0.10); padding: 8px 14px; border-radius: 6px}
.flash-note {border-left: 4px solid #6366f1; background: rgba(99, 102, 241, 0.08); padding: 6px 12px;
  border-radius: 6px}
.note {font-size: 0.88em; opacity: 0.85}
.prose table {display: block; max-width: 100%; overflow-x: auto}
.prose table::-webkit-scrollbar, .prose pre::-webkit-scrollbar {height: 8px}
.prose table::-webkit-scrollbar-thumb, .prose pre::-webkit-scrollbar-thumb {background: var(--neutral-400);
  border-radius: 4px}
/* A cell wraps between words, never inside one ("Ca te go ry" on a phone): a table wider than the
   column scrolls sideways, with its bar, instead. */
.prose td, .prose th {overflow-wrap: normal; word-break: normal; hyphens: none}
/* Two knobs to a row; on a phone the row wraps rather than squeeze "Randomise seed" beside the seed
   (Gradio writes a checkbox's min-width inline as 0, whatever min_width says). */
#audex-knobs .form > .block {min-width: min(150px, 100%) !important}
.secondary-wrap input {padding-right: 28px; text-overflow: ellipsis}
.label-wrap {gap: 8px}
.label-wrap > .icon {line-height: 1; height: 1em}  /* turned a quarter when shut: a tall box then juts out sideways */
.label-wrap > span:first-child {flex: 1 1 auto; min-width: 0; white-space: normal; text-align: left}
#check-card .check {display: flex; flex-direction: column; gap: 6px; padding: 10px 12px; border-radius: 8px;
  border: 1px solid var(--border-color-primary); font-size: 0.95em}
#check-card .mark {font-size: 2em; line-height: 1; font-weight: 700}
#check-card .pass .mark {color: #16a34a}
#check-card .fail .mark {color: #dc2626}
#check-card .unmeasured .mark {color: var(--body-text-color-subdued)}
/* Values wrap between words ("+17.6 dB" over "SNR"), never inside one, and nothing is cut. */
#check-card .values {display: grid; grid-template-columns: minmax(min-content, max-content) minmax(min-content, 1fr); gap: 2px 8px;
  overflow-wrap: normal; word-break: normal}
#check-card .values span:nth-child(odd) {opacity: 0.75}
#check-card svg {width: 100%; height: 34px; overflow: visible}
#check-card .band {fill: rgba(22, 163, 74, 0.22)}
#check-card .axis {stroke: var(--body-text-color-subdued); stroke-width: 1}
#check-card .asked {stroke: var(--body-text-color); stroke-width: 2}
#check-card .got {stroke: white; stroke-width: 1.5}
#check-card .pass .got {fill: #16a34a}
#check-card .fail .got {fill: #dc2626}
#source-audio .waveform-container {position: relative}
.region-shade {position: absolute; top: 0; bottom: 0; background: rgba(234, 179, 8, 0.28); pointer-events: none;
  border-left: 2px solid #ca8a04; border-right: 2px solid #ca8a04; z-index: 2}
/* The figures' buttons in a row of their own above the image: laid over it, they hid the end of the title's
   level line (peak and RMS). */
#edit-figure .icon-button-wrapper.top-panel, #audex-figure .icon-button-wrapper.top-panel {position: static;
  width: fit-content; margin: 0 0 var(--spacing-sm) auto}
#edit-candidates audio {width: 100%; height: 36px}
#edit-candidates .candidate {margin: 0}
/* The history panel (auk_app/ui/history_view.py): one card per result, its player full width. */
#history-panel .history-list {list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 10px}
#history-panel .history-entry {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 12px;
  display: flex; flex-direction: column; gap: 4px; min-width: 0}
#history-panel .history-title {text-align: left; font-weight: 600; overflow-wrap: anywhere; cursor: pointer;
  color: var(--body-text-color); background: none; border: none; box-shadow: none; padding: 0}
#history-panel .history-title:hover {text-decoration: underline}
#history-panel .history-meta, #history-panel .history-gone, #history-panel .history-empty {margin: 0;
  font-size: 0.88em; opacity: 0.85; overflow-wrap: anywhere}
#history-panel audio {width: 100%; height: 36px}
#history-panel .history-actions {display: flex; flex-wrap: wrap; gap: 6px}
#history-panel .history-actions button {border: 1px solid var(--border-color-primary); border-radius: 6px;
  padding: 2px 10px; font-size: 0.9em; background: var(--button-secondary-background-fill);
  color: var(--button-secondary-text-color); font-weight: normal}
#history-panel .history-actions button[aria-pressed=true] {border-color: var(--color-accent)}
"""


def _fonts() -> str:
    """The subset's face, and the theme's font lists with it last (set here, not in the theme:
    Gradio's check of whether a theme is its own fails on a font list it does not know)."""
    data = base64.b64encode(WEB_FONT.read_bytes()).decode("ascii")
    soft = theme()
    return (f"@font-face {{font-family: '{WEB_FONT_FAMILY}'; font-display: swap; "
            f"src: url(data:font/woff2;base64,{data}) format('woff2')}}\n"
            f":root, .gradio-container {{--font: {soft.font}, '{WEB_FONT_FAMILY}'; "
            f"--font-mono: {soft.font_mono}, '{WEB_FONT_FAMILY}'}}\n")


def _phone_order() -> str:
    rules = []
    for tab, sections in _ORDER.items():
        rules.append(f"#{tab}-left, #{tab}-right {{display: contents}}")
        rules.append(f"#{tab}-layout {{flex-direction: column; flex-wrap: nowrap}}")
        rules += [f"#{section} {{order: {place}; flex: 0 0 auto; width: 100%}}"
                  for place, section in enumerate(sections, 1)]
    rules.append("#edit-view {flex-direction: column}")  # the check card above the figure, both full width
    return f"@media (max-width: {PHONE_WIDTH}px) {{\n  " + "\n  ".join(rules) + "\n}\n"


@functools.cache
def css() -> str:
    """The page's CSS: its own rules, the phone order, and the web font (inlined: no route to serve)."""
    return _fonts() + _BASE + _phone_order()


def theme() -> gr.themes.Theme:
    return gr.themes.Soft(primary_hue="indigo", secondary_hue="sky")
