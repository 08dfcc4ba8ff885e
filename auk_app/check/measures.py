"""Measurements behind the edit check, on one mono clip at a time (``Clip``) and on pairs.

Each number comes from a well-kept library: loudness from pyloudnorm (ITU-R BS.1770-4), F0
from librosa's pYIN, silence bounds from librosa's trim. A ``Clip`` computes each measure once,
so a check and its "everything else kept" number share the F0 tracks, pYIN's cost.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from auk_app import jit_cache
from auk_app.check.harmonics import single_pitch as one_pitch_frames
from auk_app.dsp import dbfs, resample, rms

F0_RATE = 16000  # pYIN runs at 16 kHz: a third less work than 24 kHz, ample for F0 up to 2.1 kHz
F0_RANGE_HZ = (65.0, 2100.0)  # C2..C7: male speech to a high sine tone
F0_FRAME = 1024  # 64 ms at 16 kHz: four periods of the lowest F0
F0_HOP = 256
F0_RESOLUTION = 0.2  # pYIN's grid in semitones: ±10 cents, a fifth of the pitch tolerance, at a fifth of 0.1's cost
ENVELOPE_SECONDS = 0.02  # 20 ms frames: a syllable spans several
SILENCE_TOP_DB = 40.0  # quieter than the clip's peak by this much is silence at an end
FLOOR_PERCENTILE, SIGNAL_PERCENTILE = 10, 95  # frame levels taken as noise floor and as signal
FLOOR_LIMIT_DB = -100.0  # a digitally silent frame counts as this, so an SNR stays finite
# The level contour that what was kept compares (auk_app.check.kept) is taken in these bands (Hz): in
# bands, speech under loud white noise still shows its syllables below 1 kHz, and a low chord's contour
# is its own, not the codec noise an MP3 leaves above it. Nothing under 60 Hz counts: a low rumble
# (brown noise) wanders there by ±2 dB in 100 ms on its own, and two takes of it would disagree.
CONTOUR_BANDS_HZ = (60, 250, 500, 1000, 2000, 4000, 12000)
CONTOUR_CHUNK_FRAMES = 4096  # frames transformed at once, so an hour's spectrogram never sits in memory whole
# Mel bands of the long-term spectrum, from 85 ms frames: fine enough (about 15 Hz wide under 500 Hz)
# that a chord's notes stand apart, where a noise band spread over them would fill the gaps.
SPECTRUM_BANDS, SPECTRUM_SECONDS = 96, 0.085
SINGLE_PITCH_SHARE = 0.5  # a source has one pitch to follow where at least half its voiced frames hold one,
PITCHED_SHARE = 0.15  # and they are at least this share of its sounding frames: speech in loud noise, where pYIN
# hears a voice in one frame of twelve, gives medians of a few frames that another take does not repeat
log = logging.getLogger(__name__)


class _measure:
    """A Clip's measure, computed on first use under the clip's own lock and kept on it. Not
    functools.cached_property: on Python 3.11 that holds one lock for every instance, so one clip's
    pYIN waited for another's, and a measure that met numba's cache lock inside it could deadlock
    with the thread that held that lock."""

    def __init__(self, compute):
        self.compute, self.name, self.__doc__ = compute, compute.__name__, compute.__doc__

    def __get__(self, clip, owner=None):
        if clip is None:
            return self
        with clip._lock:
            if self.name not in clip.__dict__:
                clip.__dict__[self.name] = self.compute(clip)
            return clip.__dict__[self.name]


class Clip:
    """One mono clip and its measures, each computed on first use (once, whichever thread asks)."""

    def __init__(self, wav: np.ndarray, sample_rate: int):
        warm_up()  # before any measure's lock: the kernels may have to wait for another process
        # float32 and contiguous, whatever was passed: the types warm_up compiled the kernels for
        self.wav = np.ascontiguousarray(np.asarray(wav, dtype=np.float32).reshape(-1))
        self.rate = sample_rate
        self._lock = threading.RLock()  # a measure may read another (median_f0 reads f0)

    @property
    def seconds(self) -> float:
        return self.wav.size / self.rate

    @_measure
    def loudness(self) -> float:
        """Integrated loudness in LUFS (K-weighted, gated: pauses do not count); nan for a clip
        shorter than one 400 ms block, -inf when every block is gated away."""
        import pyloudnorm  # imports scipy.signal: seconds of the app's start, paid by the first check instead

        if self.seconds <= 0.4:
            return float("nan")
        return float(pyloudnorm.Meter(self.rate).integrated_loudness(self.wav.astype(np.float64)))

    @_measure
    def level(self) -> float:
        """RMS level in dBFS: the loudness fallback for clips too short or too quiet to gate."""
        return dbfs(rms(self.wav))

    @_measure
    def wav16(self) -> np.ndarray:
        """The clip at F0_RATE, where pYIN and the test of one pitch run."""
        return resample(self.wav, self.rate, F0_RATE)

    @_measure
    def f0(self) -> np.ndarray:
        """F0 per 16 ms frame in Hz, nan where pYIN hears no voice."""
        wav = self.wav16
        if wav.size < F0_FRAME:
            return np.full(0, np.nan)
        track, _, _ = _librosa().pyin(wav, fmin=F0_RANGE_HZ[0], fmax=F0_RANGE_HZ[1], sr=F0_RATE,
                                   frame_length=F0_FRAME, hop_length=F0_HOP, resolution=F0_RESOLUTION)
        return track

    @_measure
    def melody(self) -> np.ndarray:
        """The F0 track on the frames that hold one pitch (:mod:`auk_app.check.harmonics`), nan elsewhere:
        what a melody or a pitch shift can be read from; a chord's frames are left out."""
        if self.f0.size == 0:
            return self.f0
        power = np.abs(_librosa().stft(self.wav16, n_fft=F0_FRAME, hop_length=F0_HOP)) ** 2  # centred, as pYIN's
        return np.where(one_pitch_frames(power, self.f0, F0_RATE, F0_FRAME), self.f0, np.nan)

    @property
    def single_pitch(self) -> bool:
        """Whether pYIN's F0 follows the clip: at least SINGLE_PITCH_SHARE of its voiced frames hold one
        pitch, and those are at least PITCHED_SHARE of its sounding frames."""
        voiced = np.count_nonzero(np.isfinite(self.f0))
        pitched = np.count_nonzero(np.isfinite(self.melody))
        sounding = self.active_frames(self.f0, F0_HOP / F0_RATE).size
        return voiced > 0 and pitched >= SINGLE_PITCH_SHARE * voiced and pitched >= PITCHED_SHARE * sounding

    @_measure
    def median_f0(self) -> float:
        """Median F0 over voiced frames: it ignores onsets, fades and the odd octave slip; nan if unvoiced."""
        voiced = self.f0[np.isfinite(self.f0)]
        return float(np.median(voiced)) if voiced.size else float("nan")

    @_measure
    def envelope(self) -> np.ndarray:
        """RMS per 20 ms frame, linear amplitude (frames weigh by energy, so syllables, not pauses, lead)."""
        frame = max(1, round(self.rate * ENVELOPE_SECONDS))
        return _librosa().feature.rms(y=self.wav, frame_length=frame, hop_length=frame, center=False)[0]

    @_measure
    def contour(self) -> np.ndarray:
        """Power per band (CONTOUR_BANDS_HZ) per 20 ms frame, [bands, frames]: the level contour that
        what was kept compares. Hann frames of twice the hop, in chunks of CONTOUR_CHUNK_FRAMES."""
        hop = max(1, round(self.rate * ENVELOPE_SECONDS))
        n_fft = 2 * hop
        edges = np.searchsorted(np.fft.rfftfreq(n_fft, 1 / self.rate), CONTOUR_BANDS_HZ)
        frames = max(0, 1 + (self.wav.size - n_fft) // hop) if self.wav.size >= n_fft else 0
        out = np.zeros((len(CONTOUR_BANDS_HZ) - 1, frames))
        window = np.hanning(n_fft).astype(np.float32)
        for start in range(0, frames, CONTOUR_CHUNK_FRAMES):
            stop = min(start + CONTOUR_CHUNK_FRAMES, frames)
            piece = self.wav[start * hop:(stop - 1) * hop + n_fft]
            power = np.abs(np.fft.rfft(np.lib.stride_tricks.sliding_window_view(piece, n_fft)[::hop] * window)) ** 2
            cumulative = np.concatenate([np.zeros((power.shape[0], 1)), np.cumsum(power, axis=1)], axis=1)
            out[:, start:stop] = (cumulative[:, edges[1:]] - cumulative[:, edges[:-1]]).T
        return out

    @_measure
    def active(self) -> tuple[int, int]:
        """Sample bounds of the clip without its leading and trailing silence (40 dB below its peak)."""
        if not np.any(self.wav):
            return 0, 0
        _, (start, end) = _librosa().effects.trim(self.wav, top_db=SILENCE_TOP_DB, frame_length=512, hop_length=128)
        return int(start), int(end)

    @_measure
    def spectrum(self) -> np.ndarray:
        """The long-term spectrum: mean power per mel band over the whole clip (silence adds nothing)."""
        n_fft = 1 << max(8, round(np.log2(self.rate * SPECTRUM_SECONDS)))  # 2048 at 24 kHz
        if self.wav.size < n_fft:
            return np.zeros(SPECTRUM_BANDS)
        mel = _librosa().feature.melspectrogram(y=self.wav, sr=self.rate, n_fft=n_fft, hop_length=n_fft // 2,
                                             n_mels=SPECTRUM_BANDS, center=False)
        return mel.mean(axis=1)

    def measure_all(self) -> Clip:
        """Take every measure now (pYIN is the slow one), so later checks read them from the cache."""
        self.median_f0, self.melody, self.envelope, self.contour, self.spectrum, self.loudness, self.active  # noqa: B018
        return self

    @property
    def active_seconds(self) -> float:
        start, end = self.active
        return (end - start) / self.rate

    @property
    def edge_silence(self) -> tuple[float, float]:
        """Seconds of silence at the start and at the end."""
        start, end = self.active
        return start / self.rate, (self.wav.size - end) / self.rate

    def active_frames(self, track: np.ndarray, frame_seconds: float) -> np.ndarray:
        """The frames of a per-frame ``track`` that fall between the silences at the ends."""
        start, end = (round(bound / self.rate / frame_seconds) for bound in self.active)
        return track[start:max(end, start + 1)]

    @_measure
    def frame_levels(self) -> np.ndarray:
        """dBFS per 20 ms frame, digital silence raised to -100 dB so percentiles stay finite."""
        with np.errstate(divide="ignore"):
            return np.maximum(20 * np.log10(self.envelope), FLOOR_LIMIT_DB)

    @property
    def noise_floor(self) -> float:
        """The quietest tenth of 20 ms frames, in dBFS: pauses and the hiss in them."""
        levels = self.frame_levels
        return float(np.percentile(levels, FLOOR_PERCENTILE)) if levels.size else FLOOR_LIMIT_DB

    @property
    def snr(self) -> float:
        """Signal-to-noise estimate without a clean reference: the loud frames' level (95th
        percentile) over the noise floor, in dB."""
        levels = self.frame_levels
        return float(np.percentile(levels, SIGNAL_PERCENTILE)) - self.noise_floor if levels.size else float("nan")


class SharedClip:
    """A source as one Clip for all of an edit's candidates, so its measures (pYIN) are taken once,
    and taken while the model runs (:meth:`measure`) rather than after it."""

    def __init__(self) -> None:
        self._clip: Clip | None = None
        self._lock = threading.Lock()

    def clip(self, wav: np.ndarray, rate: int) -> Clip:
        with self._lock:
            if self._clip is None:
                self._clip = Clip(wav, rate)
            return self._clip

    def measure(self, wav: np.ndarray, rate: int) -> None:
        """Take every measure of the source now. A failure is the check's to meet again and report."""
        try:
            self.clip(wav, rate).measure_all()
        except Exception:  # noqa: BLE001
            log.debug("measuring the source ahead of the check failed", exc_info=True)


def volume_change(source: Clip, result: Clip) -> tuple[float, str]:
    """Result minus source in dB and the measure used: LUFS where both clips can be gated
    (at least one 400 ms block above -70 LUFS), else RMS dBFS, equal to it for a pure gain."""
    loudness = result.loudness - source.loudness
    if np.isfinite(loudness):
        return float(loudness), "LUFS"
    return result.level - source.level, "RMS"


def cents(f_out, f_in) -> np.ndarray:
    """The interval from ``f_in`` to ``f_out`` in cents (1200 per octave); arrays broadcast, and it
    is nan wherever either frequency is nan or not positive (an unvoiced frame, a failed track)."""
    f_out, f_in = np.asarray(f_out, dtype=np.float64), np.asarray(f_in, dtype=np.float64)
    valid = (f_out > 0) & (f_in > 0)
    return np.where(valid, 1200 * np.log2(np.where(valid, f_out, 1.0) / np.where(valid, f_in, 1.0)), np.nan)


def pitch_change(source: Clip, result: Clip) -> float:
    """Median F0 ratio over voiced frames, in cents: holds whether or not the edit kept the timing."""
    return float(cents(result.median_f0, source.median_f0))


def speed_factor(source: Clip, result: Clip) -> float:
    """How much faster the result plays: the source's sounding length over the result's, both
    without silence at the ends (padding to a target duration does not count)."""
    return source.active_seconds / result.active_seconds if result.active_seconds else float("nan")


def warm_up() -> None:
    """The check's librosa kernels compiled or loaded, once a process, under numba's cache lock
    (:mod:`auk_app.jit_cache`): the first pYIN of a process loads them (about 2 s; a minute of
    compiling on a fresh machine), paid here at start-up instead of by the first edit's check."""
    jit_cache.once("the edit check", _measure_a_tone)


def _measure_a_tone() -> None:
    """Every measure of half a second of a tone, thrown away: every kernel a Clip's measures use,
    for the one type (contiguous float32) a Clip holds."""
    rate = 16000
    tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(rate // 2) / rate)).astype(np.float32)
    Clip(tone, rate).measure_all()


def _librosa():
    """librosa, its kernels made ready when the Clip was made (:func:`warm_up`)."""
    return jit_cache.librosa()
