"""The only module that reads or writes audio files.

Everything downstream receives a :class:`Waveform`: float32 samples [channels, T] at a stated
rate, so nothing guesses the channel axis. Files are decoded with soundfile (WAV, FLAC, OGG,
MP3 through libsndfile) and, for anything else, librosa's audioread fallback.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.validate import check_format


@dataclass(frozen=True)
class Waveform:
    """Float32 samples [channels, T] at ``sample_rate`` Hz, as decoded (not yet checked)."""

    samples: np.ndarray
    sample_rate: int

    @property
    def channels(self) -> int:
        return self.samples.shape[0]

    @property
    def n_samples(self) -> int:
        return self.samples.shape[1]

    @property
    def seconds(self) -> float:
        return self.n_samples / self.sample_rate


def read_audio(path: str | Path, limits: Limits | None = None) -> Waveform:
    """Decode a file; unreadable or unsupported files raise InputError naming the file.

    With ``limits`` the header is checked before anything is decoded, and at most one second
    past the length limit is decoded, so a small file that unpacks to hours (a FLAC of silence)
    costs neither time nor memory.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"The audio file {path.name} does not exist or is not a file.")
    max_seconds = None if limits is None else limits.max_input_seconds + 1.0
    try:
        handle = sf.SoundFile(str(path))
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError):
        return _read_with_librosa(path, limits, max_seconds)
    with handle:
        rate = int(handle.samplerate)
        if limits is not None:
            check_format(rate, handle.channels, handle.frames, limits)
        frames = -1 if max_seconds is None else math.ceil(max_seconds * rate)
        try:
            data = handle.read(frames, dtype="float32", always_2d=True)
        except (sf.LibsndfileError, RuntimeError) as exc:
            raise InputError(f"{path.name} is damaged: its audio data could not be decoded. Re-export it.") from exc
    return Waveform(np.ascontiguousarray(data.T), rate)


def _read_with_librosa(path: Path, limits: Limits | None, max_seconds: float | None) -> Waveform:
    """Formats libsndfile does not know, through librosa's audioread fallback (no header to check first)."""
    try:
        import librosa

        with warnings.catch_warnings():  # the audioread fallback is deprecated upstream and says so loudly
            warnings.simplefilter("ignore")
            data, rate = librosa.load(str(path), sr=None, mono=False, dtype=np.float32, duration=max_seconds)
    except Exception as exc:  # audioread raises its own hierarchy, and nothing more specific
        raise InputError(
            f"Could not read {path.name} as audio: the format is not supported or the file is damaged. "
            "Upload a WAV, FLAC, OGG or MP3 file."
        ) from exc
    waveform = Waveform(np.atleast_2d(data).astype(np.float32), int(rate))
    if limits is not None:
        check_format(waveform.sample_rate, waveform.channels, waveform.n_samples, limits)
    return waveform


def from_array(samples: np.ndarray, sample_rate: int) -> Waveform:
    """Wrap an in-memory clip: [T] mono, or [channels, T] with channels first."""
    samples = np.asarray(samples)
    if samples.ndim == 1:
        samples = samples[None]
    if samples.ndim != 2:
        raise InputError(f"Audio arrays must be [T] or [channels, T]; got shape {samples.shape}.")
    if np.issubdtype(samples.dtype, np.integer):
        samples = samples / float(np.iinfo(samples.dtype).max)
    if not isinstance(sample_rate, (int, np.integer)) or sample_rate <= 0:
        raise InputError(f"The sample rate must be a positive whole number of Hz; got {sample_rate!r}.")
    return Waveform(np.ascontiguousarray(samples, dtype=np.float32), int(sample_rate))


def load_audio(source: str | Path | tuple[np.ndarray, int] | Waveform, limits: Limits | None = None) -> Waveform:
    """A path, an (array, rate) pair or a Waveform, as a Waveform (files read within ``limits``)."""
    if isinstance(source, Waveform):
        return source
    if isinstance(source, tuple):
        return from_array(*source)
    return read_audio(source, limits)


PCM16_SCALE = 32768  # libsndfile writes float x as rint(x · 32768), clipped to −32768…32767


def full_scale_samples(mono: np.ndarray) -> int:
    """How many samples :func:`write_wav` puts at PCM16 full scale (32767 or −32768), counted the
    way libsndfile converts, before the clip: what clipped, plus what only just reached the rail.
    A count of samples above 1.0 alone misses a waveform a decoder already clamped to ±1."""
    codes = np.rint(np.asarray(mono) * PCM16_SCALE)
    return int(np.count_nonzero((codes >= PCM16_SCALE - 1) | (codes <= -PCM16_SCALE)))


def write_wav(path: str | Path, mono: np.ndarray, sample_rate: int, *, subtype: str = "PCM_16") -> Path:
    """Write a mono clip at its exact level (clipped to [-1, 1], never normalised).

    Written to a sibling temp name and renamed, so a failure leaves no half-written file.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    try:
        sf.write(str(tmp), np.clip(mono, -1.0, 1.0), sample_rate, subtype=subtype, format="WAV")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path

