"""What the app and a Serve replica exchange: a window plan in, a window waveform and the run's measures out
(``op`` "edit"), or a window's edited latents (``op`` "latents": a window of a whole recording, which
the app joins with its neighbours and decodes).

The app makes the plan (every check, the instruction, the region's window) and sends only what
the model reads: the frame budget, the window's audio at the rates the models read it, and the
request's knobs. The replica checks the request again against its own limits (a client's word is
no limit), derives the recipe from the knobs and its own checkpoint, holds the frame budget to what
a plan under its limits can ask, rebuilds an :class:`~auk_app.auk.plan.EditPlan` without a region
on its own checkpoint and runs it through
:meth:`AuKPipeline.run <auk_app.auk.pipeline.AuKPipeline.run>`, as the app would in process; the
app splices a region's window back into the whole recording and writes the record. Arrays travel
as base64 float32 (little-endian), so the samples arrive bit for bit.

The stream back is one JSON object a line: ``start`` (which replica), ``progress``, ``heartbeat``
(while a phase is quiet), then ``result`` or ``error`` (a sentence and its kind). A latents
result holds them as float32 with their ``shape``.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import numpy as np

from auk_app.audio_io import MonoClip
from auk_app.auk.checkpoint import AuKCheckpoint
from auk_app.auk.plan import Clip, EditPlan, recipe_for, window_seconds
from auk_app.auk.request import EditRequest
from auk_app.config import MAX_TOTAL_FRAMES, Limits, frames_for_seconds
from auk_app.errors import InputError
from auk_app.validate import check_clip

VERSION = 3  # bumped when the body changes shape; a replica refuses another
OPS = ("edit", "latents")  # a window's waveform; a window's edited latents, not decoded


def pack(wav: np.ndarray | None) -> str | None:
    return None if wav is None else base64.b64encode(np.ascontiguousarray(wav, dtype="<f4").tobytes()).decode("ascii")


def unpack(text: str | None) -> np.ndarray | None:
    return None if text is None else np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


def window_plan(plan: EditPlan) -> EditPlan:
    """The part of ``plan`` a replica runs: the window alone, nothing to splice into."""
    return replace(plan, request=plan.request.without_region(), region=None, whole=None)


def plan_body(plan: EditPlan, *, request_id: str, op: str = "edit") -> dict[str, Any]:
    """The request body of ``plan`` (a window plan: the region, if any, stays with the caller)."""
    clip = plan.clip
    return {
        "version": VERSION, "request_id": request_id, "op": op,
        "checkpoint": {"name": plan.checkpoint.name, "variant": plan.checkpoint.variant},
        "request": plan.request.knobs(),
        "clip": None if clip is None else {"wav_24k": pack(clip.wav_24k), "wav_16k": pack(clip.wav_16k),
                                           "digest": clip.digest, "hop": clip.hop},
        "gen_frames": plan.gen_frames, "ref_frames": plan.ref_frames, "frames_capped": plan.frames_capped,
        "fit_to_source": plan.fit_to_source,
    }  # fmt: skip


def read_plan(body: dict[str, Any], checkpoint: AuKCheckpoint, limits: Limits) -> EditPlan:
    """The plan ``body`` describes, on ``checkpoint`` under ``limits`` (the replica's own); InputError
    names a mismatch or a value its limits refuse."""
    if body.get("version") != VERSION:
        raise InputError(f"This replica reads request version {VERSION}, not {body.get('version')!r}: run the same "
                         "AuK Studio version in the app and in the deployment.")
    if body.get("op") not in OPS:
        raise InputError(f"This replica serves the ops {', '.join(OPS)}, not {str(body.get('op'))[:40]!r}: run the "
                         "same AuK Studio version in the app and in the deployment.")
    wanted = body["checkpoint"]
    if (wanted["name"], wanted["variant"]) != (checkpoint.name, checkpoint.variant):
        raise InputError(f"The Serve deployment serves {checkpoint.name} ({checkpoint.variant}), not "
                         f"{wanted['name']} ({wanted['variant']}): choose that model in the app, or deploy this one.")
    sent = body["clip"]
    clip = None
    rate = checkpoint.sample_rate
    if sent is not None:
        wav_24k = unpack(sent["wav_24k"])
        check_clip(wav_24k, rate, limits)
        clip = Clip(wav_24k=wav_24k, wav_16k=unpack(sent["wav_16k"]),
                    source=MonoClip(mono=wav_24k, sample_rate=rate, channels=1, clipping=False),
                    digest=sent["digest"], hop=int(sent["hop"]))
    request = EditRequest(**body["request"], audio=None if clip is None else (clip.wav_24k, rate), limits=limits)
    gen_frames, ref_frames = _held_frames(body, clip, checkpoint, limits)
    return EditPlan(checkpoint=checkpoint, request=request, recipe=recipe_for(request, checkpoint), clip=clip,
                    whole=None, region=None, gen_frames=gen_frames, ref_frames=ref_frames,
                    frames_capped=bool(body["frames_capped"]), fit_to_source=bool(body["fit_to_source"]),
                    planned_in=0.0)


def _held_frames(body: dict[str, Any], clip: Clip | None, checkpoint: AuKCheckpoint, limits: Limits) -> tuple[int, int]:
    """(target, reference) frames of ``body``, held to what a plan under ``limits`` can ask: the
    reference is the clip's, the target at most the longest target plus a region's window around it."""
    gen_frames, ref_frames = int(body["gen_frames"]), int(body["ref_frames"])
    own = clip.ref_frames if clip else 0
    most = min(frames_for_seconds(limits.max_target_seconds + window_seconds(checkpoint, limits)), MAX_TOTAL_FRAMES - own)
    if ref_frames != own or not 1 <= gen_frames <= most:
        raise InputError(f"This replica runs 1 to {most} target frames with the clip's own {own} reference frames, "
                         f"not {gen_frames} and {ref_frames}: run the same AuK Studio version and limits in the app "
                         "and in the deployment.")
    return gen_frames, ref_frames
