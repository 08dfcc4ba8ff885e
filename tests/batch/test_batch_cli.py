"""``python -m auk_app batch`` as a person runs it, on the demo model: a manifest of good and bad
rows, the outputs, the submission folder and the report; a second run that keeps every finished
item and redoes only the one whose knobs changed; Ctrl-C, which leaves only whole items."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import REPO

pytestmark = pytest.mark.slow
RATE = 24_000


def _batch(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auk_app", "batch", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, **kwargs)


def _tone(path: Path, hz: float, seconds: float) -> Path:
    t = np.arange(round(seconds * RATE)) / RATE
    sf.write(str(path), (0.2 * np.sin(2 * np.pi * hz * t)).astype(np.float32), RATE)
    return path


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


ROWS = [
    {"id": "up", "audio": "a.wav", "instruction": "Raise the pitch by 2 semitones."},
    {"id": "down", "audio": "b.wav", "instruction": "Decrease the volume by 6 dB.", "seed": 5},
    {"id": "gone", "audio": "missing.wav", "instruction": "Decrease the volume by 6 dB."},
    {"id": "blank", "audio": "a.wav", "instruction": ""},
    {"id": "long", "audio": "long.wav", "instruction": "Decrease the volume by 6 dB.", "candidates": 2},
    {"id": "odd", "audio": "a.wav", "instruction": "Decrease the volume by 6 dB.", "colour": "red"},
    {"id": "steps", "audio": "a.wav", "instruction": "Decrease the volume by 6 dB.", "nfe": 999},
    {"id": "beep", "instruction": "Generate a 450 Hz sine tone.", "seconds": 1.5},
]


def test_a_manifest_of_good_and_bad_rows_writes_outputs_submission_and_report_and_resumes(tmp_path):
    _tone(tmp_path / "a.wav", 220, 1.5)
    _tone(tmp_path / "b.wav", 330, 1.2)
    _tone(tmp_path / "long.wav", 220, 31.0)  # over the 30 s of a clip, and no edit that runs whole
    manifest, out = _write(tmp_path / "set.jsonl", ROWS), tmp_path / "out"
    done = _batch(manifest, "--out", out, "--submission", "--nfe", 8)
    assert done.returncode == 1, done.stderr  # some rows failed; the others ran
    assert "8 items: 3 done, 0 kept from a run before, 5 failed." in done.stdout
    for sentence in ("Row 3 (gone): the audio file missing.wav does not exist", "Row 4 (blank): The instruction is empty",
                     "Row 5 (long):", "Row 6 (odd): the column 'colour'", "Row 7 (steps): nfe (Euler steps) must be"):
        assert sentence in done.stderr, sentence
    assert sorted(p.name for p in out.glob("*.wav")) == ["beep.wav", "down.wav", "up.wav"]
    for name in ("beep", "down", "up"):
        manifest_json = json.loads((out / f"{name}.json").read_text())
        assert manifest_json["output"]["file"] == f"{name}.wav" and manifest_json["batch"]["id"] == name
        assert sf.info(str(out / f"{name}.wav")).samplerate == RATE
        info = sf.info(str(out / "submission" / f"{name}.wav"))
        assert (info.samplerate, info.channels, info.subtype) == (16_000, 1, "PCM_16")
    assert json.loads((out / "down.json").read_text())["seed"] == 5
    assert json.loads((out / "down.json").read_text())["requested"]["nfe"] == 8  # the flag is every row's default
    with open(out / "report.csv") as handle:
        report = {row["id"]: row for row in csv.DictReader(handle)}
    assert len(report) == 8 and report["down"]["task"] == "volume" and report["gone"]["status"] == "failed"
    assert float(report["up"]["f0_src_hz"]) == pytest.approx(220, rel=0.01) and report["down"]["rae"]
    markdown = (out / "report.md").read_text()
    assert "| volume | 1 |" in markdown and "## Failed rows (5)" in markdown and "figures/volume.png" in markdown
    assert (out / "figures" / "volume.png").stat().st_size > 1000 and not list(out.rglob("*.part"))

    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.wav")}
    again = _batch(manifest, "--out", out, "--submission", "--nfe", 8)
    assert "8 items: 0 done, 3 kept from a run before, 5 failed." in again.stdout, again.stderr
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.wav")} == stamps
    ROWS[1]["seed"] = 6  # a changed row runs again; the others are kept
    changed = _batch(_write(manifest, ROWS), "--out", out, "--submission", "--nfe", 8)
    ROWS[1]["seed"] = 5
    assert "8 items: 1 done, 2 kept from a run before, 5 failed." in changed.stdout, changed.stderr
    assert json.loads((out / "down.json").read_text())["seed"] == 6
    assert (out / "up.wav").stat().st_mtime_ns == stamps["up.wav"] != (out / "down.wav").stat().st_mtime_ns


def test_an_unreadable_manifest_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "set.jsonl").write_text("{not json\n")
    done = _batch(tmp_path / "set.jsonl", "--out", tmp_path / "out")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith("The manifest set.jsonl is not JSON")
    assert not (tmp_path / "out").exists()


def test_ctrl_c_stops_between_steps_leaves_only_whole_items_and_the_rerun_finishes(tmp_path):
    rows = [{"id": f"item{k}", "audio": "a.wav", "instruction": f"Decrease the volume by {k + 2} dB."} for k in range(6)]
    _tone(tmp_path / "a.wav", 220, 3.0)
    manifest, out = _write(tmp_path / "set.jsonl", rows), tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "auk_app", "batch", str(manifest), "--out", str(out),
                                "--auk-batch", "1", "--nfe", "64"], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list(out.glob("*.json")) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert "run the same command again to resume" in stderr
    finished = sorted(p.stem for p in out.glob("*.json") if p.name != "report.json")
    assert 1 <= len(finished) < 6 and sorted(p.stem for p in out.glob("*.wav")) == finished
    assert not list(out.rglob("*.part"))
    rerun = _batch(manifest, "--out", out, "--nfe", 64)
    assert rerun.returncode == 0 and f"6 items: {6 - len(finished)} done, {len(finished)} kept" in rerun.stdout
