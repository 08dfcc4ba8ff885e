"""What one AuK run is asked to do, and what it did.

An :class:`EditRequest` is checked when it is built, from the UI, the API, the command line or a
Serve replica alike, by each knob's own check (:data:`auk_app.knobs.EDIT`) and then as a whole (a
target length must come from somewhere, a region needs a clip): a value that cannot be served
raises InputError there, before any model work, and the pipeline trusts what it gets.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from auk_app.audio_io import Waveform
from auk_app.auk.configs import Recipe
from auk_app.config import Limits
from auk_app.knobs import EDIT, check_region, need_duration

AudioSource = str | Path | tuple[np.ndarray, int] | Waveform  # a file, or samples with their rate


@dataclass(frozen=True)
class EditRequest:
    """One AuK run: a field per knob of :data:`~auk_app.knobs.EDIT` the run reads, in the schema's
    order after the instruction (``EditRequest("Say hi.", seconds=1)``), each checked by its knob
    when built, then together (a target length must come from somewhere, a region needs a clip).
    None is the checkpoint's default, an automatic length or a drawn seed, recorded here."""

    instruction: str
    audio: AudioSource | None = None
    seconds: float | None = None
    nfe: int | None = None
    cfg: float | None = None
    sway: float | None = None
    t_grid: tuple[float, ...] | str | None = None
    seed: int | None = None
    vae_sample: bool = True
    region_start: float | None = None
    region_end: float | None = None
    step_cache: float | None = None
    cfg_interval: tuple[float, float] | str | None = None
    limits: Limits = field(default_factory=Limits, repr=False, compare=False)

    def __post_init__(self) -> None:
        for knob in fields(self):
            if knob.name in EDIT:
                object.__setattr__(self, knob.name, EDIT[knob.name].check(getattr(self, knob.name), self.limits))
        need_duration(self.seconds, self.audio is not None)
        region = check_region(self.region_start, self.region_end, self.audio is not None, self.limits)
        object.__setattr__(self, "region_start", None if region is None else region[0])
        object.__setattr__(self, "region_end", None if region is None else region[1])

    @property
    def region(self) -> tuple[float, float] | None:
        return None if self.region_end is None else (self.region_start, self.region_end)

    @property
    def read_limits(self) -> Limits:
        """The limits its clip is read under: a region's source's, else a whole recording's."""
        return self.limits.reading(self.region_end)

    def knobs(self) -> dict[str, Any]:
        """The request's knobs as plain values (the clip aside), e.g. for a Serve replica to check again."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in EDIT and f.name != "audio"}

    def without_region(self) -> EditRequest:
        """The request a region's window is: the window is the whole clip its run sees."""
        return replace(self, region_start=None, region_end=None)


@dataclass(frozen=True)
class EditRecord:
    """Every knob and measure of one run, as the manifest reports it."""

    checkpoint_name: str
    variant: str
    checkpoint: str  # the checkpoint's folder name, never the server's disk layout
    instruction: str
    seed: int
    recipe: Recipe  # what ran: the steps, guidance, grid, noise scale, start, and the knobs it ignored
    gen_frames: int
    ref_frames: int
    ref_latent_frames: int  # with the masked frame the encoder may add
    frames_capped: bool
    fit_to_source: bool
    seconds: float
    sample_rate: int
    source_seconds: float | None
    source_samples_24k: int | None
    source_sample_rate: int | None
    source_channels: int | None
    region: tuple[float, float] | None  # seconds of the source that were edited; None: the whole clip
    region_context: tuple[float, float] | None  # seconds of context the model saw before and after it
    region_crossfade: float | None  # seconds of equal-power crossfade at each edge, inside the region
    region_seconds: float | None  # the region's length after the edit
    vae_sample: bool
    condition_cache_hit: bool
    timings: dict[str, float]
    rtf: float
    device: str
    dtype: str
    quantize: str = "none"  # the DiT's and text encoder's block linears: none, int8 or int4 (auk_app.quantize)
    # Where it ran: in this process, or on a Ray Serve replica (auk_app.serve) at engine_server.
    engine: str = "in-process"
    engine_server: str | None = None  # host:port of the Serve proxy
    replica: str | None = None  # the Serve replica's id
    replica_node: str | None = None  # the host the replica ran on
    attempts: int = 1  # sends it took: more than 1 when a replica was lost mid-run
    windows: dict[str, Any] | None = None  # a whole recording edited in windows: how many, how long, the crossfade
    steps: dict[str, int] | None = None  # the Euler steps' tally (auk.step_reuse.StepTally): DiT steps run, reused, ...


@dataclass(frozen=True)
class EditResult:
    wav: np.ndarray  # float32 mono at 24 kHz: gen_frames·480 samples, or the source's length with fit_to_source
    # (not clamped: peaks past full scale are the model's, and write_wav clips them)
    sample_rate: int
    record: EditRecord
    source: np.ndarray | None = None  # the clip as the model read it (mono, 24 kHz, whole length), for display

    def compared(self) -> tuple[np.ndarray | None, np.ndarray]:
        """What the edit check compares: the source and the result, or for a region edit the region
        before and after (the rest of the file is the source, unchanged)."""
        record, rate = self.record, self.sample_rate
        if record.region is None or self.source is None:
            return self.source, self.wav
        start = round(record.region[0] * rate)
        return (self.source[start:round(record.region[1] * rate)],
                self.wav[start:start + round(record.region_seconds * rate)])
