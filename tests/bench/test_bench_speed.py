"""bench_speed's CPU mode at its smallest size: every figure is produced, the paths agree."""

import datetime
import json
import math
import os

import pytest
import torch

from bench.bench_speed import FIGURES, measure, results_path


@pytest.fixture(scope="module")
def result():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: a second thread only adds hand-offs on a shared machine
    try:
        return measure("smoke", torch.device("cpu"), repeats=1)
    finally:
        torch.set_num_threads(threads)


def test_every_figure_comes_with_its_eager_baseline_and_ratio(result):
    for name in FIGURES:
        for key in (name, f"eager_{name}", f"speedup_{name}"):
            assert isinstance(result[key], float) and math.isfinite(result[key]) and result[key] > 0, key
    assert result["device"] == "cpu" and result["scaled_down"] is True
    assert result["peak_gpu_memory_gb"] is None and result["eager_peak_gpu_memory_gb"] is None
    assert json.loads(json.dumps(result)) == result  # one plain JSON object
    assert result["auk_edits_per_s_1"] > 0 and result["auk_edits_per_s_8"] > 0 and result["auk_edits_per_s_8_over_1"] > 0
    assert result["auk_edits_per_s_8_packed"] > 0


def test_the_optimised_paths_give_the_eager_results_on_the_cpu(result):
    # Off CUDA both samplers run the same float32 step on the same context: identical latents.
    assert result["auk_base_max_abs_diff"] == 0.0 and result["auk_flash_max_abs_diff"] == 0.0
    assert result["audex_same_tokens"] is True
    assert result["dit_graph_buckets"] == 0  # nothing is captured off CUDA


def test_the_peer_runs_beside_ours_on_the_same_weights(result):
    if result["peer"] is None:
        reason = "no vLLM-Omni wheel in .peer/; fetch it with `.ci/peer_wheel` (or set VLLM_OMNI_WHEEL_DIR)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    assert result["peer"] == "vllm-omni 0.30.0" and result["peer_regional_compile_applies"] is False
    for name in ("auk_base_dit_ms", "auk_flash_dit_ms"):
        theirs, ours = result[f"peer_eager_{name}"], result[f"peer_eager_ours_{name}"]
        assert theirs > 0 and ours > 0 and result[f"vs_peer_eager_{name}"] == pytest.approx(theirs / ours, rel=0.01)
    # Same weights, same noise, float32, every frame valid (both number positions alike): the same latents.
    assert result["peer_auk_base_max_abs_diff"] < 1e-4 and result["peer_auk_flash_max_abs_diff"] < 1e-4


def test_the_knobs_that_skip_dit_rows_are_timed_with_what_they_skipped(result):
    cached, interval = result["auk_base_step_cache_most_steps"], result["auk_base_cfg_interval_steps"]
    assert cached["dit_steps"] == 17 and cached["reused_steps"] == 15  # every other step but the first and last
    assert interval["dit_steps"] == 32 and 0 < interval["guided_steps"] < 32
    for name in ("step_cache_most", "cfg_interval"):
        assert result[f"auk_base_dit_ms_{name}"] > 0 and result[f"speedup_auk_base_dit_ms_{name}"] > 0
        assert 0 < result[f"auk_base_{name}_relative_l2"] < 0.5


def test_gpu_results_are_named_by_date_and_gpu():
    path = results_path("NVIDIA H200", datetime.date(2026, 1, 2))
    assert path.name == "2026-01-02-nvidia-h200.json" and path.parent.name == "results"
