"""Turns one result into the files the app hands out: a level-true WAV, a PNG figure, a manifest.

Each request writes into its own fresh folder (``tempfile.mkdtemp`` under the root the UI
passes, which is inside Gradio's temp dir), so concurrent users never share a file name and
nothing lands in the working directory. WAVs are PCM16 written by audio_io.write_wav at the
exact level the model produced: returning float arrays to Gradio would peak-normalise them and
undo a volume edit. When a new folder is made, folders older than an hour are pruned, and then
the oldest ones until all of them fit ``MAX_RESULT_BYTES``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from auk_app import levels
from auk_app.audio_io import write_wav
from auk_app.audex.request import TextToAudioResult
from auk_app.manifest import audex_manifest, file_sha256, write_manifest
from auk_app.results import Delivery, refuse_non_finite, region_levels, write_edit
from auk_app.ui import figures

MAX_AGE_SECONDS = 3600  # Gradio's own cache copies expire on the same schedule (Blocks delete_cache)
# A 10-minute region result is a 29 MB WAV: an hour of them could fill a Space's disk, so the
# request folders together keep to 1 GiB (the newest result can take it over by its own size).
MAX_RESULT_BYTES = 1 << 30
MIN_AGE_SECONDS = 300  # a result this young may still be downloading: kept even over the size budget
# Uploads (up to 120 MB each) are held to a budget of their own: twenty in an hour put 2.3 GB on disk.
MAX_UPLOAD_BYTES = 1 << 30
UPLOAD_CHECK_SECONDS = 30.0  # how often the uploads are held to it


@dataclass(frozen=True)
class Deliverables:
    audio: Path | None
    figure: Path
    manifest: dict[str, Any]
    manifest_file: Path


@dataclass(frozen=True)
class PendingFigure:
    """An edit's before/after figure, not yet drawn: drawing can take far longer than writing the
    audio (a first figure pays matplotlib's one-time costs), so the page shows the audio first and then
    calls ``draw``."""

    path: Path
    output: np.ndarray
    sample_rate: int
    source: np.ndarray | None
    caption: str
    region: tuple[float, float] | None

    def draw(self) -> Path:
        return figures.before_after(self.path, self.output, self.sample_rate, source=self.source,
                                    caption=self.caption, region=self.region)


@dataclass(frozen=True)
class EditFiles:
    """An edit's WAV and manifest, written, and its figure, still to draw (at ``figure.path``)."""

    audio: Path
    figure: PendingFigure
    manifest: dict[str, Any]
    manifest_file: Path


def new_request_dir(root: str | Path, *, max_age_s: float = MAX_AGE_SECONDS,
                    max_bytes: int = MAX_RESULT_BYTES, min_age_s: float = MIN_AGE_SECONDS) -> Path:
    """A fresh, uniquely named folder under ``root``, once older request folders are pruned: those
    past ``max_age_s``, then the oldest until the rest hold at most ``max_bytes``; never one younger
    than ``min_age_s``, whose result a client may still be fetching (Gradio serves it in place)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    folders = []
    for folder in root.glob("req_*"):
        try:
            folders.append((folder.stat().st_mtime, _size(folder), folder))
        except FileNotFoundError:  # another request pruned it first
            pass
    total = sum(size for _, size, _ in folders)
    now = time.time()
    for mtime, size, folder in sorted(folders):
        if (mtime >= now - max_age_s and total <= max_bytes) or mtime > now - min_age_s:
            break
        shutil.rmtree(folder, ignore_errors=True)
        total -= size
    return Path(tempfile.mkdtemp(prefix="req_", dir=root))


def prune_uploads(paths: set[str], *, max_bytes: int = MAX_UPLOAD_BYTES, min_age_s: float = MIN_AGE_SECONDS) -> None:
    """Hold the uploaded files at ``paths`` (Gradio's record of every upload, ``Blocks.upload_file_set``;
    gone ones leave it) to ``max_bytes``: the oldest go first, never one younger than ``min_age_s``,
    which its request may still be reading."""
    uploads = []
    for path in list(paths):
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            paths.discard(path)
            continue
        uploads.append((stat.st_mtime, stat.st_size, path))
    total, now = sum(size for _, size, _ in uploads), time.time()
    for mtime, size, path in sorted(uploads):
        if total <= max_bytes or mtime > now - min_age_s:
            break
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        paths.discard(path)
        total -= size


def keep_uploads(paths: set[str], *, every_s: float = UPLOAD_CHECK_SECONDS) -> threading.Thread:
    """A daemon thread that prunes the uploads (:func:`prune_uploads`) every ``every_s`` seconds: an
    upload costs disk the moment it arrives, whether or not an edit ever reads it."""
    def run() -> None:
        while True:
            time.sleep(every_s)
            prune_uploads(paths)

    thread = threading.Thread(target=run, name="uploads", daemon=True)
    thread.start()
    return thread


def _size(folder: Path) -> int:
    """Bytes of the files in a request folder (flat: a WAV, a PNG, a manifest)."""
    total = 0
    for entry in os.scandir(folder):
        try:
            total += entry.stat().st_size
        except FileNotFoundError:
            pass
    return total


def slug(text: str, words: int = 4) -> str:
    """A short ASCII file-name part from a caption or instruction ("rain-on-a-tin")."""
    parts = re.findall(r"[a-z0-9]+", text.lower())[:words]
    return "-".join(parts) or "clip"


def render_edits(deliveries: list[Delivery], key: str, *, root: str | Path) -> list[EditFiles]:
    """:func:`render_edit` of each candidate; if one fails, none of their files stay."""
    made: list[EditFiles] = []
    try:
        for delivery in deliveries:
            made.append(render_edit(delivery, key, root=root))
    except BaseException:
        for files in made:
            shutil.rmtree(files.audio.parent, ignore_errors=True)
        raise
    return made


@contextlib.contextmanager
def _fresh_folder(root: str | Path):
    """A request's own folder (:func:`new_request_dir`), removed with whatever it holds if writing fails:
    a client that gets an error gets no files either."""
    folder = new_request_dir(root)
    try:
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def render_edit(delivery: Delivery, key: str, *, root: str | Path) -> EditFiles:
    """The WAV and manifest of one delivered edit made by model ``key``, in a fresh folder, and its
    figure to draw next (``.figure.draw()``), so the audio need not wait for it. The manifest's
    ``timings.render`` is the files', not the figure's."""
    with _fresh_folder(root) as folder:
        return _render_edit(delivery, key, folder)


def _render_edit(delivery: Delivery, key: str, folder: Path) -> EditFiles:
    started = time.perf_counter()
    result, record = delivery.result, delivery.result.record
    stem = f"auk_{key}_{slug(record.instruction)}_seed{record.seed}"
    manifest = write_edit(delivery, folder / f"{stem}.wav")
    manifest["timings"]["render"] = round(time.perf_counter() - started, 4)
    region = region_levels(result, delivery.wav)
    before = None if manifest["source"] is None else {k: manifest["source"][k] for k in levels.LEVELS}
    after = {k: manifest["output"][k] for k in levels.LEVELS}
    headline = levels.describe(before, after) if region is None else (
        f"region {record.region[0]:g}–{record.region[1]:g} s: {levels.describe(*region)}")
    figure = PendingFigure(folder / f"{stem}.png", delivery.wav, result.sample_rate, result.source,
                           f"{record.instruction[:110]}\n{headline}", record.region)
    return EditFiles(folder / f"{stem}.wav", figure, manifest, write_manifest(folder / f"{stem}.json", manifest))


def render_audex(made: TextToAudioResult, *, randomized_seed: bool, root: str | Path) -> Deliverables:
    """Files for a text-to-audio run (plus the unmasked comparison's token plot, if it ran)."""
    if made.result.waveform is not None:
        refuse_non_finite(made.result.waveform)
    with _fresh_folder(root) as folder:
        return _render_audex(made, randomized_seed, folder)


def _render_audex(made: TextToAudioResult, randomized_seed: bool, folder: Path) -> Deliverables:
    started = time.perf_counter()
    result, caption = made.result, made.request.caption
    wav = result.waveform
    stem = f"audex_{slug(caption)}_seed{result.seed}"
    audio, output_info = None, None
    if wav is not None and wav.size:
        audio = write_wav(folder / f"{stem}.wav", wav, result.sample_rate)
        output_info = {"file": audio.name, "sha256": file_sha256(audio), "format": "WAV PCM16 mono",
                       **levels.levels(wav, result.sample_rate)}
    streams = [("Token stream with the RVQ phase mask", result.codec_ids, result.report)]
    if made.unmasked is not None:
        streams.append(("Same seed without the mask", made.unmasked.codec_ids, made.unmasked.report))
    figure = figures.audex_panel(
        folder / f"{stem}.png", wav, result.sample_rate, token_streams=streams,
        caption=f"{caption[:110]} · seed {result.seed} · {result.sample_rate / 1000:g} kHz",
    )
    manifest = audex_manifest(made, output=output_info, randomized_seed=randomized_seed)
    manifest["timings"]["render"] = round(time.perf_counter() - started, 4)
    return Deliverables(audio, figure, manifest, write_manifest(folder / f"{stem}.json", manifest))
