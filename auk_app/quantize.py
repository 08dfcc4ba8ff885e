"""Weight-only quantization at load (``--quantize``): int8 or 4-bit weights for the linear layers
of the models' repeated blocks, with torchao, the PyTorch team's quantization library.

Which layers, and why (numbers at the released shapes):

* **Quantized: the linear layers inside the repeated blocks.** The DiT's attention projections
  and SwiGLU feed-forwards in its 10 double and 20 single blocks (944 M of its 1.53 B
  parameters); every linear layer of the text encoder's decoder and audio-encoder layers
  (Qwen2.5-Omni-3B: 2.77 B of the text decoder's 3.09 B, 0.63 B of the audio tower's 0.64 B;
  MiniLM's six encoder layers for the demo); Audex's decoder layers, where its LM samples in this
  process. These hold most of the bytes (4.34 B of the DiT's and thinker's 5.25 B parameters).
* **Kept in the compute dtype: everything else.** Embeddings (Qwen's token table of 311 M
  parameters, the DiT's time, text and latent input projections), every norm, the DiT's adaLN
  modulations and its output head (``norm_out``, ``proj_out``), the audio tower's convolutions
  and output projection, Audex's embeddings and output head. adaLN is 566 M parameters, 37 % of
  the DiT, and kept all the same: its output is the shift, scale and gate of every token of its
  block, so a rounding error there is a multiplicative error on the whole stream, and it runs
  once per step on a single row, so int8 would save memory but no time. The output head writes
  the velocity itself. The VAE is not touched (float32 under every choice).

Quantizing replaces a layer's weight with a torchao tensor after the checkpoint's strict load of
its released keys, so released checkpoints load unchanged and nothing new is downloaded; a
quantized model's ``state_dict`` holds torchao tensors and is never written back. Int8 is
per-output-row symmetric (torchao's ``Int8WeightOnlyConfig``): the layer multiplies in the
activations' dtype with the weight cast from int8, so it runs on every device. 4-bit is
torchao's ``Int4WeightOnlyConfig`` in the tinygemm layout (groups of 128 along the input, in
features padded to a multiple of 1024), whose kernel exists for CUDA GPUs of compute capability
8.0 or newer and takes bfloat16 weights only; torchao 0.18 has no 4-bit weight-only kernel for
the CPU outside its prototypes, so 4-bit is refused there, at start.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import torch

from auk_app.config import QUANTIZE_CHOICES
from auk_app.errors import InputError
from auk_app.runtime import Precision, storage_tensors

# The linear layers a mode quantizes, by their names in each model: the DiT's attention and
# feed-forwards (its blocks' adaLN, ``attn_norm*``, is left out), the Qwen thinker's decoder and
# audio-encoder layers, MiniLM's encoder layers.
DIT_BLOCKS = re.compile(r"(single_)?transformer_blocks\.\d+\.(attn|ff|ff_x|ff_c)\.")
TEXT_ENCODER_BLOCKS = re.compile(r"model\.(language_model|audio_tower)\.layers\.\d+\.|encoder\.layer\.\d+\.")
LM_BLOCKS = re.compile(r"model\.layers\.\d+\.")  # Audex's decoder layers; its embeddings and lm_head stay
INT4_GROUP = 128  # inputs per scale and zero point: torchao's default, the tinygemm kernel's usual choice
INT4_MIN_CAPABILITY = (8, 0)  # the tinygemm int4 kernel's tensor-core path


@dataclass(frozen=True)
class Quantization:
    """A ``--quantize`` mode checked against the device and precision it will run on."""

    mode: str  # "none", "int8" or "int4"

    def apply(self, module: torch.nn.Module, blocks: re.Pattern) -> list[str]:
        """Quantize, in place, the linear layers of ``module`` whose names ``blocks`` matches (from
        the start); their names, in order. Call it after the strict load and the cast to the weight
        dtype: the int8 weights dequantize to the dtype they were made from."""
        if self.mode == "none":
            return []
        names = [name for name, layer in module.named_modules()
                 if isinstance(layer, torch.nn.Linear) and blocks.match(name)]
        chosen = set(names)
        quantize_, config = _torchao(self.mode)
        quantize_(module, config, filter_fn=lambda layer, name: name in chosen)
        return names


NONE = Quantization("none")


def pick_quantization(device: torch.device, precision: Precision, requested: str | Quantization | None) -> Quantization:
    """``requested`` (``none``, ``int8``, ``int4``; None: none) for ``device`` and ``precision``; a
    mode that cannot run there is refused with one sentence naming the mode and the device."""
    if isinstance(requested, Quantization):
        return requested
    mode = requested or "none"
    if mode not in QUANTIZE_CHOICES:
        raise InputError(f"Unknown quantization {str(mode)[:20]!r}; choose one of: {', '.join(QUANTIZE_CHOICES)}.")
    if mode == "int4":
        _check_int4(device, precision)
    return Quantization(mode)


def _check_int4(device: torch.device, precision: Precision) -> None:
    if device.type != "cuda":
        raise InputError(f"--quantize int4 is not supported on the {device.type.upper()}: torchao's 4-bit weight-only "
                         "kernel runs on CUDA GPUs only, so use --quantize int8 here.")
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) < INT4_MIN_CAPABILITY:
        raise InputError(f"--quantize int4 is not supported on {device} (compute capability {major}.{minor}): "
                         "torchao's 4-bit kernel needs 8.0 or newer, so use --quantize int8 on this GPU.")
    if precision.weights != torch.bfloat16:
        raise InputError(f"--quantize int4 on {device} needs bfloat16 weights, not {precision.name}: torchao's 4-bit "
                         "kernel takes bfloat16 only, so use --dtype bfloat16 (or auto) with it.")


def _torchao(mode: str):
    """torchao's ``quantize_`` and the config of ``mode``, imported on first use (1.4 s with torch
    loaded). ``set_inductor_config=False``: torchao would otherwise change the whole process's
    compiler settings, which the DiT's compiled blocks share."""
    quiet_library_logs()
    from torchao.quantization import Int4WeightOnlyConfig, Int8WeightOnlyConfig, quantize_

    if mode == "int8":
        return quantize_, Int8WeightOnlyConfig(set_inductor_config=False)
    return quantize_, Int4WeightOnlyConfig(group_size=INT4_GROUP, int4_packing_format="tile_packed_to_4d",
                                           set_inductor_config=False)


def quiet_library_logs() -> None:
    """Keep torchao's import from printing four warnings into every start: transformers imports
    torchao whenever it is installed, and on a CPU build torchao logs that its two CUDA extension
    libraries do not load, and torch's pytree that two of torchao's enums need no registration.
    Raises those two loggers to errors; an entry point calls it before anything loads."""
    for name in ("torchao", "torch.utils._pytree"):
        logging.getLogger(name).setLevel(logging.ERROR)


def weight_bytes(module: torch.nn.Module) -> int:
    """The bytes ``module``'s parameters and buffers hold in storage: a quantized weight counts its
    int8 or packed 4-bit data with its scales and zero points (torchao keeps them as plain tensors
    inside the weight), a tensor shared by two modules once."""
    tensors = {id(t): t for t in (*module.parameters(), *module.buffers())}
    return sum(inner.numel() * inner.element_size() for t in tensors.values() for inner in storage_tensors(t))
