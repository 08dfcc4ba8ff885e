"""XCodec1 (``hf-audio/xcodec-hubert-general-balanced``): load strictly, decode codes to audio.

Always float32, as in vLLM-Omni: the codec is a small CNN decoded once per clip, so bf16 would
save nothing worth its rounding. ``XcodecModel.__init__`` also builds the HuBERT semantic model,
which decoding never touches; its weights are still in the snapshot and are loaded so that the
strict key check covers the whole file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from auk_app import transformers_import

with transformers_import.LOCK:
    from transformers import XcodecConfig, XcodecModel
    from transformers.initialization import no_init_weights

from auk_app.audex.rvq import frames_to_codes
from auk_app.audex.codecs import codec_class
from auk_app.errors import CheckpointError
from auk_app.resolve import XCODEC_FILES
from auk_app.weights import load_strict, read_safetensors

SAMPLE_RATE = 16000  # XcodecConfig.sample_rate of every XCodec1 checkpoint Audex uses


def load_xcodec(xcodec_dir: str | Path, *, device: torch.device | str) -> Any:
    """Build ``XcodecModel`` from ``config.json`` and load ``model.safetensors`` strictly, float32.

    A config with a ``codec`` field names another codec of XCodec1's interface in
    :data:`auk_app.audex.codecs.CODECS` (the demo's event codec), imported only then; its
    weights load with the same strict check.

    Raises CheckpointError naming missing files or missing/unexpected/mis-shaped keys.
    """
    directory = Path(xcodec_dir)
    missing = [name for name in XCODEC_FILES if not (directory / name).is_file()]
    if missing:
        raise CheckpointError(
            f"XCodec1 folder {directory} is missing {', '.join(missing)}. "
            f"Download hf-audio/xcodec-hubert-general-balanced ({' and '.join(XCODEC_FILES)}) into it."
        )
    config_file, weights_file = (directory / name for name in XCODEC_FILES)
    named = _codec_name(config_file)
    if named is not None:
        return _load_registered(named, config_file, weights_file, device)
    try:
        config = XcodecConfig.from_json_file(str(config_file))
    except (OSError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{config_file} is not an XCodec config ({exc}). Download it again.") from exc
    state = read_safetensors(weights_file)
    with no_init_weights(), torch.device(device):
        codec = XcodecModel(config)
    codec.float()
    load_strict(codec, state, source=weights_file, what="XCodec1 codec (XcodecModel)")
    return codec.eval()


def _codec_name(config_file: Path) -> str | None:
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{config_file} is not an XCodec config ({exc}). Download it again.") from exc
    return config.get("codec") if isinstance(config, dict) else None


def _load_registered(name: str, config_file: Path, weights_file: Path, device: torch.device | str) -> Any:
    try:
        cls = codec_class(name)
        config = json.loads(config_file.read_text(encoding="utf-8"))
        codec = cls.from_config(config)
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{config_file} names a codec this app cannot build ({exc}).") from exc
    state = read_safetensors(weights_file)
    codec.to(device).float()
    load_strict(codec, state, source=weights_file, what=f"Audex codec ({name})")
    return codec.eval()


def decode_frames(codec: XcodecModel, frames: torch.Tensor) -> np.ndarray:
    """``[frames, 4]`` codec ids (layer offsets included) -> mono float32 waveform.

    Keeps the first 500 frames; the result has exactly ``kept_frames · 320`` samples at 16 kHz.
    Raw decoder output (XCodec's final tanh is removed), so samples may exceed ±1.
    """
    device = next(codec.parameters()).device
    codes = frames_to_codes(frames).to(device)  # [1, 4, frames]
    with torch.inference_mode():
        audio = codec.decode(codes, return_dict=True).audio_values  # [1, 1, frames · 320]
    return audio.reshape(-1).float().cpu().numpy()
