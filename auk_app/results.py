"""What an edit is asked for and what follows its run, the same for the page, the API and the CLI.

An :class:`EditOrder` is every knob of :data:`auk_app.knobs.EDIT`, checked once where it enters:
the run's :class:`~auk_app.auk.request.EditRequest` and what the app does around the run (which
model, how many candidates, headroom). :class:`~auk_app.job.EditJob` runs
it and hands back one :class:`Delivery` per candidate, best first: the samples exactly as they will
be written (headroom applied, nothing clamped yet) and the record of the run (levels, the clipping
count, warnings, the edit check, the candidate's place). :func:`write_edit` writes a delivery's
WAV and returns its manifest; the page, the API and the CLI write and report the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from auk_app import dsp, levels
from auk_app.audio_io import full_scale_samples, write_wav
from auk_app.auk.request import EditRequest, EditResult
from auk_app.check import EditCheck
from auk_app.config import Limits
from auk_app.errors import EngineError, KnobError
from auk_app.knobs import EDIT
from auk_app.manifest import edit_manifest, file_sha256, write_manifest

OUTPUT_FORMAT = "WAV PCM16 mono"


@dataclass(frozen=True)
class EditOrder:
    """An edit as a client asked for it: the run's request, the app's own knobs, and the knobs as
    sent (the manifest's ``requested``); ``builder`` is what the manifest says of the builder that
    wrote the instruction."""

    request: EditRequest
    requested: dict[str, Any]
    model: str = "auto"
    randomize_seed: bool = True
    headroom: bool = False
    enhance: bool = False
    candidates: int = 1
    builder: dict[str, Any] | None = None  # the builder's task and the pace its duration followed
    enhanced: dict[str, Any] | None = None  # the request as asked and as rewritten (enhance)

    @classmethod
    def from_knobs(cls, values: Mapping[str, Any], limits: Limits, *,
                   builder: dict[str, Any] | None = None) -> EditOrder:
        """The order of ``values`` (the API's names; defaults for those left out); InputError names a
        value that cannot be served."""
        knobs = {**EDIT.defaults(), **values}
        own = {f.name: EDIT[f.name].check(knobs[f.name], limits) for f in fields(cls) if f.name in EDIT}
        asked = {f.name: knobs[f.name] for f in fields(EditRequest) if f.name in EDIT}
        if own["randomize_seed"]:
            asked["seed"] = None
        requested = {k.name: knobs[k.name] for k in EDIT if k.widget != "audio"}
        return cls(EditRequest(**asked, limits=limits), requested, builder=builder, **own)

    @classmethod
    def problems(cls, values: Mapping[str, Any], limits: Limits) -> dict[str, str]:
        """The sentence for each knob of ``values`` an order would refuse, and once they pass one by
        one, what they refuse together."""
        values = {**EDIT.defaults(), **values}
        found = EDIT.problems(values, limits)
        if not found:
            try:
                cls.from_knobs(values, limits)
            except KnobError as exc:
                found[exc.knob] = str(exc)
        return found


@dataclass(frozen=True)
class Delivery:
    """One candidate of an edit, ready to write: ``wav`` is what the WAV will hold before PCM16's
    clip, ``record`` its manifest less the written file's name and hash."""

    result: EditResult
    wav: np.ndarray
    record: dict[str, Any]

    @property
    def seed(self) -> int:
        return self.result.record.seed

    @property
    def check_line(self) -> str:
        return self.record["check"]["display"]


def deliver(result: EditResult, order: EditOrder, *, model: dict[str, Any], check: EditCheck, check_seconds: float,
            candidate: dict[str, Any], cautions: tuple[str, ...] = ()) -> Delivery:
    """``result`` made ready to write: refused if it is not finite, levelled with ``order.headroom``,
    its clipping counted and warned about, and recorded with ``check`` (which took ``check_seconds``;
    its clipping counted again in what the WAV holds), ``candidate`` (its place among the order's
    seeds), ``model`` (key, label, demo) and ``cautions`` (warnings known before the run)."""
    refuse_non_finite(result.wav)
    wav, gain = _leveled(result.wav, order.headroom)
    written = replace(check, clipped=full_scale_samples(replace(result, wav=wav).compared()[1]))
    rate, record = result.sample_rate, result.record
    source = None
    if isinstance(order.request.audio, (str, Path)):
        source = {"file": Path(order.request.audio).name, "sha256": file_sha256(order.request.audio),
                  "sample_rate": record.source_sample_rate, "channels": record.source_channels,
                  **levels.levels(result.source, rate)}
    after = levels.levels(np.clip(wav, -1.0, 1.0), rate)  # what the WAV holds: PCM16 cannot go past full scale
    before = None if source is None else {k: source[k] for k in after}
    clipped = full_scale_samples(wav)
    region = region_levels(result, wav)
    manifest = edit_manifest(
        record, model=model, requested=order.requested, source=source,
        output={"format": OUTPUT_FORMAT, "clipped_samples": clipped, "headroom": gain, **after},
        level_change=levels.level_change(before, after),
        region_level_change=None if region is None else levels.level_change(*region),
        randomized_seed=order.randomize_seed,
        warnings=[*cautions, *([clipping_warning(clipped, wav.shape[0])] if clipped else [])],
        check={**written.to_manifest(), "display": written.display(), "seconds": round(check_seconds, 4)},
        candidate=candidate, builder=order.builder, enhanced=order.enhanced,
    )
    return Delivery(result, wav, manifest)


def refuse_non_finite(wav: np.ndarray) -> None:
    """Raise EngineError for a result with NaN or infinite samples: PCM16 would write them as full scale."""
    if not np.isfinite(wav).all():
        raise EngineError("The model returned NaN or infinite samples, so nothing was written. Run it again with "
                          "another seed; if it happens again, the model or its device is faulty.")


def write_edit(delivery: Delivery, path: str | Path, *, manifest_path: str | Path | None = None) -> dict[str, Any]:
    """Write ``delivery``'s WAV at ``path`` (and its manifest at ``manifest_path``); its manifest."""
    audio = write_wav(path, delivery.wav, delivery.result.sample_rate)
    manifest = {**delivery.record, "output": {"file": audio.name, "sha256": file_sha256(audio),
                                              **delivery.record["output"]}}
    if manifest_path is not None:
        write_manifest(manifest_path, manifest)
    return manifest


def region_levels(result: EditResult, wav: np.ndarray) -> tuple[dict, dict] | None:
    """Levels of the edited region before and after, or None without a region: outside it the file is
    the source, so the whole file's change would dilute the region's (−10 dB on 5 s of 40 reads −1)."""
    if result.record.region is None or result.source is None:
        return None
    before, after = replace(result, wav=np.clip(wav, -1.0, 1.0)).compared()
    return levels.levels(before, result.sample_rate), levels.levels(after, result.sample_rate)


def _leveled(wav: np.ndarray, headroom: bool) -> tuple[np.ndarray, dict[str, Any] | None]:
    """The clip to write and, with ``headroom``, the gain that keeps its peak under the ceiling. Off by
    default: the app writes the level the model produced, so a volume edit stays measurable."""
    if not headroom:
        return wav, None
    gain = levels.headroom_gain(wav)
    return (wav * np.float32(gain)).astype(np.float32), {
        "ceiling_dbfs": levels.HEADROOM_DBFS, "gain_db": round(dsp.dbfs(gain), 2)}


def clipping_warning(clipped: int, total: int) -> str:
    """The sentence for a result that reaches full scale, with the fix."""
    return (f"The result clips: {clipped} of {total} samples ({100 * clipped / total:.2g} %) are at full scale in "
            "the WAV. Run again with headroom on (Advanced; headroom=True in the API) to keep the peak under "
            "−1 dBFS.")

