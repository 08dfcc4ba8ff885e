"""The one place that opens checkpoint files and checks their keys.

Weights are read with safetensors only (never pickle). A file that does not match
the module it is meant for raises one :class:`CheckpointError` that names the file
and every missing, unexpected or wrongly shaped key, so a user can tell a truncated
download from a wrong variant at a glance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from auk_app.errors import CheckpointError

_LISTED = 8  # keys shown per category before "... and N more"


def read_safetensors(path: str | Path, *, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """All tensors of a ``.safetensors`` file; unreadable files raise CheckpointError."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"Checkpoint file {path} does not exist.")
    try:
        with safe_open(str(path), framework="pt", device=str(device)) as f:
            return {key: f.get_tensor(key) for key in f.keys()}
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(
            f"Checkpoint file {path} is not a readable safetensors file ({exc}). "
            "It may be truncated or not a safetensors file: download it again."
        ) from exc


def _listing(label: str, keys: Iterable[str]) -> str:
    keys = sorted(map(str, keys))
    shown = ", ".join(keys[:_LISTED])
    more = f" ... and {len(keys) - _LISTED} more" if len(keys) > _LISTED else ""
    return f"{len(keys)} {label}: {shown}{more}"


def check_state_dict(
    expected: Mapping[str, torch.Size | tuple[int, ...]],
    got: Mapping[str, torch.Tensor],
    *,
    source: str | Path,
    what: str,
) -> None:
    """Raise CheckpointError unless ``got`` has exactly the keys and shapes of ``expected``."""
    missing = [k for k in expected if k not in got]
    unexpected = [k for k in got if k not in expected]
    wrong = [
        f"{k} (file {tuple(got[k].shape)}, model {tuple(expected[k])})"
        for k in expected
        if k in got and tuple(got[k].shape) != tuple(expected[k])
    ]
    if missing or unexpected or wrong:
        raise mismatch(source, what, missing=missing, unexpected=unexpected, wrong=wrong)


def mismatch(
    source: str | Path, what: str, *, missing: Iterable[str] = (), unexpected: Iterable[str] = (),
    wrong: Iterable[str] = (),
    fix: str = "Check that the file belongs to this model and variant and was downloaded completely.",
) -> CheckpointError:
    """The one wording of a key mismatch: each kind counted, the first few keys named, then the fix."""
    kinds = (("missing keys", missing), ("unexpected keys", unexpected), ("keys with the wrong shape", wrong))
    parts = [_listing(label, keys) for label, keys in kinds if keys]
    return CheckpointError(f"{source} does not match the {what}: " + "; ".join(parts) + f". {fix}")


def load_strict(
    module: torch.nn.Module,
    state_dict: Mapping[str, torch.Tensor],
    *,
    source: str | Path,
    what: str,
) -> None:
    """``load_state_dict(strict=True)`` with a readable key report instead of a traceback."""
    expected = {k: v.shape for k, v in module.state_dict().items()}
    check_state_dict(expected, state_dict, source=source, what=what)
    module.load_state_dict(state_dict, strict=True)
