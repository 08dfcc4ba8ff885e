"""Calibrate what the edit check counts as kept, on held-out sounds, against an independent measure.

    python -m bench.bench_kept [--demo] [--out bench/results/DATE-cpu-kept.json]

Every held-out source (``bench.kept_sounds``: chords, music-like lines, tones, speech, speech in
noise, MP3 and OGG uploads) goes through edits whose outcome is known by construction:

* **kept**: a gain, a gain through an MP3, a Griffin-Lim re-synthesis (the phase made anew, as a
  vocoder does), a phase-vocoder pitch shift or time stretch, and for speech in noise an oracle
  Wiener filter and a spectral subtraction;
* **lost**: another sound of its family at the asked level, noise with the source's long-term
  spectrum, the source backwards (where it changes over time), and for noise removal the speech
  removed with the noise, or another speaker's clean speech in its place.

Each result is checked as the app checks it (``auk_app.check.check`` for the edit's task), and
measured by an independent content measure: the Pearson correlation of its log-mel spectrogram
with the reference's (the clean sound with the asked edit applied by the same known-good means),
which is neither of the check's three agreements. The report gives, per family and label, both
measures' range and whether the check's verdict on what was kept is right; ``--demo`` adds the
demo model's own volume, pitch and noise-removal results on the same sources, which are not known
by construction: there the independent measure is the judge.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import librosa
import numpy as np

from auk_app.check import KEEP_MIN, Clip, check
from auk_app.dsp import resample
from bench.kept_sounds import RATE, Sound, held_out, uploaded

CONTENT_RATE, CONTENT_FFT, CONTENT_HOP, CONTENT_BANDS, CONTENT_RANGE_DB = 16_000, 1024, 160, 128, 60.0
KEPT, LOST = "kept", "lost"
INSTRUCTIONS = {"volume -6": "Decrease the volume by 6 dB.", "volume +6": "Increase the volume by 6 dB.",
                "pitch +2": "Raise the pitch by 2 semitones.", "speed 1.25": "Adjust the speech speed to 1.25x.",
                "denoise": "Remove the background noise."}
CHANGES_OVER_TIME = ("speech", "music", "speech in noise")


@dataclass(frozen=True)
class Case:
    """One result of one held-out source: what it should be by construction, what the check said of
    what it kept, and the independent measure."""

    sound: str
    family: str
    edit: str
    label: str
    request: str
    kept: float | None
    kept_by: dict
    check: str
    content: float

    @property
    def right(self) -> bool | None:
        """Whether the check's verdict on what was kept is the label's (None: it measured none)."""
        if self.kept is None:
            return None
        return (self.kept >= KEEP_MIN) == (self.label == KEPT)


def log_mel(wav: np.ndarray) -> np.ndarray:
    mel = librosa.feature.melspectrogram(y=resample(wav, RATE, CONTENT_RATE), sr=CONTENT_RATE, n_fft=CONTENT_FFT,
                                         hop_length=CONTENT_HOP, n_mels=CONTENT_BANDS)
    return librosa.power_to_db(mel, ref=np.max, top_db=CONTENT_RANGE_DB)


def content(reference: np.ndarray, result: np.ndarray) -> float:
    """The independent content measure: Pearson correlation of the two log-mel spectrograms (dB, each
    floored 60 dB under its own peak, so blind to the gain), the result's frames put onto the
    reference's where their lengths differ."""
    ref, out = log_mel(reference), log_mel(result)
    if not np.any(np.abs(result) > 0):
        return 0.0
    out = out[:, np.rint(np.linspace(0, out.shape[1] - 1, ref.shape[1])).astype(int)]
    return float(np.corrcoef(ref.ravel(), out.ravel())[0, 1])


def _gain(wav: np.ndarray, db: float) -> np.ndarray:
    return (wav * 10 ** (db / 20)).astype(np.float32)


def _at_level_of(wav: np.ndarray, like: np.ndarray, db: float = 0.0) -> np.ndarray:
    return _gain(wav * np.sqrt(np.mean(like**2) / max(np.mean(wav**2), 1e-20)), db)


def _fit(wav: np.ndarray, n: int) -> np.ndarray:
    return np.pad(wav, (0, max(0, n - wav.size)))[:n]


def pitch_shifted(wav: np.ndarray, steps: float) -> np.ndarray:
    return _at_level_of(librosa.effects.pitch_shift(wav, sr=RATE, n_steps=steps), wav)


def stretched(wav: np.ndarray, factor: float) -> np.ndarray:
    return librosa.effects.time_stretch(wav, rate=factor).astype(np.float32)


def resynthesised(wav: np.ndarray) -> np.ndarray:
    """Griffin-Lim from the magnitude alone: every phase made anew, as a vocoder makes it."""
    magnitude = np.abs(librosa.stft(wav, n_fft=1024, hop_length=256))
    return _fit(librosa.griffinlim(magnitude, n_iter=32, hop_length=256, random_state=0), wav.size).astype(np.float32)


def shaped_noise(wav: np.ndarray, seed: int = 7) -> np.ndarray:
    """Steady noise with ``wav``'s level and its long-term spectrum smoothed over an octave: where the
    source has a tone, the noise has a band around it (the spectrum unsmoothed, with new phases,
    would give a steady tone back)."""
    freqs = np.fft.rfftfreq(wav.size, 1 / RATE)
    power = np.abs(np.fft.rfft(wav)) ** 2
    cumulative = np.concatenate([[0.0], np.cumsum(power)])
    low, high = (np.searchsorted(freqs, freqs * 2 ** (side / 2)) for side in (-1, 1))
    smooth = (cumulative[np.maximum(high, low + 1)] - cumulative[low]) / np.maximum(high - low, 1)
    noise = np.fft.rfft(np.random.default_rng(seed).standard_normal(wav.size)) * np.sqrt(smooth)
    return _at_level_of(np.fft.irfft(noise, wav.size), wav)


def wiener(noisy: np.ndarray, clean: np.ndarray) -> np.ndarray:
    """The oracle Wiener filter: each STFT bin scaled by clean power over clean plus noise power."""
    spec, speech, noise = (librosa.stft(x, n_fft=1024, hop_length=256) for x in (noisy, clean, noisy - clean))
    mask = np.abs(speech) ** 2 / np.maximum(np.abs(speech) ** 2 + np.abs(noise) ** 2, 1e-20)
    return _fit(librosa.istft(mask * spec, hop_length=256), noisy.size).astype(np.float32)


def spectral_subtraction(noisy: np.ndarray) -> np.ndarray:
    """The noise's power per bin taken from the quietest tenth of frames, subtracted, floored at 5 %."""
    spec = librosa.stft(noisy, n_fft=1024, hop_length=256)
    power = np.abs(spec) ** 2
    quiet = np.argsort(power.sum(axis=0))[: max(1, power.shape[1] // 10)]
    gain = np.sqrt(np.maximum(1 - power[:, quiet].mean(axis=1, keepdims=True) / np.maximum(power, 1e-20), 0.05**2))
    return _fit(librosa.istft(gain * spec, hop_length=256), noisy.size).astype(np.float32)


Edit = Callable[[Sound, Sound], tuple[str, np.ndarray, np.ndarray] | None]  # (request, result, reference)


def _volume(fn: Callable[[Sound], np.ndarray], request: str = "volume -6") -> Edit:
    """An edit that keeps everything of the source, its noise too: the source is its reference."""
    return lambda sound, other: (request, fn(sound), sound.wav)


def _noisy_only(fn: Callable[[Sound], np.ndarray]) -> Edit:
    return lambda sound, other: ("denoise", fn(sound), sound.clean) if sound.clean is not None else None


def _varying(fn: Callable[[Sound], np.ndarray]) -> Edit:
    return lambda sound, other: ("volume -6", fn(sound), sound.wav) if sound.family in CHANGES_OVER_TIME else None


EDITS: dict[str, tuple[str, Edit]] = {
    "gain −6 dB": (KEPT, _volume(lambda s: _gain(s.wav, -6))),
    "gain +6 dB, then through an MP3": (KEPT, _volume(lambda s: uploaded(_gain(s.wav, 6), "MP3"), "volume +6")),
    "re-synthesised (Griffin-Lim), −6 dB": (KEPT, _volume(lambda s: _gain(resynthesised(s.wav), -6))),
    "pitch +2 semitones (phase vocoder)": (KEPT, lambda s, o: ("pitch +2", pitch_shifted(s.wav, 2),
                                                               pitch_shifted(s.wav, 2))),
    "speed 1.25× (phase vocoder)": (KEPT, lambda s, o: ("speed 1.25", stretched(s.wav, 1.25),
                                                        stretched(s.wav, 1.25))),
    "noise removed (oracle Wiener)": (KEPT, _noisy_only(lambda s: wiener(s.wav, s.clean))),
    "noise removed (spectral subtraction)": (KEPT, _noisy_only(lambda s: spectral_subtraction(s.wav))),
    "another sound of its family, −6 dB": (LOST, lambda s, o: ("volume -6", _at_level_of(_fit(o.wav, s.wav.size),
                                                                                         s.wav, -6), s.wav)),
    "noise of its long-term spectrum, −6 dB": (LOST, _volume(lambda s: _gain(shaped_noise(s.wav), -6))),
    "backwards, −6 dB": (LOST, _varying(lambda s: _gain(s.wav[::-1].copy(), -6))),
    "the speech removed with the noise": (LOST, _noisy_only(lambda s: _gain(s.wav - s.clean, -20))),
    "another speaker's clean speech": (LOST, lambda s, o: ("denoise", _at_level_of(_fit(o.reference, s.wav.size), s.clean),
                                                           s.clean) if s.clean is not None else None),
}


def measured(sound: Sound, edit: str, label: str, request: str, result: np.ndarray, reference: np.ndarray,
             source: Clip) -> Case:
    made = check(INSTRUCTIONS[request], source, result, RATE)
    return Case(sound.name, sound.family, edit, label, request, made.kept, made.kept_by or {}, made.display(),
                content(reference, result))


def known_cases(sounds: list[Sound]) -> list[Case]:
    """Every edit of known outcome on every source it applies to; "another sound" is the next of the
    same family (of another material where the family has one: speech in noise takes other speech)."""
    cases = []
    for i, sound in enumerate(sounds):
        family = [s for s in sounds if s.family == sound.family and (s.origin or s.name) != (sound.origin or sound.name)]
        other = family[i % len(family)]
        source = Clip(sound.wav, RATE)
        for edit, (label, make) in EDITS.items():
            made = make(sound, other)
            if made is not None:
                cases.append(measured(sound, edit, label, *made, source))
    return cases


def demo_cases(sounds: list[Sound]) -> list[Case]:
    """The demo model's own volume −6 dB, pitch +2 semitones and noise removal of every source (noise
    removal of speech in noise only); labelled by the independent measure (see :func:`summary`)."""
    from bench.bench_demo import demo_result
    from auk_app.demo import DEMO_DIR
    from auk_app.service import Studio, StudioConfig

    studio = Studio(StudioConfig(demo_dir=DEMO_DIR))
    cases = []
    for sound in sounds:
        source = Clip(sound.wav, RATE)
        for request in ("volume -6", "pitch +2", "denoise"):
            if request == "denoise" and sound.clean is None:
                continue
            result = demo_result(studio, sound.wav, INSTRUCTIONS[request], sound.wav.size / RATE, 0).wav
            reference = {"pitch +2": pitch_shifted(sound.wav, 2), "denoise": sound.reference}.get(request, sound.wav)
            cases.append(measured(sound, f"the demo model: {request}", "demo", request, result, reference, source))
    return cases


def summary(cases: list[Case]) -> list[dict]:
    """Per family and label: how many, both measures' lowest and highest, and how many verdicts on
    what was kept are right (or not measured)."""
    rows = []
    for family in dict.fromkeys(c.family for c in cases):
        for label in (KEPT, LOST):
            group = [c for c in cases if c.family == family and c.label == label]
            if not group:
                continue
            kept = [c.kept for c in group if c.kept is not None]
            rows.append({"family": family, "label": label, "cases": len(group),
                         "kept": [min(kept), max(kept)] if kept else None,
                         "content": [min(c.content for c in group), max(c.content for c in group)],
                         "right": sum(c.right is True for c in group), "not measured": sum(c.right is None for c in group)})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", action="store_true", help="add the demo model's own results (minutes on a CPU)")
    parser.add_argument("--out", type=Path, help="write every case and the summary as JSON here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sounds = held_out()
    cases = known_cases(sounds) + (demo_cases(sounds) if args.demo else [])
    rows = summary(cases)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    for case in cases:
        if case.label == "demo" or case.right is False:
            print(f"{case.label:5s} kept {case.kept} {case.kept_by} content {case.content:.2f} {case.sound} · "
                  f"{case.edit}: {case.check}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "keep_min": KEEP_MIN,
                                        "seconds": round(time.perf_counter() - started, 1), "summary": rows,
                                        "cases": [asdict(c) for c in cases]}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
