"""bench_speed's CPU mode at its smallest size: every figure is produced, the paths agree."""

import datetime
import json
import math

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


def test_the_optimised_paths_give_the_eager_results_on_the_cpu(result):
    # Off CUDA both samplers run the same float32 step on the same context: identical latents.
    assert result["auk_base_max_abs_diff"] == 0.0 and result["auk_flash_max_abs_diff"] == 0.0
    assert result["audex_same_tokens"] is True
    assert result["dit_graph_buckets"] == 0  # nothing is captured off CUDA


def test_gpu_results_are_named_by_date_and_gpu():
    path = results_path("NVIDIA H200", datetime.date(2026, 1, 2))
    assert path.name == "2026-01-02-nvidia-h200.json" and path.parent.name == "results"
