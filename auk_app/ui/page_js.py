"""The page's few scripts, run in the browser by events with no server function (``js=``).

Each is a JavaScript function as Gradio expects it: it gets the event's input values and returns
the values of its outputs (none here, except where said).
"""

from __future__ import annotations

from auk_app.ui.style import PHONE_WIDTH

# Folds the demo banner on a narrow screen once the page has loaded (Gradio's accordion has no
# per-device default); a click on its header opens it again.
FOLD_ON_PHONES = f"""() => {{
  if (window.innerWidth < {PHONE_WIDTH}) document.querySelector('#demo-banner-box .label-wrap.open')?.click();
}}"""

# The app's sentences are Markdown (`code`, **bold**), which the page's text blocks render; Gradio's
# toasts take a message as HTML, where the backticks would stand as typed. This renders each toast
# once, in the browser, so API clients still get the sentence as it is.
RENDER_TOASTS = r"""() => {
  const render = (text) => {
    if (text.dataset.rendered) return;
    text.dataset.rendered = '1';
    text.innerHTML = text.innerHTML.replace(/`([^`<]+)`/g, '<code>$1</code>')
                                   .replace(/\*\*([^*<]+)\*\*/g, '<strong>$1</strong>');
  };
  const sweep = () => document.querySelectorAll('[data-testid="toast-text"]').forEach(render);
  new MutationObserver(sweep).observe(document.body, {childList: true, subtree: true, characterData: true});
  sweep();
}"""

# Shades the region being edited on the source player's waveform, from the region's start and end
# (its inputs) and the clip's length, which the browser reads from the clip itself; no region, no shade.
SHADE_REGION = """async (start, end) => {
  await new Promise((wait) => setTimeout(wait, 300));  // the player redraws for a new clip first
  const box = document.querySelector('#source-audio .waveform-container');
  box?.querySelector('.region-shade')?.remove();
  const link = document.querySelector('#source-audio a.download-link')?.href;
  const from = Math.max(0, start || 0);
  if (!box || !link || !(end > from)) return;
  const seconds = await new Promise((done) => {
    const clip = new Audio();
    clip.preload = 'metadata';
    clip.onloadedmetadata = () => done(clip.duration);
    clip.onerror = () => done(NaN);
    clip.src = link;
  });
  if (!(seconds > from)) return;
  box.querySelector('.region-shade')?.remove();
  const shade = document.createElement('div');
  shade.className = 'region-shade';
  shade.title = `edited region: ${from} to ${Math.min(end, seconds)} s`;
  shade.style.left = `${(100 * from) / seconds}%`;
  shade.style.width = `${(100 * (Math.min(end, seconds) - from)) / seconds}%`;
  box.appendChild(shade);
}"""

# Closes every toast still on the page: pressed Generate and an arriving result, whose warnings
# stand beside it (auk_app.ui.result_notes), so one request's toast never covers the next result.
DISMISS_TOASTS = """() => {
  document.querySelectorAll('[data-testid=toast-close]').forEach((close) => close.click());
}"""

# Ctrl+Enter (⌘+Enter on a Mac) in the instruction or the caption runs it, as in a chat box; a plain
# Enter still starts a new line, since an instruction may take several.
RUN_ON_CTRL_ENTER = """() => {
  const runs = {'#instruction': '#run-edit', '#caption': '#run-audex'};
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' || !(event.ctrlKey || event.metaKey)) return;
    for (const [box, button] of Object.entries(runs)) {
      if (event.target.closest?.(box)) {
        event.preventDefault();
        document.querySelector(button)?.click();
      }
    }
  }, true);
}"""


def count_characters(limit: int) -> str:
    """The text box's length against ``limit`` as one types, for the line under it: "12 / 1,000
    characters", and past the limit how far, since the run would be refused."""
    return f"""(text) => {{
  const n = [...(text || '')].length, limit = {limit};
  const shown = n.toLocaleString('en-US') + ' / ' + limit.toLocaleString('en-US') + ' characters';
  return n > limit ? shown + ': ' + (n - limit).toLocaleString('en-US') + ' over the limit, shorten it' : shown;
}}"""
