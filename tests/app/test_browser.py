"""The page in a real browser: Debian's chromium, headless, driven over the DevTools protocol.

Loads the app (demo model plus a Flash entry), uploads a WAV, runs an edit, waits for the
result player, checks the seed echo, then checks that choosing Flash locks the sampling knobs;
runs a short text-to-audio generation with the unmasked comparison; and reads every tab at a
phone's and a desktop's width (tabs in sight, Generate by the instruction, nothing cut off
unseen), runs an edit at both, and checks what it leaves on the page.
Screenshots go to the pytest tmp dir and, when AUK_APP_SCREENSHOTS names a folder, also there.
"""

from __future__ import annotations

import json
import os
import time
import shutil
from pathlib import Path

import pytest

from cdp_browser import CHROMIUM, Browser, needs_chromium  # noqa: F401 (a module fixture, used by its name)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)"),  # gradio's pandas use
]



SAMPLING = ("nfe", "cfg", "sway")
LOCKABLE = ("nfe", "cfg")  # Flash locks these; sway, which its grid replaces, is hidden
KNOBS_DISABLED = "[" + ", ".join(f"document.querySelector('#{k} input').disabled" for k in LOCKABLE) + "]"
PLAYER = "#source-audio audio, #source-audio .waveform-container"  # present while a clip is loaded
EXAMPLE_CLIP = "#clip-examples button.gallery-item"  # the first: speech, "Decrease the volume by 10 dB."
SLIDER_VALUES = "[" + ", ".join(f"document.querySelector('#{k} input[type=range]')?.value" for k in SAMPLING) + "]"


@pytest.fixture
def browser(tmp_path):
    page = Browser(tmp_path / "profile")
    yield page
    page.close()


def _keep(shot: Path) -> Path:
    target = os.environ.get("AUK_APP_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / shot.name)
    return shot


def test_upload_edit_and_flash_lock_in_chromium(flash_app, clips, browser, tmp_path):
    browser.goto(flash_app.url)
    browser.wait_for("document.querySelector('#run-edit') !== null")
    assert "demo model is in use" in browser.evaluate("document.querySelector('#demo-banner').innerText")
    # On a desktop the banner is open, and Generate sits right above the result.
    assert browser.evaluate("document.querySelector('#demo-banner-box .label-wrap').classList.contains('open')")
    assert 0 < _top(browser, "#edit-output") - _top(browser, "#run-edit") < 200

    browser.set_files("#source-audio input[type=file]", [clips.voice])
    browser.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 0.60 s')", timeout=30)
    assert browser.evaluate(f"document.querySelector('{PLAYER}') !== null")  # a usable clip stays in the player
    assert browser.evaluate("document.querySelector('#instruction-count').innerText") == "0 / 1,000 characters"
    browser.type_into("#instruction textarea", "Decrease the volume by 10 dB.")
    browser.wait_for("document.querySelector('#instruction-count').innerText === '29 / 1,000 characters'")
    browser.press("Enter", ctrl=True)  # runs the instruction, as Generate does
    wav_url = browser.wait_for(
        "document.querySelector('#edit-output a.download-link[href$=\".wav\"]')?.href", timeout=180)
    browser.wait_for("document.querySelector('#edit-figure img')?.complete")
    browser.wait_for("document.querySelector('#edit-manifest-file') !== null"
                     " && document.querySelector('#seed input').value !== '0'")
    seed = browser.evaluate("document.querySelector('#seed input').value")
    assert f"_seed{seed}.wav" in wav_url  # the used (randomised) seed is written back
    # The edit check, as a card beside the figure: what was asked, what the result measures, a gauge.
    card = browser.wait_for("document.querySelector('#check-card')?.innerText")
    mark, *words = card.split()
    assert mark in "✓✗" and words[:4] == ["Volume", "asked", "−10", "dB"] and "got" in words, card
    assert browser.evaluate("document.querySelector('#check-card svg circle.got') !== null")
    # FLAC and MP3 beside the WAV, named like it.
    for kind in ("flac", "mp3"):
        browser.wait_for(f"document.querySelector('#edit-{kind}-file')?.offsetParent != null")
    assert "loaded: AuK-Tiny (demo)" in browser.evaluate("document.querySelector('#status-line').innerText")
    _keep(browser.screenshot(tmp_path / "auk_studio_edit.png"))
    browser.click("#use-as-input")
    browser.wait_for("document.querySelector('#use-note').innerText.includes('is now the source clip')")
    browser.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 0.60 s')", timeout=30)
    browser.click("#stop-edit")
    browser.wait_for("document.querySelector('#stop-note').innerText.startsWith('Stopped at ')")

    # Two candidates: both play with their check, best first; the second becomes the result.
    browser.type_into("#candidates input[type=number]", "2", replace=True)
    browser.click("#run-edit")
    browser.wait_for("document.querySelector('#candidate-2')?.offsetParent != null"
                     " && document.querySelector('#candidate-2 audio, #candidate-2 .waveform-container') !== null",
                     timeout=180)
    # A ranked list: each candidate's slim player labelled with its place, seed and check; picked by place.
    labels = browser.evaluate("[1, 2].map(k => document.querySelector(`#candidate-${k} [data-testid=block-label]`)"
                              "?.innerText.trim())")
    assert [label[:3] for label in labels] == ["#1 ", "#2 "] and all("asked −10 dB · got " in x for x in labels)
    assert browser.evaluate("[...document.querySelectorAll('#candidate-pick label')].map(l => l.innerText.trim())") \
        == ["#1", "#2"]
    second = labels[1].split(" · ")[1].removeprefix("seed ")
    browser.click("#candidate-pick label:nth-of-type(2) input")
    browser.click("#candidate-result")
    browser.wait_for(f"document.querySelector('#seed input').value === '{second}'", timeout=60)
    assert browser.wait_for(f"document.querySelector('#edit-output a.download-link[href$=\"_seed{second}.wav\"]')"
                            " !== null", timeout=30)
    _keep(browser.screenshot(tmp_path / "auk_studio_candidates.png"))

    browser.click("#advanced .label-wrap")
    browser.wait_for("document.querySelector('#sway input') !== null")  # the accordion renders on opening
    assert browser.evaluate(KNOBS_DISABLED) == [False, False]
    # Sliders at the demo checkpoint's own defaults (nfe 16, cfg 0, sway −1), not boxes that draw empty as 0.
    assert browser.evaluate(SLIDER_VALUES) == ["16", "0", "-1"]
    browser.click("#model input")
    browser.click('li[role=option][aria-label^="AuK-Flash-test"]')
    browser.wait_for(f"{KNOBS_DISABLED}.every(Boolean)", timeout=20)
    assert browser.evaluate(SLIDER_VALUES)[:2] == ["4", "0"]
    assert browser.evaluate("document.querySelector('#sway')?.offsetParent ?? null") is None  # hidden
    assert browser.evaluate("document.querySelector('#t-grid textarea, #t-grid input').disabled")
    assert browser.evaluate("document.querySelector('#t-grid textarea, #t-grid input').value").startswith("0, 0.07612")
    assert "fixed recipe" in browser.evaluate("document.querySelector('#knob-note').innerText")
    _keep(browser.screenshot(tmp_path / "auk_studio_flash_locked.png"))

    browser.click("#model input")
    browser.click('li[role=option][aria-label="AuK-Tiny (demo) · auto"]')
    browser.wait_for(f"!{KNOBS_DISABLED}.some(Boolean)", timeout=20)
    assert browser.evaluate(SLIDER_VALUES) == ["16", "0", "-1"]


def _top(browser: Browser, selector: str) -> float:
    return browser.evaluate(f"document.querySelector('{selector}').getBoundingClientRect().top + window.scrollY")


def _bottom(browser: Browser, selector: str) -> float:
    return browser.evaluate(f"document.querySelector('{selector}').getBoundingClientRect().bottom + window.scrollY")


# The figure's own buttons (fullscreen, download) and the image they belong to, as boxes.
FIGURE_BOXES = """(sel => { const block = document.querySelector(sel);
  const box = (el) => el.getBoundingClientRect().toJSON();
  return [box(block.querySelector('img')), [...block.querySelectorAll('.icon-button-wrapper')].map(box)]; })"""


def _nothing_over_the_figure(browser: Browser, selector: str) -> None:
    """No button of the figure lies over the image, whose top carries the title (the instruction,
    then the peak and RMS line, which runs to its right edge)."""
    image, toolbars = browser.evaluate(f"{FIGURE_BOXES}('{selector}')")
    assert toolbars, selector  # the buttons are there, beside the image
    for bar in toolbars:
        apart = (bar["bottom"] <= image["top"] or bar["top"] >= image["bottom"] or bar["right"] <= image["left"]
                 or bar["left"] >= image["right"])
        assert apart, (selector, bar, image)


def test_on_a_phone_generate_and_the_result_follow_the_instruction_and_the_banner_folds(app, tmp_path):
    """At 420 px: the clip, the instruction, Generate and the result come first, in that order, the
    builder after them; the banner starts folded, as it would fill the first screen."""
    phone = Browser(tmp_path / "phone", width=420, height=900)
    try:
        phone.goto(app.url)
        phone.wait_for("document.querySelector('#run-edit') !== null")
        source, instruction = _top(phone, "#source-audio"), _bottom(phone, "#instruction")
        run, result = _top(phone, "#run-edit"), _top(phone, "#edit-output")
        assert source < instruction < run < result and run - instruction < 700 and result - run < 700
        assert _top(phone, "#builder-task") > result  # the builder and the settings follow the result
        # The banner starts folded on a phone; its header opens and closes it.
        phone.wait_for("!document.querySelector('#demo-banner-box .label-wrap').classList.contains('open')")
        assert phone.evaluate("document.querySelector('#demo-banner')?.offsetParent ?? null") is None
        phone.click("#demo-banner-box .label-wrap")
        phone.wait_for("document.querySelector('#demo-banner')?.innerText.includes('demo model is in use')")
        assert phone.evaluate("document.querySelector('#demo-banner').offsetParent !== null")
        # The demo model makes tones and moves levels: the builder opens on the volume task, without a warning.
        assert "olume" in phone.evaluate("document.querySelector('#builder-task input').value")
        _keep(phone.screenshot(tmp_path / "auk_studio_phone.png"))
    finally:
        phone.close()


def test_text_to_audio_in_chromium(app, browser, tmp_path):
    browser.goto(app.url)
    browser.wait_for("document.querySelector('#run-edit') !== null")
    banner = browser.click_until("button[role=tab]:nth-of-type(2)",  # "Text to audio (Audex)"
                                 "document.querySelector('#audex-banner')?.innerText")
    assert "Audex-Tiny" in banner and "in digits or words" in banner  # words work too (test_audex_tiny_bars.py)
    browser.type_into("#max-seconds input", "0.5", replace=True)
    browser.click("#compare-unmasked input")
    browser.type_into("#caption textarea", "rain on a tin roof")
    browser.press("Enter", ctrl=True)  # runs the caption, as Generate sound does
    browser.wait_for("document.querySelector('#audex-output a.download-link[href$=\".wav\"]') !== null", timeout=120)
    assert browser.evaluate("document.querySelector('#caption textarea').value") == "rain on a tin roof"  # no new line
    # The words the demo does not know stay named beside the sound, not only in a toast.
    assert '"rain", "tin" and "roof"' in browser.wait_for("document.querySelector('#audex-warnings')?.offsetParent"
                                                         " && document.querySelector('#audex-warnings').innerText")
    table = browser.wait_for("document.querySelector('#rvq-report table')?.innerText")
    assert "With the phase mask" in table and "Without the mask" in table
    browser.wait_for("document.querySelector('#audex-flac-file')?.offsetParent != null")  # beside the WAV
    browser.wait_for("document.querySelector('#audex-figure img')?.complete")
    _nothing_over_the_figure(browser, "#audex-figure")
    _keep(browser.screenshot(tmp_path / "auk_studio_text_to_audio.png"))


def test_switching_the_builders_task_is_clean_and_the_api_tab_names_this_server(app, clips, browser, capfd):
    browser.goto(app.url)
    # The Edit tab, as a person would pick it: the page may open on the tab the last visit left.
    browser.click_until("button[role=tab]:nth-of-type(1)",
                        "document.querySelector('#builder-task input')?.getBoundingClientRect().width > 0")
    pitch = 'li[role=option][aria-label="Acoustic editing · Pitch"]'
    # Retried: a click while the page still lays itself out can miss the box, leaving the list shut.
    browser.click_until("#builder-task input", f"document.querySelector('{pitch}') !== null")
    browser.click(pitch)
    browser.wait_for("document.querySelector('#builder-preview').innerText"
                     ".includes('Raise the pitch by 2 semitones.')", timeout=60)
    browser.wait_for("document.querySelector('#builder-mode input').value === 'Raise'")
    time.sleep(1)  # any late event of the switch has reached the server
    out, err = capfd.readouterr()
    assert "is not in the list of choices" not in out + err  # Volume's "Decrease" read against Pitch's choices
    browser.set_files("#source-audio input[type=file]", [clips.silent])
    browser.wait_for("document.querySelector('#upload-verdict').innerText.includes('Refused')", timeout=60)
    # The refused clip leaves the player (back to its upload prompt), and the refusal stays on screen.
    browser.wait_for(f"document.querySelector('{PLAYER}') === null")
    time.sleep(1)
    assert "silent" in browser.evaluate("document.querySelector('#upload-verdict').innerText")
    # Generate then names the refused file, not the duration that no empty player can give.
    browser.type_into("#instruction textarea", "Decrease the volume by 10 dB.")
    browser.click("#run-edit")
    refusal = browser.wait_for("[...document.querySelectorAll('[data-testid=toast-text], .validation-error, .error')]"
                               ".map(e => e.innerText).find(t => t.includes('was refused'))", timeout=30)
    assert "The upload silent.wav was refused" in refusal and "set the duration" in refusal, refusal
    assert "cannot infer a duration" not in browser.evaluate("document.body.innerText")
    page = browser.click_until("button[role=tab]:nth-of-type(3)",  # "API"
                               "document.querySelector('#api-page')?.innerText")
    assert f'Client("{app.url}")' in page and "region_start" in page and "headroom" in page


def test_an_example_clip_fills_the_source_and_instruction_and_is_checked(app, browser):
    """One click on an example clip's button loads it (with its verdict) and its instruction."""
    browser.goto(app.url)
    browser.wait_for(f"document.querySelector('{EXAMPLE_CLIP}') !== null")
    # Retried (loading an example is safe to repeat): a click while the page lays itself out can miss.
    browser.click_until(EXAMPLE_CLIP, "document.querySelector('#instruction textarea').value")
    browser.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 2.05 s')", timeout=60)
    assert browser.evaluate("document.querySelector('#instruction textarea').value") == "Decrease the volume by 10 dB."
    assert browser.evaluate(f"document.querySelector('{PLAYER}') !== null")


def test_the_result_plays_while_its_figure_is_still_drawing(app, clips, browser, monkeypatch):
    """With drawing held on an Event (in this process, where the app runs), the result's WAV reaches
    the page; the figure and the FLAC/MP3 buttons follow once it is released."""
    import threading

    from auk_app.ui import figures

    release, draw = threading.Event(), figures.before_after
    monkeypatch.setattr(figures, "before_after", lambda *a, **k: (release.wait(120), draw(*a, **k))[1])
    try:
        browser.goto(app.url)
        browser.wait_for("document.querySelector('#run-edit') !== null")
        browser.set_files("#source-audio input[type=file]", [clips.voice])
        browser.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 0.60 s')", timeout=30)
        browser.type_into("#instruction textarea", "Decrease the volume by 10 dB.")
        browser.click("#run-edit")
        browser.wait_for("document.querySelector('#edit-output a.download-link[href$=\".wav\"]') !== null",
                         timeout=180)
        assert browser.evaluate("document.querySelector('#edit-figure img') === null")  # still drawing
    finally:
        release.set()
    browser.wait_for("document.querySelector('#edit-figure img')?.complete", timeout=120)
    browser.wait_for("document.querySelector('#edit-flac-file')?.offsetParent != null")


# ----------------------------------------------------------------------------- the page at two widths

WIDTHS = [360, 390, 420, 1280]  # the narrowest phones, two common ones, a laptop
# Every visible element that reaches past the window's right edge outside a box that scrolls
# sideways; every box that scrolls sideways, with the height of its bar (0: nothing shows that it
# scrolls); and every box that cuts its content off sideways without scrolling. Text fields scroll
# their text as it is typed, and screen-reader-only text is meant to be invisible: both are left out.
OVERFLOW = """(() => {
  const width = document.documentElement.clientWidth;
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + (el.innerText || '').slice(0, 30);
  const found = {beyond: [], scrollers: [], cut: []};
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (el.offsetParent === null || box.width === 0 || box.height === 0) continue;
    if (el.matches('input, textarea, .sr-only, .sr-only *')) continue;
    let inScroller = false;
    for (let up = el.parentElement; up && !inScroller; up = up.parentElement) {
      inScroller = scrolls(up) && up.scrollWidth > up.clientWidth + 1;
    }
    if (!inScroller && box.right > width + 1) found.beyond.push(name(el));
    if (el.scrollWidth > el.clientWidth + 1) {
      if (scrolls(el)) found.scrollers.push([name(el), el.offsetHeight - el.clientHeight]);
      else if (getComputedStyle(el).overflowX !== 'visible') found.cut.push(name(el));
    }
  }
  return found;
})()"""
# Each visible dropdown whose text can run under its arrow: the field's content box reaches past the arrow.
UNDER_THE_ARROW = """[...document.querySelectorAll('.secondary-wrap')].filter((wrap) => {
  const field = wrap.querySelector('input'), arrow = wrap.querySelector('.icon-wrap');
  if (!field || !arrow || field.offsetParent === null) return false;
  const right = field.getBoundingClientRect().right - parseFloat(getComputedStyle(field).paddingRight);
  return right > arrow.getBoundingClientRect().left + 1;
}).map((wrap) => wrap.closest('[id]')?.id)"""
# The visible boxes matching a selector that break a word inside it ("Ca te go ry" in a column a few
# letters wide): a run of letters, digits and underscores whose rendered boxes lie on more than one
# line (a break at a hyphen or a slash is a break between words).
BROKEN_WORDS = """((selector) => [...document.querySelectorAll(selector)].filter((cell) => {
  if (cell.offsetParent === null) return false;
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(/[\\p{L}\\p{N}_]+/gu)) {
      const range = document.createRange();
      range.setStart(node, match.index); range.setEnd(node, match.index + match[0].length);
      const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
      if (tops.size > 1) return true;
    }
  }
  return false;
}).map((cell) => cell.innerText.slice(0, 40)))"""
# Each visible "Randomise seed" box narrower than its label set on one line (the box squeezed beside the seed).
SEED_BOX_SQUEEZED = """[...document.querySelectorAll('[id$=randomize-seed]')].filter((box) => box.offsetParent !== null)
  .filter((box) => {
    const label = box.querySelector('label'); const before = label.style.whiteSpace;
    label.style.whiteSpace = 'nowrap'; const wide = label.scrollWidth; label.style.whiteSpace = before;
    return box.clientWidth + 1 < wide;
  }).map((box) => box.id)"""
# Each cell of the check card whose text is wider than its box, or broken inside a word.
CUT_CELLS = f"""[...document.querySelectorAll('#check-card .values span')].filter((cell) =>
  cell.scrollWidth > cell.clientWidth + 1 || cell.getBoundingClientRect().right
    > document.querySelector('#check-card').getBoundingClientRect().right + 1).map((cell) => cell.innerText)
  .concat({BROKEN_WORDS}('#check-card .values span'))"""
TABS = """[...document.querySelectorAll('button[role=tab]')].map((tab) => {
  const box = tab.getBoundingClientRect();
  return [tab.innerText.trim(), tab.offsetParent !== null && box.left >= 0
          && box.right <= document.documentElement.clientWidth && tab.scrollWidth <= tab.clientWidth];
})"""
TAB_LABELS = ["Edit & generate (AuK)", "Text to audio (Audex)", "API", "About", "Batch"]


def _read_tab(browser: Browser, number: int, ready: str) -> dict:
    """Open tab ``number`` (from 1), wait for ``ready``, and check what the tests of every tab check."""
    browser.click_until(f"button[role=tab]:nth-of-type({number})", ready)
    time.sleep(1)  # the tab's blocks finish laying themselves out
    assert browser.evaluate(TABS) == [[label, True] for label in TAB_LABELS]  # every tab in sight, whole
    assert browser.evaluate("document.querySelector('button[aria-label=\"More tabs\"]')?.offsetParent ?? null") is None
    found = browser.evaluate(OVERFLOW)
    assert found["beyond"] == [] and found["cut"] == [], found
    assert all(bar > 0 for _, bar in found["scrollers"]), found  # what scrolls sideways shows its bar
    assert browser.evaluate(UNDER_THE_ARROW) == []
    return found


@pytest.mark.parametrize("width", WIDTHS)
def test_every_tab_reads_at_a_phones_and_a_desktops_width(app, tmp_path, width):
    """Every tab in sight with its whole label; Generate within 700 px (under a screen) below the
    instruction, and Generate sound below the caption; nothing reaching past the column's edge unless it
    scrolls and shows that it does; no dropdown's text under its arrow; the app's Chinese has a font."""
    page = Browser(tmp_path / f"w{width}", width=width, height=800)
    try:
        page.goto(app.url)
        page.wait_for("document.querySelector('#run-edit') !== null")
        _read_tab(page, 1, "document.querySelector('#instruction textarea')?.getBoundingClientRect().width > 0")
        assert 0 <= _top(page, "#run-edit") - _bottom(page, "#instruction") < 700
        page.click("#advanced .label-wrap")  # the advanced knobs and the builder's Chinese read too
        page.click("#builder-language label:nth-of-type(2)")
        page.wait_for("document.querySelector('#builder-preview').innerText.includes('将音量')")
        _read_tab(page, 1, "document.querySelector('#nfe input') !== null")
        # The page's own Chinese has a face even where the system has no CJK font: the shipped subset.
        faces = "document.fonts.load(\"16px 'AuK CJK Subset'\", '将音量降低').then(found => found.length)"
        assert page.evaluate(faces) == 1
        _read_tab(page, 2, "document.querySelector('#caption textarea')?.getBoundingClientRect().width > 0")
        assert 0 <= _top(page, "#run-audex") - _bottom(page, "#caption") < 700
        assert page.evaluate(f"{BROKEN_WORDS}('[id$=randomize-seed] label')") == []
        assert page.evaluate(SEED_BOX_SQUEEZED) == []
        assert page.evaluate(f"{BROKEN_WORDS}('[id$=randomize-seed] label')") == []
        assert page.evaluate(SEED_BOX_SQUEEZED) == []
        _read_tab(page, 3, "document.querySelector('#api-page table') !== null")
        assert page.evaluate(f"{BROKEN_WORDS}('#api-page th, #api-page td')") == []
        _read_tab(page, 4, "document.querySelector('#about-page table')?.offsetParent != null")
        assert page.evaluate(f"{BROKEN_WORDS}('#about-page th, #about-page td')") == []
        _keep(page.screenshot(tmp_path / f"auk_studio_about_{width}.png"))
    finally:
        page.close()


@pytest.mark.parametrize("width", [420, 1280])
def test_a_run_at_both_widths_leaves_no_stale_note_renders_its_toast_and_reads(app, tmp_path, width):
    """Stop's note goes when a later run is started; a warning toast shows its Markdown rendered, not
    backticks; the region is shaded on the source's waveform; the check card stands by the figure,
    whose smallest text is at least 9.5 px high at the column's width and whose buttons leave its title
    in sight."""
    from auk_app.ui import figures

    page = Browser(tmp_path / f"run{width}", width=width, height=900)
    try:
        page.goto(app.url)
        page.wait_for(f"document.querySelector('{EXAMPLE_CLIP}') !== null")
        page.click_until(EXAMPLE_CLIP, "document.querySelector('#instruction textarea').value")
        page.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 2.05 s')", timeout=60)
        page.click("#stop-edit")
        page.wait_for("document.querySelector('#stop-note').innerText.startsWith('Stopped at ')")
        page.type_into("#region-start input", "0.5", replace=True)
        page.type_into("#region-end input", "1.5", replace=True)
        shade = page.wait_for("(() => { const s = document.querySelector('#source-audio .region-shade');"
                              " return s && [parseFloat(s.style.left), parseFloat(s.style.width)]; })()")
        assert abs(shade[0] - 100 * 0.5 / 2.05) < 0.5 and abs(shade[1] - 100 * 1.0 / 2.05) < 0.5, shade
        # Speed is a task the demo was not trained for: the warning names the weights' download commands.
        page.type_into("#instruction textarea", "Adjust the speech speed to 1.5x.", replace=True)
        page.click("#run-edit")
        toast = page.wait_for("document.querySelector('[data-testid=toast-text]')?.innerHTML", timeout=60)
        assert "`" not in toast and "<code>hf download tencent/AuK" in toast, toast
        page.wait_for("document.querySelector('#edit-figure img')?.complete", timeout=240)
        assert page.evaluate("document.querySelector('#stop-note').innerText.trim()") == ""
        assert "Speed" in page.wait_for("document.querySelector('#check-card')?.innerText")
        # The warning stays beside its result once the toasts are gone, and no cell of the card is cut.
        assert "not trained" in page.wait_for("document.querySelector('#edit-warnings')?.offsetParent && "
                                              "document.querySelector('#edit-warnings').innerText")
        page.wait_for("document.querySelector('[data-testid=toast-text]') === null", timeout=30)
        assert "not trained" in page.evaluate("document.querySelector('#edit-warnings').innerText")
        assert page.evaluate(CUT_CELLS) == [], page.evaluate("document.querySelector('#check-card').innerText")
        card, figure = (page.evaluate(f"document.querySelector('{s}').getBoundingClientRect().toJSON()")
                        for s in ("#check-card", "#edit-figure img"))
        beside = card["right"] <= figure["left"] and card["top"] < figure["bottom"]
        above = card["bottom"] <= figure["top"] + 1 and figure["top"] - card["bottom"] < 100
        assert (beside if width > 720 else above), (card, figure)
        _nothing_over_the_figure(page, "#edit-figure")
        natural, shown = page.evaluate("(i => [i.naturalWidth, i.clientWidth])(document.querySelector("
                                       "'#edit-figure img'))")
        assert natural == round(figures.WIDTH_INCHES * figures.DPI)
        assert figures.SMALLEST_PT / 72 * figures.DPI * shown / natural >= 9.5, (natural, shown)
        _keep(page.screenshot(tmp_path / f"auk_studio_run_{width}.png"))
    finally:
        page.close()


def test_the_page_says_what_is_still_loading_until_it_is_loaded(demo_dir, gradio_temp, tmp_path):
    """A page opened while the app warms up names what is still loading, and the line goes once it is done."""
    import threading

    from auk_app.service import Studio, StudioConfig
    from auk_app.ui.warming import Warming
    from tests.app.conftest import launched

    release = threading.Event()
    warming = Warming([("a slow model", lambda: release.wait(120))])
    page = Browser(tmp_path / "loading", width=1280, height=900)
    try:
        with launched(Studio(StudioConfig(demo_dir=demo_dir, device="cpu")), warming) as running:
            warming.start()
            page.goto(running.url)
            line = page.wait_for("document.querySelector('#loading-line')?.innerText")
            assert "Still loading: a slow model." in line
            release.set()
            page.wait_for("!document.querySelector('#loading-line')?.offsetParent", timeout=30)
    finally:
        release.set()
        page.close()


# ----------------------------------------------------------------------------- the session's history

ENTRIES = "document.querySelectorAll('#history-panel .history-entry')"
# Plays the edit's result from 0.8 s once it has loaded; the A/B switch should carry on from there.
PLAY_FROM = """(async () => { const result = document.querySelector('#history-panel .ab-result');
  result.preload = 'auto'; result.load();
  await new Promise((loaded) => result.addEventListener('loadedmetadata', loaded, {once: true}));
  result.currentTime = 0.8; await result.play(); return !result.paused; })()"""
HEARING = """(() => { const entry = document.querySelector('#history-panel .history-entry');
  const [result, source] = ['.ab-result', '.ab-source'].map((s) => entry.querySelector(s));
  const shown = result.hidden ? source : result, hidden = result.hidden ? result : source;
  return {source: shown === source, playing: !shown.paused, at: shown.currentTime, other_paused: hidden.paused,
          other_hidden: hidden.hidden, pressed: entry.querySelector('[data-action=ab]').getAttribute('aria-pressed')};
})()"""


def _files_of(page: Browser, selector: str) -> list[str]:
    """The server paths of the players' files in the history entry at ``selector``."""
    from urllib.parse import unquote

    srcs = page.evaluate(f"[...document.querySelectorAll('{selector} audio')].map(a => a.getAttribute('src'))")
    return [unquote(src.split("file=", 1)[1]) for src in srcs]


def _three_seconds(folder: Path) -> Path:
    """A 3 s clip of its own (the example clips' cached copies go when another app of this session closes)."""
    import numpy as np
    import soundfile as sf

    t = np.arange(3 * 24_000) / 24_000
    wav = 0.3 * np.sin(2 * np.pi * 200 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    sf.write(folder / "three_seconds.wav", wav.astype(np.float32), 24_000, subtype="PCM_16")
    return folder / "three_seconds.wav"


def _edit_and_switch_a_b(page: Browser, clip: Path) -> str:
    """An edit of ``clip``; its entry, then A/B from the result to the source at the same position
    while it plays, and back. Returns the entry's seed."""
    assert "No results yet" in page.wait_for("document.querySelector('#history-panel')?.innerText")
    page.set_files("#source-audio input[type=file]", [clip])
    page.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 3.00 s')", timeout=60)
    page.type_into("#instruction textarea", "Decrease the volume by 10 dB.")
    page.click("#run-edit")
    meta = page.wait_for("document.querySelector('#history-panel .history-meta')?.innerText", timeout=240)
    seed = page.wait_for("(v => v !== '0' && v)(document.querySelector('#seed input').value)")
    assert page.evaluate(f"{ENTRIES}.length") == 1
    assert page.evaluate("document.querySelector('#history-panel .history-title').innerText") == \
        "Decrease the volume by 10 dB."
    assert meta.startswith(f"Edit · AuK-Tiny (demo) · seed {seed} · asked −10 dB · got ") and meta.endswith(" UTC")
    assert page.evaluate(PLAY_FROM) is True
    page.click("#history-panel [data-action=ab]")
    heard = page.wait_for(f"(h => h.source && h.playing && h)({HEARING})", timeout=10)
    # At the result's position: it played from 0.8 s, and the switch came within a second or so.
    assert 0.8 <= heard["at"] < 2.5 and heard["other_paused"] and heard["other_hidden"] and heard["pressed"] == "true"
    page.click("#history-panel [data-action=ab]")
    back = page.wait_for(f"(h => !h.source && h)({HEARING})", timeout=10)
    assert back["at"] >= heard["at"] and back["pressed"] == "false"
    page.evaluate("document.querySelectorAll('#history-panel audio').forEach(a => a.pause())")
    return seed


def _make_a_sound(page: Browser) -> None:
    page.click_until("button[role=tab]:nth-of-type(2)",
                     "document.querySelector('#caption textarea')?.getBoundingClientRect().width > 0")
    page.type_into("#caption textarea", "A 440 Hz beep lasting one second")
    page.type_into("#max-seconds input", "0.5", replace=True)
    page.click("#run-audex")
    page.wait_for(f"{ENTRIES}.length === 2", timeout=120)
    assert page.evaluate("document.querySelector('#history-panel .history-title').innerText") == \
        "A 440 Hz beep lasting one second"  # the newest first
    assert "Text to audio · Audex-Tiny (demo) · seed " in page.evaluate(
        "document.querySelector('#history-panel .history-meta').innerText")


def _restores_the_edit(page: Browser, seed: str) -> None:
    """A click on the edit's title: the Edit tab with its instruction, its seed and no fresh draw, and
    its source clip back in the player."""
    page.click("#history-panel .history-entry:nth-child(2) .history-title")
    page.wait_for("document.querySelector('#instruction textarea').value === 'Decrease the volume by 10 dB.'"
                  " && document.querySelector('#instruction textarea').getBoundingClientRect().width > 0", timeout=30)
    page.wait_for(f"document.querySelector('#seed input').value === '{seed}'")
    page.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 3.00 s')", timeout=60)
    assert page.evaluate("document.querySelector('#randomize-seed input').checked") is False
    assert f"seed {seed}" in page.evaluate("document.querySelector('#history-note').innerText")


@pytest.mark.parametrize("width", [420, 1280])
def test_the_history_lists_switches_a_b_restores_zips_and_survives_a_reload(app, tmp_path, width):
    import io
    import zipfile

    import httpx

    page = Browser(tmp_path / f"history{width}", width=width, height=900)
    try:
        page.goto(app.url)
        page.wait_for("document.querySelector('#run-edit') !== null")
        seed = _edit_and_switch_a_b(page, _three_seconds(tmp_path))
        page.type_into("#instruction textarea", "Raise the pitch by 2 semitones.", replace=True)
        _make_a_sound(page)
        _restores_the_edit(page, seed)

        page.goto(app.url)  # a reload: the list comes back from the browser, players and all
        page.wait_for(f"{ENTRIES}.length === 2 && document.querySelectorAll('#history-panel audio').length === 3")
        page.click("#history-panel .history-entry:nth-child(1) [data-action=source]")  # the sound, into the edit
        page.wait_for("document.querySelector('#use-note').innerText.includes('is now the source clip')")
        page.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 0.50 s')", timeout=60)

        page.click("#history-download")
        link = page.wait_for("document.querySelector('#history-zip a')?.href", timeout=60)
        with zipfile.ZipFile(io.BytesIO(httpx.get(link, timeout=60).content)) as archive:
            names = archive.namelist()
            listed = json.loads(archive.read("history.json"))
        assert [n[:3] + Path(n).suffix for n in names[:4]] == ["01_.wav", "01_.json", "02_.wav", "02_.json"]
        assert names[4:] == ["history.json"]
        assert [e["kind"] for e in listed] == ["edit", "audex"] and str(listed[0]["seed"]) == seed

        # The edit's files gone (as after an hour): it says so, and still restores its settings.
        for path in _files_of(page, "#history-panel .history-entry:nth-child(2) .history-players"):
            if "auk_studio" in path:  # the result, not the source clip
                os.remove(path)
        page.goto(app.url)
        page.wait_for("document.querySelector('#history-panel .history-entry:nth-child(2) .history-gone')"
                      "?.innerText.includes('no longer kept')")
        page.type_into("#instruction textarea", "Raise the pitch by 2 semitones.", replace=True)
        _restores_the_edit(page, seed)
        found = page.evaluate(OVERFLOW)
        assert found["beyond"] == [] and found["cut"] == [], found  # the panel fits the page at both widths
        _keep(page.screenshot(tmp_path / f"auk_studio_history_{width}.png"))
    finally:
        page.close()
