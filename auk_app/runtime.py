"""The one device and dtype policy: decided here, passed down, never probed at import."""

from __future__ import annotations

import contextlib

import torch

from auk_app.errors import InputError

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


def pick_device(requested: str | torch.device | None = None) -> torch.device:
    """``requested`` if given and present, else the first CUDA device, else the CPU."""
    if not requested or requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except (RuntimeError, TypeError):
        raise InputError(f"Unknown device {requested!r}. Use auto, cpu, cuda or cuda:N.") from None
    if device.type == "cpu" or (device.type == "cuda" and (device.index or 0) < torch.cuda.device_count()):
        return device
    raise InputError(
        f"The device {str(requested)!r} is not available here (this PyTorch build sees "
        f"{torch.cuda.device_count()} CUDA device(s)). Use auto or cpu."
    )


def pick_dtype(device: torch.device, requested: str | torch.dtype | None = None) -> torch.dtype:
    """Weights dtype for the DiT and the text encoder: bf16 on CUDA, float32 elsewhere.

    The VAE, the rotary angles, the noise and the Euler state stay float32 regardless.
    """
    if isinstance(requested, torch.dtype):
        return requested
    if requested and requested != "auto":
        if requested not in DTYPES:
            raise InputError(f"Unknown dtype {requested!r}. Use one of: auto, {', '.join(DTYPES)}.")
        return DTYPES[requested]
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def autocast(device: torch.device, dtype: torch.dtype):
    """bf16/fp16 autocast where the weights are half precision (LayerNorm and softmax then run
    in float32); a no-op context in float32."""
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)
