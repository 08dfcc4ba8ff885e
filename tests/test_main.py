"""``python -m auk_app edit``'s contract: a request that cannot be served prints one sentence,
exits with status 2 and writes no file; the command refuses what the app refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from auk_app.__main__ import main
from tests.conftest import REPO

pytestmark = pytest.mark.slow
SR = 24_000


def _tone(seconds: float = 0.5) -> np.ndarray:
    return (0.3 * np.sin(2 * np.pi * 300 * np.arange(int(seconds * SR)) / SR)).astype(np.float32)


def _input(tmp_path, kind: str):
    path = tmp_path / f"{kind}.wav"
    if kind == "rate_zero":
        sf.write(path, _tone(), SR, subtype="PCM_16")
        data = bytearray(path.read_bytes())
        data[24:28] = (0).to_bytes(4, "little")  # the fmt chunk's sample rate
        path.write_bytes(bytes(data))
    elif kind == "huge":
        tone = _tone()
        tone[100] = 1e30
        sf.write(path, tone, SR, subtype="FLOAT")
    elif kind == "silent":
        sf.write(path, np.zeros(SR, np.float32), SR)
    else:
        sf.write(path, _tone(), SR)
    return path


CASES = [
    # (input kind, output relative to tmp_path, extra arguments, words of the one sentence)
    ("good", "missing/out.wav", ["--checkpoint", "no-such-checkpoint"], "the folder"),
    ("good", ".", [], "is a folder; give a file name"),
    ("rate_zero", "out.wav", [], "sample rate is 0 Hz"),
    ("huge", "out.wav", [], "peaks at +600.0 dBFS"),
    ("silent", "out.wav", [], "The clip is silent"),
    ("good", "out.wav", ["--device", "cuda"], "is not available here"),
    ("good", "out.wav", ["--device", "quantum"], "Unknown device 'quantum'"),
]


@pytest.mark.parametrize(("kind", "output", "extra", "words"), CASES, ids=[c[3] for c in CASES])
def test_a_request_that_cannot_be_served_is_one_sentence_and_status_2(tmp_path, capsys, kind, output, extra, words):
    # In this process (``python -m auk_app`` exits with main()'s status): a subprocess per case would cost
    # seconds of imports each; test_region_edit_writes_the_whole_file runs the real command.
    source = _input(tmp_path, kind)
    before = set(tmp_path.rglob("*"))
    status = main(["edit", "--input", str(source), "--instruction", "Increase the volume by 6 dB.",
                   "--output", str(tmp_path / output), "--nfe", "2", *extra])
    out, err = capsys.readouterr()
    assert status == 2, err
    assert words in err and err.strip().count("\n") == 0, err
    assert out == "" and set(tmp_path.rglob("*")) == before  # nothing written, not even a partial file


def test_region_edit_writes_the_whole_file(tmp_path):
    source, out = tmp_path / "long.wav", tmp_path / "out.wav"
    t = np.arange(35 * SR) / SR
    sf.write(source, (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), SR, subtype="PCM_16")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "auk_app", "edit", "--input", str(source), "--instruction", "Decrease the volume by 6 dB.",
         "--output", str(out), "--nfe", "2", "--seed", "1", "--region-start", "10", "--region-end", "12.5"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["region"] == [10.0, 12.5]
    before, after = sf.read(source, dtype="int16")[0], sf.read(out, dtype="int16")[0]
    assert after.shape == before.shape
    np.testing.assert_array_equal(after[: 10 * SR], before[: 10 * SR])
    np.testing.assert_array_equal(after[int(12.5 * SR):], before[int(12.5 * SR):])


@pytest.mark.parametrize("name, words", [
    ("a" * 300 + ".wav", "File name too long"),
    ("taken.wav", "Is a directory"),  # taken.wav.part is a folder: write_wav could never write it
])
def test_an_output_that_cannot_be_written_is_refused_before_anything_loads(tmp_path, capsys, monkeypatch, name, words):
    import auk_app.service

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded before the output was tried")

    monkeypatch.setattr(auk_app.service, "Studio", no_loading)
    (tmp_path / "taken.wav.part").mkdir()
    before = set(tmp_path.rglob("*"))
    status = main(["edit", "--input", str(_input(tmp_path, "good")), "--instruction", "Increase the volume by 6 dB.",
                   "--output", str(tmp_path / name), "--nfe", "2"])
    err = capsys.readouterr().err
    assert status == 2 and "cannot be written" in err and words in err and err.strip().count("\n") == 0, err
    assert set(tmp_path.rglob("*")) - before == {tmp_path / "good.wav"}


def test_candidates_are_written_checked_and_listed_best_first(tmp_path, capsys):
    source, out = _input(tmp_path, "good"), tmp_path / "out.wav"
    status = main(["edit", "--input", str(source), "--instruction", "Decrease the volume by 6 dB.",
                   "--output", str(out), "--nfe", "2", "--seed", "7", "--candidates", "3"])
    printed, err = capsys.readouterr()
    assert status == 0, err
    record = json.loads(printed)
    table = record["candidates"]
    assert [row["rank"] for row in table] == [1, 2, 3] and sorted(row["seed"] for row in table) == [7, 8, 9]
    assert record["seed"] == table[0]["seed"] and record["check"] == table[0]["check"]
    assert {"task": "volume", "asked": -6.0, "unit": "dB", "tolerance": 1.0}.items() <= record["check"].items()
    assert f"check: {record['check']['display']}" in err
    assert table[0]["file"] == str(out)
    assert [row["file"] for row in table[1:]] == [str(tmp_path / f"out_seed{row['seed']}.wav") for row in table[1:]]
    assert all(sf.info(row["file"]).frames == 12_000 for row in table)


def test_candidates_out_of_range_are_one_sentence_before_anything_loads(tmp_path, capsys):
    status = main(["edit", "--input", str(_input(tmp_path, "good")), "--instruction", "Decrease the volume by 6 dB.",
                   "--output", str(tmp_path / "out.wav"), "--candidates", "9"])
    _, err = capsys.readouterr()
    assert status == 2 and err.strip() == ("candidates is how many seeds of the edit to run and rank, a whole number "
                                           "from 1 to 8; got 9.")
    assert not (tmp_path / "out.wav").exists()


def test_help_lists_every_knob_the_api_takes():
    from auk_app.knobs import EDIT

    done = subprocess.run([sys.executable, "-m", "auk_app", "edit", "--help"], capture_output=True, text=True,
                          timeout=60, cwd=REPO, check=True)
    for knob in EDIT:
        assert f"--{knob.name.replace('_', '-')}" in done.stdout, knob.name


def test_a_candidate_that_cannot_be_written_leaves_no_file_behind(tmp_path, capsys):
    """With one candidate's file unwritable (a folder stands where it goes), the command fails in one
    sentence and removes the WAVs it had written, the best's included."""
    source, out = _input(tmp_path, "good"), tmp_path / "out.wav"
    (tmp_path / "out_seed8.wav.part").mkdir()  # write_wav's temporary name for seed 8
    before = set(tmp_path.rglob("*"))
    status = main(["edit", "--input", str(source), "--instruction", "Decrease the volume by 6 dB.",
                   "--output", str(out), "--nfe", "2", "--seed", "7", "--candidates", "3"])
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the model's loading bar
    assert status == 2 and "Is a directory" in last, last
    assert set(tmp_path.rglob("*")) == before


def test_the_running_docs_name_every_option_of_the_app_and_the_command_line():
    """docs/running.md says it has every option: each flag of ``app.py`` and of ``python -m auk_app
    edit`` is named there (a switch by either of its names)."""
    import re

    from app import build_parser

    from auk_app.__main__ import _parser

    edit = next(a for a in _parser()._actions if a.dest == "command").choices["edit"]
    flags = {tuple(a.option_strings) for p in (build_parser(), edit) for a in p._actions if a.option_strings}
    flags.discard(("-h", "--help"))
    docs = (REPO / "docs" / "running.md").read_text()
    missing = [names for names in flags if not any(re.search(rf"(?<![\w-]){n}(?![\w-])", docs) for n in names)]
    assert len(flags) > 30 and not missing, missing
