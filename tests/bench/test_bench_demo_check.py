"""bench_demo --check's study on an oracle edit (exact gains and shifts, numpy and librosa):
the check agrees with the bench's own measures, a wrong edit comes out ✗, and best-of-N ranks."""

import json

import librosa
import numpy as np
import pytest

from auk_app.check import target_from_text
from bench import bench_demo
from bench.bench_demo import check_record, check_study, summarize


def oracle(source, instruction, seconds, seed):
    """Exact volume and pitch edits, a seed-dependent slip of up to 0.3 dB; Chinese gets nothing done."""
    target = target_from_text(instruction)
    if source is None:  # text to tone: the asked sine
        t = np.arange(round(seconds * 24000)) / 24000
        return (0.5 * np.sin(2 * np.pi * target.asked * t)).astype(np.float32)
    if any("\u4e00" <= c <= "\u9fff" for c in instruction):
        return source.copy()
    if target.task == "volume":
        return (source * 10 ** ((target.asked + 0.1 * seed) / 20)).astype(np.float32)
    return librosa.effects.pitch_shift(source, sr=24000, n_steps=target.asked).astype(np.float32)


@pytest.fixture(scope="module")
def study(monkeypatch_module):
    monkeypatch_module.setattr(bench_demo, "CHECK_FAMILIES", ("volume",))
    return check_study(oracle, clips=2, materials=("tone",), seeds=2)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_the_check_agrees_with_the_bench_on_exact_edits(study):
    summary = summarize(study)
    assert summary["agreement"]["volume"]["rate"] == 1.0
    assert summary["agreement"]["tone"]["rate"] == 1.0 and summary["agreement"]["tone"]["outputs"] == 2
    assert all(row["gap"] is not None for row in study["agreement"] if row["task"] == "volume")


def test_chinese_instructions_the_edit_ignores_come_out_failed(study):
    assert [c["passed"] for c in study["chinese"]] == [False, False]
    assert all(c["check"].endswith("✗") for c in study["chinese"])


def test_best_of_n_picks_the_smaller_error(study):
    for row in study["best_of"]:
        assert row["best_seed"] == 0 and row["error_best"] <= row["error_1"]
    assert summarize(study)["best_of"]["volume/tone"]["clips"] == 2


def test_the_record_names_the_checkpoint_by_its_folder_not_its_path(study, tmp_path):
    record = check_record(tmp_path / "AuK-Tiny", clips=2, seeds=2, seconds=1.26, summary=summarize(study), study=study)
    assert record["checkpoint"] == "AuK-Tiny" and record["seconds"] == 1.3
    assert str(tmp_path) not in json.dumps(record, default=float)
