"""The only module that reads or writes audio files.

Everything downstream receives a :class:`Waveform` (float32 samples [channels, T] at a stated
rate, so nothing guesses the channel axis) or, where the server reads an upload, a
:class:`MonoClip`: the mono mix made block by block while decoding, so an 8-channel file costs
the memory of its mono samples. Files are decoded with soundfile (WAV, FLAC, OGG, MP3 through
libsndfile) and, for anything else, librosa's audioread fallback; either way the header is
checked against the limits (rate, channels, length, samples) before anything is decoded.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from auk_app import dsp, jit_cache
from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.validate import check_format


DECODE_BLOCK_FRAMES = 1 << 14  # frames read at a time: 0.5 MB of 8-channel float32


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


@dataclass(frozen=True)
class MonoClip:
    """A clip mixed to mono (channel mean) as it was decoded, with what the mix would hide."""

    mono: np.ndarray  # float32 [T]
    sample_rate: int
    channels: int  # the file's, before the mix
    clipping: bool  # some channel has flat tops at full scale (dsp.flat_tops)

    @property
    def seconds(self) -> float:
        return self.mono.size / self.sample_rate


def _open(path: Path) -> sf.SoundFile | None:
    """The file through libsndfile; None where it does not know the format."""
    if not path.is_file():
        raise InputError(f"The audio file {path.name} does not exist or is not a file.")
    try:
        return sf.SoundFile(str(path))
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError):
        return None


def _frames_to_read(handle: sf.SoundFile, limits: Limits | None) -> int:
    """Check the header against ``limits``; then the frames to decode: all, or at most one second
    past the length limit, in case the header understates the length."""
    rate = int(handle.samplerate)
    if limits is None:
        return handle.frames
    check_format(rate, handle.channels, handle.frames, limits)
    return min(handle.frames, math.ceil((limits.max_input_seconds + 1.0) * rate))


def _damaged(path: Path) -> InputError:
    return InputError(f"{path.name} is damaged: its audio data could not be decoded. Re-export it.")


def read_mono(path: str | Path, limits: Limits | None = None) -> MonoClip:
    """Decode a file straight to its mono mix.

    Peak memory is the mono samples plus one block, not channels × samples: with the header
    checked first (``limits.max_decoded_samples``), no upload can make the server allocate more
    than that budget's mono share, however well it compresses. A server keeps what it decoded
    lately in its :class:`~auk_app.uploads.Uploads`, so a clip is decoded once per edit.
    """
    return _decode_mono(Path(path), limits)


def _decode_mono(path: Path, limits: Limits | None) -> MonoClip:
    """The file's mono mix, decoded ``DECODE_BLOCK_FRAMES`` at a time."""
    handle = _open(path)
    if handle is None:
        return _mixed(_read_with_librosa(path, limits))
    with handle:
        rate, channels = int(handle.samplerate), handle.channels
        frames = _frames_to_read(handle, limits)
        mono = np.empty(frames, np.float32)
        buffer = np.empty((min(DECODE_BLOCK_FRAMES, max(frames, 1)), channels), np.float32)
        done, clipping, tail = 0, False, buffer[:0].copy()
        try:
            while done < frames:
                block = handle.read(min(len(buffer), frames - done), always_2d=True, out=buffer)
                if not len(block):
                    break
                mono[done: done + len(block)] = dsp.to_mono(block.T)
                # A run inside the block, or one across the seam with the previous block's tail.
                clipping = clipping or dsp.flat_tops(block) or dsp.flat_tops(
                    np.concatenate([tail, block[: dsp.CLIP_RUN - 1]]))
                tail = block[len(block) - (dsp.CLIP_RUN - 1):].copy()
                done += len(block)
        except (sf.LibsndfileError, RuntimeError) as exc:
            raise _damaged(path) from exc
    return MonoClip(mono if done == frames else mono[:done].copy(), rate, channels, clipping)


def _read_with_librosa(path: Path, limits: Limits | None) -> Waveform:
    """Formats libsndfile does not know, through librosa's audioread fallback; the stream's rate,
    channels and length are checked before it is decoded."""
    unreadable = InputError(
        f"Could not read {path.name} as audio: the format is not supported or the file is damaged. "
        "Upload a WAV, FLAC, OGG or MP3 file."
    )
    try:
        import audioread

        with audioread.audio_open(str(path)) as probe:
            rate = int(probe.samplerate)  # a rate of 0 has no duration; check_format refuses the rate first
            header = (rate, probe.channels, math.ceil(probe.duration * rate) if rate > 0 else 0)
    except Exception as exc:  # audioread raises its own hierarchy, and nothing more specific
        raise unreadable from exc
    max_seconds = None
    if limits is not None:
        check_format(*header, limits)
        # A container may understate its length: decode no more than the sample budget allows.
        max_seconds = min(limits.max_input_seconds + 1.0, limits.max_decoded_samples / (header[0] * header[1]))
    try:
        with warnings.catch_warnings():  # the audioread fallback is deprecated upstream and says so loudly
            warnings.simplefilter("ignore")
            data, rate = jit_cache.librosa().load(str(path), sr=None, mono=False, dtype=np.float32, duration=max_seconds)
    except Exception as exc:
        raise unreadable from exc
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


def load_mono(source: str | Path | tuple[np.ndarray, int] | Waveform, limits: Limits | None = None) -> MonoClip:
    """A path (read within ``limits`` by :func:`read_mono`), an (array, rate) pair or a Waveform, mixed to mono."""
    if isinstance(source, (str, Path)):
        return read_mono(source, limits)
    return _mixed(source if isinstance(source, Waveform) else from_array(*source))


def _mixed(waveform: Waveform) -> MonoClip:
    return MonoClip(dsp.to_mono(waveform.samples), waveform.sample_rate, waveform.channels,
                    dsp.flat_tops(waveform.samples.T))


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
    return _write_atomically(path, np.clip(mono, -1.0, 1.0), sample_rate, "WAV", subtype)


# The downloads offered beside a result's WAV: lossless FLAC always; MP3 where this libsndfile
# encodes it (1.1 and later, built with LAME, as the soundfile wheels are).
COMPANION_FORMATS = {"flac": ("FLAC", "PCM_16"), "mp3": ("MP3", "MPEG_LAYER_III")}


def companion_formats() -> dict[str, tuple[str, str]]:
    """The COMPANION_FORMATS this machine's libsndfile can write."""
    available = sf.available_formats()
    return {ext: spec for ext, spec in COMPANION_FORMATS.items() if spec[0] in available}


def write_companions(wav: str | Path) -> dict[str, Path]:
    """The WAV's clip again as FLAC (and MP3 where available), beside it, from the WAV's own PCM16
    samples, so the FLAC decodes bit-exact to the WAV and neither differs in level."""
    wav = Path(wav)
    samples, rate = sf.read(str(wav), dtype="int16")
    return {ext: _write_atomically(wav.with_suffix(f".{ext}"), samples, rate, fmt, subtype)
            for ext, (fmt, subtype) in companion_formats().items()}


def part_path(path: Path) -> Path:
    """Where a file is written before it is renamed into place, so a failure leaves no half of it."""
    return path.with_name(path.name + ".part")


def _write_atomically(path: str | Path, data: np.ndarray, sample_rate: int, fmt: str, subtype: str) -> Path:
    """``sf.write`` to a sibling temp name, then renamed: a failure leaves no half-written file."""
    path = Path(path)
    tmp = part_path(path)
    try:
        sf.write(str(tmp), data, sample_rate, subtype=subtype, format=fmt)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path

