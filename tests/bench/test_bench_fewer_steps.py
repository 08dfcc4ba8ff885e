"""bench_fewer_steps' studies and bench_reproduce's comparison, on the fixtures' DiT and on rows
made here: every setting is measured against the right baseline."""

import numpy as np
import pytest

from bench.bench_fewer_steps import DEMO_SETTINGS, FIXTURE_SETTINGS, demo_summary, fixture_study
from bench.bench_reproduce import compare, pcm16


def test_the_fixture_study_measures_every_setting_against_the_full_solve():
    found = fixture_study(seeds=1)
    assert list(found) == list(FIXTURE_SETTINGS)
    assert found["full"] == {"dit_steps": 1.0, "dit_rows": 1.0, "relative_l2_median": 0.0, "relative_l2_max": 0.0}
    assert found["step_cache 0.3"]["dit_steps"] < 1 and found["step_cache 0.3"]["dit_rows"] < 1
    assert found["cfg_interval 0.1–0.8"]["dit_steps"] == 1 and found["cfg_interval 0.1–0.8"]["dit_rows"] == 50 / 64
    assert all(0 < v["relative_l2_median"] < 0.5 for name, v in found.items() if name != "full")


def _rows(setting: str, scale: float, passed: bool, dit_steps: int) -> list[dict]:
    wav = np.linspace(-0.5, 0.5, 100, dtype=np.float32)
    return [{"case": case, "task": task, "material": "tone", "setting": setting, "passed": passed,
             "error": 0.5 if passed else 3.0, "unit": "dB", "wav": wav * scale, "sample_s": 1.0 * dit_steps / 16,
             "steps": {"dit_steps": dit_steps, "guided_steps": 0}} for case, task in enumerate(("volume", "pitch"))]


def test_the_demo_summary_compares_each_setting_with_its_own_baseline():
    scales = {"default": 1.0, "step_cache 0.05": 1.01, "step_cache 0.08": 1.02, "cfg 1": 2.0,
              "cfg 1, cfg_interval 0.1–0.8": 2.2, "cfg 1, cfg_interval 0.1–1": 2.0}
    rows = [row for name in DEMO_SETTINGS
            for row in _rows(name, scales[name], not name.startswith("cfg"), 12 if "step_cache" in name else 16)]
    found = demo_summary(rows)
    assert found["default"]["wav_relative_rms_median"] == 0 and found["default"]["pass_rate"] == 1
    assert found["step_cache 0.08"]["compared_with"] == "default"
    assert found["step_cache 0.08"]["wav_relative_rms_median"] == pytest.approx(0.02, rel=1e-4)
    assert found["step_cache 0.08"]["sample_time_ratio"] == pytest.approx(0.75)
    assert found["cfg 1, cfg_interval 0.1–0.8"]["compared_with"] == "cfg 1"
    assert found["cfg 1, cfg_interval 0.1–0.8"]["wav_relative_rms_median"] == pytest.approx(0.1, rel=1e-4)
    assert found["cfg 1"]["pass_rate"] == 0 and found["cfg 1"]["median_error"] == {"pitch": 3.0, "volume": 3.0}


def test_pcm16_differences_are_counted_in_lsb():
    wav = np.array([0.0, 0.5, -1.0, 0.999], dtype=np.float32)
    moved = wav + np.array([0.0, 1.2 / 32768, 0.0, -2.0 / 32768], dtype=np.float32)
    assert pcm16(wav).tolist() == [0, 16384, -32768, 32735]
    assert compare(wav, moved) == {"samples": 4, "differing": 2, "max_lsb": 2}
    assert compare(wav, wav.copy()) == {"samples": 4, "differing": 0, "max_lsb": 0}
