"""The page in a real browser: Debian's chromium, headless, driven over the DevTools protocol.

Loads the app (demo model plus a Flash entry), uploads a WAV, runs an edit, waits for the
result player, checks the seed echo, then checks that choosing Flash locks the sampling knobs;
and runs a short text-to-audio generation with the unmasked comparison.
Screenshots go to the pytest tmp dir and, when AUK_APP_SCREENSHOTS names a folder, also there.
"""

from __future__ import annotations

import os
import time
import shutil
from pathlib import Path

import pytest

from cdp_browser import CHROMIUM, Browser

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (apt-get install chromium)"),
    pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)"),  # gradio's pandas use
]

SAMPLING = ("nfe", "cfg", "sway")
LOCKABLE = ("nfe", "cfg")  # Flash locks these; sway, which its grid replaces, is hidden
KNOBS_DISABLED = "[" + ", ".join(f"document.querySelector('#{k} input').disabled" for k in LOCKABLE) + "]"
PLAYER = "#source-audio audio, #source-audio .waveform-container"  # present while a clip is loaded
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
    browser.type_into("#instruction textarea", "Decrease the volume by 10 dB.")
    browser.click("#run-edit")
    wav_url = browser.wait_for(
        "document.querySelector('#edit-output a.download-link[href$=\".wav\"]')?.href", timeout=180)
    browser.wait_for("document.querySelector('#edit-figure img')?.complete")
    browser.wait_for("document.querySelector('#edit-manifest-file') !== null"
                     " && document.querySelector('#seed input').value !== '0'")
    seed = browser.evaluate("document.querySelector('#seed input').value")
    assert f"_seed{seed}.wav" in wav_url  # the used (randomised) seed is written back
    # The edit check, right under the result's player.
    assert browser.wait_for("document.querySelector('#edit-check')?.innerText").startswith("asked −10 dB · got ")
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
    labels = browser.evaluate("[...document.querySelectorAll('#candidate-pick label')].map(l => l.innerText)")
    assert [label[:3] for label in labels] == ["#1 ", "#2 "] and all("asked −10 dB · got " in x for x in labels)
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


def test_on_a_phone_the_result_sits_by_generate_and_the_banner_folds(app, tmp_path):
    """At 420 px the result sits within 700 px below Generate, the builder comes before them, and the
    banner starts folded rather than filling the first screen."""
    phone = Browser(tmp_path / "phone", width=420, height=900)
    try:
        phone.goto(app.url)
        phone.wait_for("document.querySelector('#run-edit') !== null")
        run, result = _top(phone, "#run-edit"), _top(phone, "#edit-output")
        assert 0 < result - run < 700, (run, result)
        assert _top(phone, "#builder-task") < run  # the builder comes before the action
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
    assert "Audex-Tiny" in banner
    browser.type_into("#caption textarea", "rain on a tin roof")
    browser.type_into("#max-seconds input", "0.5", replace=True)
    browser.click("#compare-unmasked input")
    browser.click("#run-audex")
    browser.wait_for("document.querySelector('#audex-output a.download-link[href$=\".wav\"]') !== null", timeout=120)
    table = browser.wait_for("document.querySelector('#rvq-report table')?.innerText")
    assert "With the phase mask" in table and "Without the mask" in table
    browser.wait_for("document.querySelector('#audex-flac-file')?.offsetParent != null")  # beside the WAV
    browser.wait_for("document.querySelector('#audex-figure img')?.complete")
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
    page = browser.click_until("button[role=tab]:nth-of-type(3)",  # "API"
                               "document.querySelector('#api-page')?.innerText")
    assert f'Client("{app.url}")' in page and "region_start" in page and "headroom" in page


def test_an_example_clip_fills_the_source_and_instruction_and_is_checked(app, browser):
    """One click on an example clip loads it (with its verdict) and its instruction."""
    browser.goto(app.url)
    browser.wait_for("document.querySelector('#clip-examples tbody tr') !== null")
    # Retried (loading an example is safe to repeat): a click while the page lays itself out can miss.
    browser.click_until("#clip-examples tbody tr", "document.querySelector('#instruction textarea').value")
    browser.wait_for("document.querySelector('#upload-verdict').innerText.includes('Ready: 2.05 s')", timeout=60)
    assert browser.evaluate("document.querySelector('#instruction textarea').value") == "Decrease the volume by 10 dB."
    assert browser.evaluate(f"document.querySelector('{PLAYER}') !== null")


def test_the_result_plays_while_its_figure_is_still_drawing(app, clips, browser, monkeypatch):
    """With drawing held on an Event (in this process, where the app runs), the
    result's WAV reaches the page; the figure and the FLAC/MP3 buttons follow once it is released."""
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
