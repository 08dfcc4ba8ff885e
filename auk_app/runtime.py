"""The one device and precision policy: decided here, passed down, never probed at import."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from auk_app.errors import InputError


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


@dataclass(frozen=True)
class Precision:
    """How the DiT and the text encoder run: their resident weight dtype and the autocast dtype
    around them (none when float32). The VAE, the rotary angles, the noise and the Euler state
    stay float32 under every choice."""

    name: str
    weights: torch.dtype
    compute: torch.dtype


PRECISIONS = {
    p.name: p
    for p in (
        Precision("float32", torch.float32, torch.float32),
        # vLLM-Omni's recipe: weights cast to bf16, run under bf16 autocast. Half the memory.
        Precision("bfloat16", torch.bfloat16, torch.bfloat16),
        Precision("float16", torch.float16, torch.float16),
        # Upstream AuK's recipe (its --dtype bf16 with the default --weight_dtype fp32): the
        # checkpoints' float32 weights kept as they are, matmuls in bf16 under autocast. Twice
        # bfloat16's weight memory (1.53 B DiT: 6.1 GB instead of 3.1 GB).
        Precision("autocast-bf16", torch.float32, torch.bfloat16),
    )
}
_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def pick_precision(device: torch.device, requested: str | torch.dtype | Precision | None = None) -> Precision:
    """``requested`` by name (see PRECISIONS; fp32/bf16/fp16 also accepted) or dtype; ``auto``
    or None: bfloat16 on CUDA, float32 elsewhere."""
    if isinstance(requested, Precision):
        return requested
    if isinstance(requested, torch.dtype):
        requested = str(requested).removeprefix("torch.")
    if not requested or requested == "auto":
        requested = "bfloat16" if device.type == "cuda" else "float32"
    name = _ALIASES.get(requested, requested)
    if name not in PRECISIONS:
        raise InputError(f"Unknown dtype {requested!r}; choose auto or one of: {', '.join(PRECISIONS)}.")
    return PRECISIONS[name]


def autocast(device: torch.device, precision: Precision):
    """Autocast to ``precision.compute`` (LayerNorm and softmax then run in float32); a no-op
    context in float32."""
    if precision.compute == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=precision.compute)


# One CUDA graph capture at a time in this process: the DiT's step graphs (the batcher's thread),
# the VAE decode's and Audex's each capture from their own thread, and entering a capture
# synchronises the device and empties the allocator's cache under another thread's capture.
GRAPH_CAPTURE = threading.Lock()


def capture_graph(run, *, warmup: int = 2, pool=None, generator: torch.Generator | None = None):
    """(graph, output) of one call of ``run`` captured as a CUDA graph, after ``warmup`` calls on a
    side stream that let cuBLAS/cuDNN pick and allocate their workspaces (and torch.compile
    compile) outside the capture. ``generator``'s state is registered, so replays draw afresh.
    The capture is ``thread_local``: another request allocating on its own thread must not void it.
    """
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    if generator is not None:
        graph.register_generator_state(generator)
    with GRAPH_CAPTURE, torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
        out = run()
    return graph, out


def storage_tensors(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The plain tensors that hold ``tensor``'s data: itself, or a wrapper's inner tensors (a torchao
    quantized weight keeps its int8 data, scales and zero points so, and has no storage of its own)."""
    if not is_traceable_wrapper_subclass(tensor):
        return [tensor]
    names, _ = tensor.__tensor_flatten__()
    return [inner for name in names for inner in storage_tensors(getattr(tensor, name))]


def weight_addresses(module: torch.nn.Module) -> tuple[int, ...]:
    """Where ``module``'s parameters and buffers live (a quantized weight's inner tensors): a CUDA
    graph replays on these addresses."""
    return tuple(inner.data_ptr() for t in (*module.parameters(), *module.buffers()) for inner in storage_tensors(t))


class GraphCache:
    """A module's CUDA graphs keyed by shape bucket, sharing one memory pool, the least recently
    used dropped past ``size``. A graph holds the addresses of the weights it read, so the cache
    empties itself when they have moved since the previous call (an offloaded or reloaded model)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict = OrderedDict()
        self._pool = None
        self._weights: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def weights_stayed(self, module: torch.nn.Module) -> bool:
        """Whether ``module``'s weights are where they were at the previous call; if not, drop every graph."""
        weights = weight_addresses(module)
        if weights == self._weights:
            return True
        self._entries.clear()
        self._pool = None
        self._weights = weights
        return False

    def get(self, key):
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key, entry) -> None:
        self._entries[key] = entry
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def capture(self, run):
        """(graph, output) of ``run`` captured into the cache's pool (:func:`capture_graph`)."""
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        return capture_graph(run, pool=self._pool)
