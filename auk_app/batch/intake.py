"""Uploaded files made into a batch: several clips, a zip of them, or a CSV (or JSONL) beside them.

:func:`stage` lays the uploads side by side in one folder (a zip's clips and manifest flattened
into it by their names), so a manifest's relative paths find the clips it names, and reads the
manifest there (or the folder, with one instruction). :func:`measure` counts the items and their
seconds of audio from the files' headers, without decoding, so the page refuses a batch over its
limits before anything runs; :func:`count` counts the items alone, copying nothing, so the queue
counts a batch as the runs it is as it arrives.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

from auk_app.batch.manifest import CLIP_SUFFIXES, Manifest, ManifestError, read_manifest, rows_in

MANIFEST_SUFFIXES = (".csv", ".jsonl")
MAX_ZIP_BYTES = 1 << 30  # what a zip may unpack to: an upload of 120 MB cannot become a full disk
MAX_MANIFEST_BYTES = 1 << 24  # a manifest the queue's count reads; a larger one counts as one item


@dataclass(frozen=True)
class Size:
    items: int
    seconds: float


def stage(paths: list[str | Path], folder: Path, instruction: str | None) -> Manifest:
    """The uploads in ``folder`` and their manifest: the uploaded CSV or JSONL if there is one (its
    instruction column may be empty where ``instruction`` fills it), else one item a clip."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in map(Path, paths):
        if path.suffix.lower() == ".zip":
            _unzip(path, folder)
        elif path.suffix.lower() in (*CLIP_SUFFIXES, *MANIFEST_SUFFIXES):
            shutil.copyfile(path, folder / path.name)
        else:
            raise ManifestError(f"{path.name} is neither a clip ({', '.join(CLIP_SUFFIXES)}), a zip of clips nor a "
                                "CSV or JSONL manifest; upload those.")
    manifests = sorted(p for p in folder.iterdir() if p.suffix.lower() in MANIFEST_SUFFIXES)
    if len(manifests) > 1:
        raise ManifestError(f"The upload holds {len(manifests)} manifests ({', '.join(p.name for p in manifests)}); "
                            "upload one CSV or JSONL beside the clips.")
    return read_manifest(manifests[0] if manifests else folder, instruction=instruction)


def _unzip(path: Path, folder: Path) -> None:
    """A zip's clips and manifest, by their base names (no member can write outside ``folder``)."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = _members(archive)
            if sum(m.file_size for m in members) > MAX_ZIP_BYTES:
                raise ManifestError(f"{path.name} unpacks to more than {MAX_ZIP_BYTES >> 20} MB; upload fewer clips.")
            for member in members:
                with archive.open(member) as source, open(folder / Path(member.filename).name, "wb") as target:
                    shutil.copyfileobj(source, target)
    except zipfile.BadZipFile as exc:
        raise ManifestError(f"{path.name} is not a zip file that can be read; upload the clips or a valid zip.") from exc


def _members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """A zip's clips and manifests: its files with those suffixes, hidden ones (``.DS_Store``,
    ``._clip.wav``) left out."""
    return [m for m in archive.infolist() if not m.is_dir() and not Path(m.filename).name.startswith(".")
            and Path(m.filename).suffix.lower() in (*CLIP_SUFFIXES, *MANIFEST_SUFFIXES)]


def measure(paths: list[str | Path], instruction: str | None) -> Size:
    """How many items the uploads make and their seconds of audio (from the headers; a clip that
    cannot be read counts 0 s here and fails its row in the run)."""
    with tempfile.TemporaryDirectory(prefix="auk_batch_") as scratch:
        manifest = stage(paths, Path(scratch), instruction)
        seconds = sum(_seconds(item.knobs.get("audio")) for item in manifest.items if item.problem is None)
        return Size(len(manifest.items), seconds)


def count(paths: list[str | Path]) -> int:
    """The items the uploads make: the rows of their one manifest (a zip's too), else their clips,
    from a zip's listing and the manifest's text alone; what cannot be read counts one (its
    refusal comes from the validator)."""
    clips, manifests = 0, []
    try:
        for path in map(Path, paths):
            suffix = path.suffix.lower()
            if suffix == ".zip":
                with zipfile.ZipFile(path) as archive:
                    for member in _members(archive):
                        name = Path(member.filename)
                        if name.suffix.lower() in CLIP_SUFFIXES:
                            clips += 1
                        elif member.file_size < MAX_MANIFEST_BYTES:
                            manifests.append((name, archive.read(member).decode("utf-8-sig")))
            elif suffix in MANIFEST_SUFFIXES and path.stat().st_size < MAX_MANIFEST_BYTES:
                manifests.append((path, path.read_text(encoding="utf-8-sig")))
            elif suffix in CLIP_SUFFIXES:
                clips += 1
        if len(manifests) == 1:
            return max(1, len(rows_in(manifests[0][1], manifests[0][0])))
    except (OSError, UnicodeDecodeError, zipfile.BadZipFile, ManifestError):
        return 1
    return max(1, clips)


def _seconds(path: str | None) -> float:
    if path is None:
        return 0.0
    try:
        return float(sf.info(path).duration)
    except (RuntimeError, sf.LibsndfileError):
        return 0.0
