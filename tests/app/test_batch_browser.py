"""The Batch tab in headless Chromium at a desktop's and a phone's width: five clips uploaded with one
instruction, Start, the progress, the results table whose rows play, the figures and the zip."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path
from urllib.request import urlopen

import numpy as np
import pytest
import soundfile as sf

from cdp_browser import Browser, needs_chromium  # noqa: F401 (a module fixture, used by its name)

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")]
RATE = 24_000
ROWS = "document.querySelectorAll('#batch-table div[role=row]').length"  # the body's rows (the header's is a tr)


def _clips(folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    for k in range(5):
        t = np.arange(RATE) / RATE
        sf.write(str(folder / f"clip{k}.wav"), (0.2 * np.sin(2 * np.pi * (200 + 60 * k) * t)).astype(np.float32), RATE)
        paths.append(folder / f"clip{k}.wav")
    return paths


@pytest.mark.parametrize("width", [1280, 420])
def test_the_batch_tab_runs_five_clips_and_gives_the_zip(app, tmp_path, width):
    page = Browser(tmp_path / "profile", width=width, height=900)
    try:
        page.goto(app.url)
        page.click_until("button[role=tab]:nth-of-type(5)",  # "Batch"
                         "document.querySelector('#batch-start')?.getBoundingClientRect().width > 0")
        assert "Up to 12 clips and 10 minutes" in page.evaluate("document.querySelector('#batch-limits').innerText")
        page.set_files("#batch-files input[type=file]", _clips(tmp_path / "clips"))
        page.wait_for("document.querySelectorAll('#batch-files .file-preview tr, #batch-files tr.file').length >= 5",
                      timeout=30)
        page.type_into("#batch-instruction textarea", "Decrease the volume by 6 dB.")
        page.click("#batch-start")
        archive = page.wait_for("document.querySelector('#batch-zip a[href*=\".zip\"]')?.href", timeout=300)
        page.wait_for(f"{ROWS} === 5")
        table = page.evaluate("[...document.querySelectorAll('#batch-table div[role=row]')].map(r => r.innerText)")
        assert all("done" in row and "volume" in row and "asked −6 dB" in row for row in table), table
        assert page.wait_for("document.querySelector('#batch-status').innerText").startswith("5 items: 5 done")
        page.wait_for("document.querySelectorAll('#batch-figures img').length >= 1")
        page.click("#batch-table div[role=row][aria-rowindex='3'] > :first-child")  # the second item's row plays
        page.wait_for("document.querySelector('#batch-player audio[src*=\"clip1\"], "
                      "#batch-player a[href*=\"clip1.wav\"]') !== null", timeout=30)
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")
        with urlopen(archive) as reply:
            (tmp_path / "batch.zip").write_bytes(reply.read())
        names = zipfile.ZipFile(tmp_path / "batch.zip").namelist()
        assert {f"clip{k}.wav" for k in range(5)} | {"report.md", "report.csv"} <= set(names)
        shot = page.screenshot(tmp_path / f"batch_{width}.png")
        if os.environ.get("AUK_APP_SCREENSHOTS"):
            Path(os.environ["AUK_APP_SCREENSHOTS"]).mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, Path(os.environ["AUK_APP_SCREENSHOTS"]) / shot.name)
    finally:
        page.close()
