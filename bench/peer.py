"""vLLM-Omni's own AuK transformer, the peer ``bench_speed`` times beside ours on the same shapes,
weights and device.

It comes from vLLM-Omni's PyPI wheel (``requirements-peer.txt``), which ``.ci/peer_wheel``
downloads into ``.peer/`` without its dependencies, and is read where it lies: the wheel's
``vllm_omni/diffusion/models/auk/auk_transformer.py`` imports torch and the standard library
alone, so :mod:`zipimport` loads that one file from the archive without running the package's
``__init__`` (which starts vLLM) and without installing anything. Installing vLLM-Omni instead
would bring its pins (transformers < 5.15, diffusers, cache-dit, CUDA-only attention wheels) into
an environment that holds transformers 5.24, and the serving engine is not what is timed.

The peer's paths are its own: its ``sample_latents`` (the full ``forward`` per Euler step, CFG
rows doubled inside, the text projection cached on the module), run eagerly, and compiled as its
model runner compiles a diffusion transformer. The runner's default ("regional") compiles only the
blocks a model lists in ``_repeated_blocks``, which this transformer does not declare, so by
default vLLM-Omni serves it eagerly; its "full" granularity is ``model.compile(dynamic=True)``,
which :func:`compile_as_served` applies. It has no CUDA graph path for AuK.
"""

from __future__ import annotations

import os
import zipimport
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
PEER = "vllm-omni"
PEER_VERSION = "0.30.0"  # requirements-peer.txt pins the same
PEER_DIR = ROOT / ".peer"
MODULE_DIR = "vllm_omni/diffusion/models/auk"
MODULE = "auk_transformer"


def find_wheel(folder: Path | None = None) -> Path | None:
    """The pinned wheel in ``folder`` (``VLLM_OMNI_WHEEL_DIR``, else ``.peer/``), or None."""
    folder = Path(folder or os.environ.get("VLLM_OMNI_WHEEL_DIR") or PEER_DIR)
    found = sorted(folder.glob(f"vllm_omni-{PEER_VERSION}-*.whl"))
    return found[0] if found else None


def load_module(wheel: Path) -> ModuleType:
    """The wheel's AuK transformer module, loaded from the archive by itself."""
    spec = zipimport.zipimporter(f"{wheel}/{MODULE_DIR}").find_spec(MODULE)
    if spec is None:
        raise FileNotFoundError(f"{wheel.name} holds no {MODULE_DIR}/{MODULE}.py")
    module = ModuleType(spec.name)
    module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
    spec.loader.exec_module(module)
    return module


def peer_of(ours: nn.Module, config: dict, module: ModuleType) -> nn.Module:
    """The peer's transformer with ``config`` (the constructor arguments both take) holding ``ours``'s
    weights (the release's key layout in both, loaded strictly), on its device, in its dtype."""
    param = next(ours.parameters())
    peer = module.AuKTransformer(**config)
    peer.load_state_dict(ours.state_dict(), strict=True)
    return peer.to(device=param.device, dtype=param.dtype).eval().requires_grad_(False)


def regional_compile_applies(module: ModuleType) -> bool:
    """Whether vLLM-Omni's default (regional) compilation would touch this transformer at all."""
    return bool(getattr(module.AuKTransformer, "_repeated_blocks", None))


def compile_as_served(peer: nn.Module) -> nn.Module:
    """The peer compiled as vLLM-Omni's "full" compile granularity does (dynamic shapes)."""
    peer.compile(dynamic=True)
    return peer


def peer_sampler(module: ModuleType):
    """The peer's ``sample_latents`` with our bench's calling convention: a seed drawn on the device
    from its own generator (the same numbers as ours), the Euler state in float32."""

    def sample(dit, *, seed: int, **kwargs):
        device = next(dit.parameters()).device
        generator = torch.Generator(device=device).manual_seed(seed)
        return module.sample_latents(dit, generator=generator, dtype=torch.float32, device=device, **kwargs)

    return sample
