"""The precision policy (each --dtype choice, auto, what autocast-bf16 keeps in float32) and the
CUDA graph cache's bookkeeping, which needs no GPU."""

from __future__ import annotations

import pytest
import torch

from auk_app.config import DTYPE_CHOICES
from auk_app.runtime import PRECISIONS, GraphCache, autocast, pick_precision

CPU = torch.device("cpu")


def test_every_dtype_choice_names_a_precision():
    assert set(DTYPE_CHOICES) == {"auto", *PRECISIONS}


def test_auto_aliases_and_dtypes():
    assert pick_precision(CPU).name == pick_precision(CPU, "auto").name == "float32"
    assert pick_precision(torch.device("cuda")).name == "bfloat16"
    assert pick_precision(CPU, "bf16") is pick_precision(CPU, torch.bfloat16) is PRECISIONS["bfloat16"]
    with pytest.raises(ValueError, match="autocast-bf16"):
        pick_precision(CPU, "int8")


def test_autocast_bf16_keeps_float32_weights_and_runs_matmuls_in_bf16():
    recipe = pick_precision(CPU, "autocast-bf16")
    assert (recipe.weights, recipe.compute) == (torch.float32, torch.bfloat16)
    layer = torch.nn.Linear(8, 4).to(recipe.weights)
    with autocast(CPU, recipe):
        out = layer(torch.randn(2, 8))
    assert layer.weight.dtype == torch.float32 and out.dtype == torch.bfloat16
    with autocast(CPU, PRECISIONS["float32"]):
        assert layer(torch.randn(2, 8)).dtype == torch.float32 and not torch.is_autocast_enabled("cpu")


def test_the_graph_cache_drops_the_least_recently_used_graph_past_its_size():
    cache, module = GraphCache(2), torch.nn.Linear(2, 2)
    assert not cache.weights_stayed(module)  # the first call has nothing to compare with
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now "b" is the least recently used
    cache.put("c", 3)
    assert (len(cache), cache.get("b"), cache.get("a"), cache.get("c")) == (2, None, 1, 3)


def test_the_graph_cache_empties_itself_when_the_weights_move():
    cache, module = GraphCache(4), torch.nn.BatchNorm1d(3)  # parameters and buffers
    cache.weights_stayed(module)
    cache.put("a", 1)
    assert cache.weights_stayed(module) and cache.get("a") == 1
    module.running_mean = module.running_mean.clone()  # a buffer moved: a graph would replay on freed memory
    assert not cache.weights_stayed(module) and len(cache) == 0
    cache.put("a", 1)
    module.weight.data = module.weight.data.clone()
    assert not cache.weights_stayed(module) and cache.get("a") is None
    assert cache.weights_stayed(module)
