"""The edit check as a card beside the before/after figure: a mark, what was asked and what the
result measures, what else it changed and whether it clips, and a gauge of asked and got: the
band the check accepts around what was asked, a tick at it, and a dot where the result is. Built
from the manifest's ``check`` entry (HTML; the look is in :mod:`auk_app.ui.style`, where the values
wrap between words, never inside one, and nothing is cut)."""

from __future__ import annotations

import html
import re
from typing import Any

MARKS = {"pass": "✓", "fail": "✗", "unmeasured": "–"}
SPAN_TOLERANCES = 3.0  # the gauge shows what was asked ± this many tolerances, and the result


def manifest_card(manifest: dict[str, Any] | None) -> str:
    """The card of a result's manifest (its ``check``); empty for none."""
    return check_card((manifest or {}).get("check"))


def check_card(check: dict[str, Any] | None) -> str:
    """The card's HTML; empty without a check (no result yet)."""
    if not check:
        return ""
    state = "unmeasured" if check.get("pass") is None else "pass" if check["pass"] else "fail"
    display = str(check.get("display", ""))
    if state == "unmeasured":
        body = f"<div>{html.escape(display.split('; the result ')[0])}</div>" + _rows(_extras(check))
    else:
        head = re.split(r" [✓✗]", display, maxsplit=1)[0]
        pairs = [(label, value) for label, _, value in (part.partition(" ") for part in head.split(" · "))]
        body = _rows(pairs + _extras(check)) + gauge(check)
    task = html.escape(str(check.get("task", "")).replace("_", " ").capitalize())
    return (f'<div class="check {state}" aria-label="edit check: {state}"><div><span class="mark">{MARKS[state]}'
            f"</span> <strong>{task}</strong></div>{body}</div>")


def _extras(check: dict[str, Any]) -> list[tuple[str, str]]:
    """The rows after asked and got: what else the result changed, and its samples at full scale."""
    rows = [("also changed", ", ".join(check["unasked"]))] if check.get("unasked") else []
    clipped = check.get("clipped") or 0
    if clipped:
        rows.append(("clips", f"{clipped:,} sample{'' if clipped == 1 else 's'} at full scale"))
    return rows


def _rows(pairs: list[tuple[str, str]]) -> str:
    if not pairs:
        return ""
    cells = "".join(f"<span>{html.escape(label)}</span><span>{html.escape(value)}</span>" for label, value in pairs)
    return f'<div class="values">{cells}</div>'


def gauge(check: dict[str, Any]) -> str:
    """An SVG line from low to high: the accepted band, a tick at what was asked, a dot at the result."""
    asked, got, tolerance = check.get("asked"), check.get("got"), check.get("tolerance")
    if asked is None or not tolerance:
        return ""
    bound = check.get("bound", "=")
    low, high = asked - SPAN_TOLERANCES * tolerance, asked + SPAN_TOLERANCES * tolerance
    if got is not None:
        low, high = min(low, got - tolerance), max(high, got + tolerance)
    band = {"≥": (asked - tolerance, high), "≤": (low, asked + tolerance), ">": (asked + tolerance, high),
            "<": (low, asked - tolerance)}.get(bound, (asked - tolerance, asked + tolerance))

    def x(value: float) -> float:
        """Percent of the card's width: the gauge stretches with it, the dot stays round."""
        return round(100 * (value - low) / (high - low), 1)

    dot = "" if got is None else f'<circle class="got" cx="{x(got)}%" cy="17" r="5.5"/>'
    return (f'<svg role="img" aria-label="the accepted band, a tick at what was asked, a dot at the result">'
            f'<rect class="band" x="{x(band[0])}%" y="9" width="{round(x(band[1]) - x(band[0]), 1)}%" '
            f'height="16" rx="3"/>'
            f'<line class="axis" x1="0" y1="17" x2="100%" y2="17"/>'
            f'<line class="asked" x1="{x(asked)}%" y1="5" x2="{x(asked)}%" y2="29"/>{dot}</svg>')
