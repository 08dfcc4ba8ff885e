"""The precision policy: each --dtype choice, auto, and what autocast-bf16 keeps in float32."""

from __future__ import annotations

import pytest
import torch

from auk_app.config import DTYPE_CHOICES
from auk_app.runtime import PRECISIONS, autocast, pick_precision

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
