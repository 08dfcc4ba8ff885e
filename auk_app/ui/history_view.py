"""The history panel's HTML and its script: the list of this session's results, each with its
player, and the A/B switch, which runs in the browser alone.

Plain strings, no Gradio (the panel is :mod:`auk_app.ui.history_panel`); every text from an entry is
escaped, since a person typed it. A click on an entry's title restores its settings and "Use as
the source" loads its result into the edit tab: the script hands both to the server as the panel's
click event, ``{action, entry}``. A/B switches an edit's player between the result and the source
at the same position, playing on if it was playing.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from auk_app.ui.history import gone, kept

FILE_ROUTE = "gradio_api/file="  # relative: under the page's own root, a proxy's path included
_KINDS = {"edit": "Edit", "audex": "Text to audio"}
EMPTY = ("No results yet. Each edit and sound made in this browser is listed here, newest first, with "
         "its settings, seed and check.")


def panel_html(history: list[dict[str, Any]], root: str | Path) -> str:
    """The list, newest first; ``root`` is the folder files must still be in to be played."""
    if not history:
        return f'<p class="history-empty">{EMPTY}</p>'
    return '<ol class="history-list">' + "".join(_entry_html(entry, root) for entry in history) + "</ol>"


def _entry_html(entry: dict[str, Any], root: str | Path) -> str:
    text = escape(entry["text"]) or "(no instruction)"
    meta = " · ".join(escape(str(part)) for part in (
        _KINDS[entry["kind"]], entry["model"], f"seed {entry['seed']}", entry["verdict"], _clock(entry["created"])))
    title = (f'<button class="history-title" data-action="restore" title="Restore its settings and seed">'
             f"{text}</button>")
    if gone(entry, root):
        body = ('<p class="history-gone">Its files are no longer kept (results are kept for an hour); a click on '
                "it still restores its settings.</p>")
    else:
        body = _players(entry, root) + _actions(entry, root)
    return (f'<li class="history-entry" data-entry="{escape(entry["id"])}">{title}'
            f'<p class="history-meta">{meta}</p>{body}</li>')


def _players(entry: dict[str, Any], root: str | Path) -> str:
    """The result's player and, for an edit whose source is still kept, the source's, hidden until A/B."""
    if entry["audio"] is None:
        return ""
    players = f'<audio class="ab-result" controls preload="none" src="{_url(entry["audio"])}"></audio>'
    if kept(entry["source"], root) is not None:
        players += f'<audio class="ab-source" controls preload="none" hidden src="{_url(entry["source"])}"></audio>'
    return f'<div class="history-players">{players}</div>'


def _actions(entry: dict[str, Any], root: str | Path) -> str:
    buttons = []
    if entry["audio"] is not None:
        buttons.append('<button data-action="source">↩ Use as the source</button>')
    if entry["audio"] is not None and kept(entry["source"], root) is not None:
        buttons.append('<button data-action="ab" aria-pressed="false" title="Switch between the source and the '
                       'result at the same position">A/B: hearing the result</button>')
    return f'<div class="history-actions">{"".join(buttons)}</div>' if buttons else ""


def _url(path: str) -> str:
    return FILE_ROUTE + quote(path)


def _clock(created: str) -> str:
    """"20:31:05 UTC" from a manifest's ISO time (UTC)."""
    return f"{created[11:19]} UTC" if len(created) >= 19 else created


# The panel's script (gr.HTML's js_on_load: ``element`` is the panel, ``trigger`` sends an event).
# One listener on the panel serves every entry, those rendered later included.
SCRIPT = """
const other = (player) => player.parentElement.querySelector(
  player.matches('.ab-result') ? '.ab-source' : '.ab-result');
// A result that starts playing fetches its source too, so a switch is at once.
element.addEventListener('play', (event) => {
  const source = event.target.matches?.('.ab-result') && other(event.target);
  if (source && source.preload === 'none') { source.preload = 'auto'; source.load(); }
}, true);
element.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  const entry = button?.closest('.history-entry');
  if (!entry) return;
  if (button.dataset.action !== 'ab') {
    trigger('click', {action: button.dataset.action, entry: entry.dataset.entry});
    return;
  }
  const from = entry.querySelector('.history-players audio:not([hidden])'), to = other(from);
  const at = from.currentTime, playing = !from.paused;
  from.pause();
  const go = () => { to.currentTime = at; if (playing) to.play(); };
  if (to.readyState >= 1) go();
  else { to.addEventListener('loadedmetadata', go, {once: true}); to.preload = 'auto'; to.load(); }
  from.hidden = true;
  to.hidden = false;
  const source = to.matches('.ab-source');
  button.setAttribute('aria-pressed', String(source));
  button.textContent = source ? 'A/B: hearing the source' : 'A/B: hearing the result';
});
"""
