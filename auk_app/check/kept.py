"""What a result kept of its source (``kept``, 0..1): the lowest of three agreements, each blind to
the gain, each defined for steady sounds as for speech, and each left out where it does not apply
to the sound, so that no edit fails on a measure that says nothing about it:

* the level contour over time in six bands (:func:`_contour_kept`): where the syllables and notes
  are; for noise removal, each clip's contour above its own noise floor, since lowering the floor
  is the task;
* the long-term spectrum's shape (:func:`_spectrum_kept`), unless the task changes it by design
  (pitch moves the harmonics, noise removal the noise's bands);
* the melody (:func:`_melody_kept`), on the source's frames that hold one pitch
  (:mod:`auk_app.check.harmonics`); a chord, a mixture or noise has no melody pYIN can follow.

How these were calibrated, on sounds they were not built from, against an independent content
measure: docs/edit-check.md.
"""

from __future__ import annotations

import numpy as np

from auk_app.check.measures import ENVELOPE_SECONDS, F0_HOP, F0_RATE, FLOOR_PERCENTILE, Clip

# What was kept compares level contours over 100 ms blocks: syllables (about 200 ms) still show, while
# the 20 ms flicker of a steady noise, which differs between two takes of the same noise, averages out.
KEEP_BLOCK_FRAMES = 5
# Contour changes within 25 % of the mean level (about ±2 dB) count as steady: a steady sound's contour
# is flat, and two flat contours agree whatever their flicker, where a correlation of flicker is noise.
STEADY_SPREAD = 0.25
BAND_SHARE_MIN = 1e-3  # a band with less of the source's power than this holds nothing of it to keep
SPECTRUM_FLOOR_DB = 60.0  # bands further below the loudest band count as at this floor
SPECTRUM_STEADY_DB = 3.0  # spectral-shape differences within about ±3 dB count as the same shape
MELODY_CENTS = 100.0  # a frame keeps the melody within a semitone of the source's F0
PARTS = ("contour", "spectrum", "melody")


def keep_scores(source: Clip, result: Clip, *, timing_kept: bool, shift_cents: float = 0.0,
                spectrum_kept: bool = True, floor_removed: bool = False, bands_kept: bool = True) -> dict[str, float]:
    """Each agreement by name (``PARTS``), nan where it does not apply: the spectrum where the task
    changes it (``spectrum_kept`` False: pitch, noise removal), the melody where the source holds no
    single pitch, any of them for a silent source. ``shift_cents`` is a pitch edit's measured shift,
    which moves the melody whole; ``bands_kept`` False takes the contour over all its bands as one,
    for a task that moves the sound across them (pitch); ``floor_removed`` compares the contours above
    each clip's noise floor (noise removal).
    Where the edit may change timing (``timing_kept`` False: speed, trim) both clips lose the
    silence at their ends and the result's frames are stretched onto the source's."""
    tracks = [(clip.contour, clip.f0) for clip in (source, result)]
    melody = source.melody
    if not timing_kept:
        tracks = [(clip.active_frames(contour.T, ENVELOPE_SECONDS).T, clip.active_frames(f0, F0_HOP / F0_RATE))
                  for clip, (contour, f0) in zip((source, result), tracks)]
        melody = source.active_frames(melody, F0_HOP / F0_RATE)
    (source_contour, _), (result_contour, result_f0) = tracks
    if not bands_kept:
        source_contour, result_contour = (contour.sum(axis=0, keepdims=True) for contour in (source_contour, result_contour))
    sounding = source.active_frames(source.f0, F0_HOP / F0_RATE).size
    return {
        "contour": _contour_kept(source_contour, result_contour, floor_removed=floor_removed),
        "spectrum": _spectrum_kept(source.spectrum, result.spectrum) if spectrum_kept else float("nan"),
        "melody": _melody_kept(melody, result_f0, shift_cents, sounding),
    }


def keep_similarity(source: Clip, result: Clip, **options) -> float:
    """How much of the source the result kept, 0..1: the lowest of :func:`keep_scores` that apply;
    nan when none does (a silent source)."""
    return lowest(keep_scores(source, result, **options))


def lowest(scores: dict[str, float]) -> float:
    """The lowest score that applies (finite), nan if none does."""
    finite = [s for s in scores.values() if np.isfinite(s)]
    return min(finite) if finite else float("nan")


def _onto(track: np.ndarray, n: int) -> np.ndarray:
    """``track``'s nearest frames (its last axis) at ``n`` evenly spaced points: a time stretch of a
    per-frame measure that does not blend voiced frames with unvoiced ones."""
    if track.shape[-1] == 0:
        return np.full((*track.shape[:-1], n), np.nan)
    return track[..., np.rint(np.linspace(0, track.shape[-1] - 1, n)).astype(int)]


def _agreement(source: np.ndarray, result: np.ndarray, steady: float) -> float:
    """How well ``result`` follows ``source`` around their means, 0..1: SSIM's contrast-structure term,
    (2·cov + c) / (var + var + c). ``c`` (``steady`` squared) is the variation that counts as none,
    so two steady tracks agree (1) and a steady track against a varying one does not; a correlation
    of two flat tracks would be noise. Negative agreement (an inverted contour) counts as 0."""
    source, result = source - source.mean(), result - result.mean()
    c = steady**2
    score = (2 * np.mean(source * result) + c) / (np.mean(source**2) + np.mean(result**2) + c)
    return float(max(score, 0.0))


def _block_levels(power: np.ndarray, blocks: int, floor_removed: bool) -> np.ndarray:
    """RMS level per block of KEEP_BLOCK_FRAMES frames of one band's ``power`` per frame; with
    ``floor_removed``, of the power above the band's own floor (its quietest tenth of frames): noise
    under speech adds a floor that raises every pause, and removing it is what noise removal does, so
    it must not count as a changed contour."""
    pooled = np.mean(power[:blocks * KEEP_BLOCK_FRAMES].reshape(blocks, -1), axis=1)
    if floor_removed:
        pooled = np.maximum(pooled - np.percentile(power, FLOOR_PERCENTILE), 0.0)
    return np.sqrt(pooled)


def _contour_kept(source: np.ndarray, result: np.ndarray, *, floor_removed: bool = False) -> float:
    """Agreement of the level contours (``Clip.contour``: power per band per 20 ms frame, pooled into
    100 ms blocks), band by band, each divided by its mean level so a gain changes nothing. The bands
    weigh by their share of the source's power and by how much its contour moves in them: where the
    content changes over time (speech under white noise, below 1 kHz) its keeping counts most, and a
    steady band still counts (a steady tone that starts pulsing is caught). 0 for a silent result, nan
    for a silent or too short source."""
    blocks = source.shape[-1] // KEEP_BLOCK_FRAMES
    if blocks < 2 or not np.any(source):
        return float("nan")
    result = _onto(result, source.shape[-1])
    shares = source.sum(axis=1) / source.sum()
    scores, weights = [], []
    for share, band, kept in zip(shares, source, result):
        band, kept = (_block_levels(track, blocks, floor_removed) for track in (band, kept))
        if share < BAND_SHARE_MIN or not np.any(band):
            continue
        band = band / band.mean()
        scores.append(_agreement(band, kept / kept.mean(), STEADY_SPREAD) if np.any(kept) else 0.0)
        weights.append(share * (np.var(band) + STEADY_SPREAD**2))
    return float(np.average(scores, weights=weights)) if weights else float("nan")


def _spectrum_kept(source: np.ndarray, result: np.ndarray) -> float:
    """Agreement of the long-term spectra's shapes in dB (each floored SPECTRUM_FLOOR_DB under its
    loudest band, its mean level removed) over the bands where either clip has sound: a tone against
    noise, a chord against a band of noise around it, or one noise colour against another, disagrees
    even where both are steady; bands empty in both would agree and say nothing. 0 for a silent
    result, nan for a silent source."""
    if not np.any(source):
        return float("nan")
    if not np.any(result):
        return 0.0
    floors = [spectrum.max() * 10 ** (-SPECTRUM_FLOOR_DB / 10) for spectrum in (source, result)]
    sounding = (source > floors[0]) | (result > floors[1])
    shapes = [10 * np.log10(np.maximum(spectrum, floor))[sounding] for spectrum, floor in zip((source, result), floors)]
    return _agreement(*shapes, SPECTRUM_STEADY_DB)


def _melody_kept(source: np.ndarray, result: np.ndarray, shift_cents: float, sounding: int) -> float:
    """Share of the source's ``sounding`` F0 frames (those between the silences at its ends) that
    keep their melody: a frame of one pitch (``source`` is finite there, ``Clip.melody``) keeps it
    where the result is voiced within MELODY_CENTS of that F0 moved by ``shift_cents``; any other
    frame (unvoiced, or a chord pYIN cannot follow) has no melody to lose. Counted over the sounding
    frames, not the pitched ones alone: pYIN hears a few pitched frames in steady noise, whose chance
    "melody" another take of the same noise does not repeat, and they should weigh as little as they
    are. nan where the source has no frame of one pitch."""
    pitched = np.isfinite(source)
    if not pitched.any():
        return float("nan")
    result = _onto(result, source.size)
    with np.errstate(invalid="ignore"):
        interval = 1200 * np.log2(result[pitched] / source[pitched]) - shift_cents
        lost = np.count_nonzero(~(np.abs(interval) <= MELODY_CENTS))  # nan (unvoiced) counts as lost
    return float(1 - lost / max(sounding, np.count_nonzero(pitched)))
