"""What one AuK run is asked to do, and what it did.

An :class:`EditRequest` is checked when it is built, from the UI, the API or the command line
alike: a value that cannot be served raises InputError there, before any model work, and the
pipeline trusts what it gets. :func:`edit_problems` runs the same checks one field at a time,
for a validator that reports each field on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from auk_app.audio_io import Waveform
from auk_app.config import Limits
from auk_app.errors import AppError, InputError
from auk_app.validate import (
    check_cfg, check_duration_known, check_flag, check_instruction, check_nfe, check_region, check_seconds, check_seed,
    check_sway, field_problems, is_real, parse_t_grid, shown,
)

AudioSource = str | Path | tuple[np.ndarray, int] | Waveform
MAX_CANDIDATES = 8  # seeds of one edit run side by side (they share DiT steps in the batcher)


def check_candidates(value) -> int:
    """How many candidates (seeds seed, seed+1, …) of one edit to run: a whole number from 1 to
    MAX_CANDIDATES (a number box's 4.0 counts as 4), returned as an int; None means 1."""
    if value is None:
        return 1
    if not is_real(value) or not float(value).is_integer() or not 1 <= value <= MAX_CANDIDATES:
        raise InputError(
            f"candidates is how many seeds of the edit to run and rank, a whole number from 1 to "
            f"{MAX_CANDIDATES}; got {shown(value)}."
        )
    return int(value)


def _field_checks(limits: Limits) -> dict[str, Callable[[Any], Any]]:
    """Each checked field's check, returning the value the run uses."""
    return {
        "instruction": lambda value: check_instruction(value, limits),
        "seconds": lambda value: check_seconds(value, limits),
        "nfe": lambda value: check_nfe(value, limits),
        "cfg": lambda value: check_cfg(value, limits),
        "sway": lambda value: check_sway(value, limits),
        "t_grid": lambda value: parse_t_grid(value, limits),
        "seed": check_seed,
        "vae_sample": lambda value: check_flag(value, "vae_sample"),
    }


@dataclass(frozen=True)
class EditRequest:
    """One AuK request. ``None`` knobs take the checkpoint's defaults; ``seconds`` None or 0 is
    automatic (the source's length); ``seed`` None draws one, recorded in the request."""

    instruction: str
    audio: AudioSource | None = None
    seconds: float | None = None
    nfe: int | None = None
    cfg: float | None = None
    sway: float | None = None
    t_grid: str | tuple[float, ...] | None = None
    seed: int | None = None
    # The reference latent: a posterior draw mean + ε·std as upstream samples it (True), or the
    # posterior mean as vLLM-Omni takes it (False). ε comes from a generator seeded from the
    # request's seed, so a seed reproduces the draw.
    vae_sample: bool = True
    # With automatic duration: generate ceil(source / hop) frames and trim the output to the
    # source's exact length at 24 kHz, instead of the clip's whole frames only.
    fit_to_source: bool = True
    # A part of a longer clip to edit, in seconds (region_end None or 0: the whole clip;
    # region_start None: from the beginning). The clip may then
    # last up to Limits.max_region_source_seconds; see auk.region for how the edit goes back in.
    region_start: float | None = None
    region_end: float | None = None
    limits: Limits = field(default_factory=Limits, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, check in _field_checks(self.limits).items():
            object.__setattr__(self, name, check(getattr(self, name)))
        check_duration_known(self.seconds, self.audio is not None)
        region = _check_region(self.region_start, self.region_end, self.audio is not None, self.limits)
        object.__setattr__(self, "region_start", None if region is None else region[0])
        object.__setattr__(self, "region_end", None if region is None else region[1])

    @property
    def region(self) -> tuple[float, float] | None:
        return None if self.region_end is None else (self.region_start, self.region_end)


def _check_region(start, end, has_clip: bool, limits: Limits) -> tuple[float, float] | None:
    region = check_region(start, end, limits)
    if region is not None and not has_clip:
        raise InputError("A region is a part of a clip: upload the clip to edit, or leave the region empty.")
    return region


def edit_problems(values: Mapping[str, Any], limits: Limits) -> dict[str, str]:
    """The sentence for each field of ``values`` that an EditRequest would refuse."""
    # candidates is no field of an EditRequest (the Studio runs one request per candidate), checked alike
    problems = field_problems({**_field_checks(limits), "candidates": check_candidates}, values)
    if "seconds" in values and "seconds" not in problems:
        try:
            check_duration_known(check_seconds(values["seconds"], limits), values.get("audio") is not None)
        except AppError as exc:
            problems["seconds"] = str(exc)
    if "region_end" in values:
        try:
            _check_region(values.get("region_start"), values["region_end"], values.get("audio") is not None, limits)
        except AppError as exc:
            problems["region_end"] = str(exc)
    return problems


@dataclass(frozen=True)
class EditRecord:
    """Every knob and measure of one run, as the manifest reports it."""

    checkpoint_name: str
    variant: str
    checkpoint: str  # the checkpoint's folder name, never the server's disk layout
    instruction: str
    seed: int
    nfe: int
    cfg: float
    sway: float | None
    t_grid: tuple[float, ...] | None
    noise_scale: float  # what the initial noise was multiplied by (the checkpoint's sampling temperature)
    start: str  # where the flow began: "noise", or "source" (the source's latents plus that noise)
    ignored: tuple[str, ...]  # knobs the checkpoint's fixed recipe overrode (Flash)
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
    # Where it ran: in this process, or on a Ray Serve replica (auk_app.serve) at engine_server.
    engine: str = "in-process"
    engine_server: str | None = None  # host:port of the Serve proxy
    replica: str | None = None  # the Serve replica's id
    replica_node: str | None = None  # the host the replica ran on
    attempts: int = 1  # sends it took: more than 1 when a replica was lost mid-run


@dataclass(frozen=True)
class EditResult:
    wav: np.ndarray  # float32 mono at 24 kHz: gen_frames·480 samples, or the source's length with fit_to_source
    # (not clamped: peaks past full scale are the model's, and write_wav clips them)
    sample_rate: int
    record: EditRecord
    source: np.ndarray | None = None  # the clip as the model read it (mono, 24 kHz, whole length), for display
