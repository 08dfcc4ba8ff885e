"""Audex-Tiny's training data: captioned procedural sounds as event-codec frames.

A *scene* is one or two events (a tone or glide, a siren, clicks or knocks, a noise), separated by
0.2 s of silence. :func:`draw` picks a scene and a caption for it (``training/audex_captions.py``
says how), in English or Chinese, in the training or the held-out split: held-out captions use
templates training never uses and, where they say a frequency, length or click spacing, values
training never uses (a held-out sweep ends at a training frequency half the time). A caption that
gives no length gets its family's default (:data:`SAID_NOTHING`). :func:`frames` writes the scene
as the event codec's codes (``auk_app.demo.event_codec``), so training needs no audio at all; the
benchmark renders them through the same decoder as the app.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from auk_app.demo.event_codec import (
    BROWN, CLICK, CLICK_TIMBRE, FADE_IN, FADE_OUT, KNOCK_TIMBRE, LOUD, NOISE, NORMAL, PINK, SILENCE, SIREN, SOFT,
    STEADY, TONE, WHITE, digits_of, segment_codes,
)
from training import audex_captions as captions

FRAME_RATE = 50
GAP_SECONDS = 0.2
MAX_SCENE_SECONDS = 3.0  # the demo's default length (service.AUDEX_DEMO_SECONDS)
HELD_FREQS = (330, 470, 620, 760, 910, 1130, 1370, 1550, 1780)
HELD_SECONDS = (0.7, 1.3, 1.9)
HELD_SPACINGS = (0.7,)
TRAIN_SPACINGS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
# lengths (and the click spacing) when a caption gives none
SAID_NOTHING = {"tone": 0.5, "sweep": 1.0, "siren": 2.0, "spacing": 0.2, "noise": 1.0}


@dataclass
class Event:
    kind: str  # "tone", "sweep", "siren", "clicks", "noise"
    seconds: float = 0.0
    f0: float = 0.0
    f1: float = 0.0
    count: int = 0
    spacing: float = 0.0
    timbre: int = CLICK_TIMBRE
    colour: int = WHITE
    shape: int = STEADY
    level: int = NORMAL

    def length(self) -> float:
        return self.count * self.spacing if self.kind == "clicks" else self.seconds


@dataclass
class Scene:
    caption: str
    events: list[Event] = field(default_factory=list)
    family: str = ""  # what the benchmark measures: tone, sweep, siren, clicks, fade, noise, sequence
    lang: str = "en"  # "en" or "zh"


def _tenths(seconds: float) -> int:
    return max(1, round(seconds * 10))


def frames(scene: Scene) -> np.ndarray:
    """The scene's codes, ``[frames, 4]`` layer-local (0..1023): one segment per event (per click
    for clicks, each counting the clicks left), 0.2 s of silence between events."""
    out = []
    for i, e in enumerate(scene.events):
        if i:
            out.append(segment_codes(SILENCE, [0] * 8, _tenths(GAP_SECONDS)))
        if e.kind in ("tone", "sweep", "siren"):
            kind = (SIREN if e.kind == "siren" else TONE) + e.level
            out.append(segment_codes(kind, digits_of(int(e.f0), 4) + digits_of(int(e.f1), 4), _tenths(e.seconds)))
        elif e.kind == "clicks":
            for left in range(e.count, 0, -1):
                out.append(segment_codes(CLICK, [left, e.timbre, e.level, 0, 0, 0, 0, 0], _tenths(e.spacing)))
        else:
            out.append(segment_codes(NOISE, [e.colour, e.shape, e.level, 0, 0, 0, 0, 0], _tenths(e.seconds)))
    return np.concatenate(out)


# ---------------------------------------------------------------- values


def _freq(rng: np.random.Generator, held: bool, low: int = 200, high: int = 2000) -> int:
    if held:
        return int(rng.choice([f for f in HELD_FREQS if low <= f <= high]))
    while True:
        f = int(rng.integers(low, high + 1)) if rng.random() < 0.3 else int(rng.integers(low // 10, high // 10 + 1)) * 10
        if f not in HELD_FREQS:
            return f


def _seconds(rng: np.random.Generator, held: bool, low: float, high: float) -> float:
    if held:
        options = [s for s in HELD_SECONDS if low <= s <= high]
        if options:
            return float(rng.choice(options))
    while True:
        s = round(float(rng.integers(round(low * 10), round(high * 10) + 1)) / 10, 1)
        if s not in HELD_SECONDS and low <= s <= high:
            return s


def _level(rng: np.random.Generator) -> int:
    return int(rng.choice([NORMAL, NORMAL, NORMAL, NORMAL, SOFT, SOFT, LOUD]))


def _fill(template: str, rng: np.random.Generator, lang: str, level: int, family: str, **words) -> tuple[str, int]:
    """The template filled, and the level it says (normal when it has no level word)."""
    said = "{a}" in template or "{lv}" in template
    level = level if said else NORMAL
    words.update(a=captions.article(level, family, rng), lv=captions.level_word(level, lang, rng))
    return template.format(**words), level


# ---------------------------------------------------------------- families


def tone(rng, held: bool, lang: str, short: bool = False) -> tuple[str, Event]:
    f = _freq(rng, held)
    template = captions.pick(rng, captions.templates(("tone", lang), held))
    d = _seconds(rng, held, 0.2, 0.8 if short else 2.5) if "{d}" in template else SAID_NOTHING["tone"]
    text, level = _fill(template, rng, lang, _level(rng), "tone", f=captions.say_hz(f, rng, lang),
                        d=captions.say_seconds(d, rng, lang), noun=captions.pick(rng, captions.NOUNS[lang]["tone"]))
    return text, Event("tone", d, f, f, level=level)


def sweep(rng, held: bool, lang: str, siren: bool = False) -> tuple[str, Event]:
    f0 = _freq(rng, held, 200, 2000)
    while True:
        f1 = _freq(rng, held if rng.random() < 0.5 else False, 200, 2000)
        if abs(np.log2(f1 / f0)) >= 0.5:
            break
    if siren:
        f0, f1 = min(f0, f1), max(f0, f1)
    family = "siren" if siren else "sweep"
    template = captions.pick(rng, captions.templates((family, lang), held))
    d = _seconds(rng, held, 0.5, 2.5) if "{d}" in template else SAID_NOTHING[family]
    verbs = captions.GLIDE_VERBS["up" if f1 > f0 else "down"] + captions.GLIDE_VERBS["any"]
    text, level = _fill(template, rng, lang, _level(rng), family, d=captions.say_seconds(d, rng, lang),
                        f0=captions.say_hz(f0, rng, lang, unit=rng.random() < 0.5), f1=captions.say_hz(f1, rng, lang),
                        noun=captions.pick(rng, captions.NOUNS[lang][family]), verb=captions.pick(rng, verbs))
    return text, Event(family, d, f0, f1, level=level)


def clicks(rng, held: bool, lang: str, short: bool = False) -> tuple[str, Event]:
    n = int(rng.integers(1, 4 if short else 7))
    timbre = KNOCK_TIMBRE if rng.random() < 0.4 else CLICK_TIMBRE
    template = captions.pick(rng, captions.templates(("clicks", lang), held))
    spacing = SAID_NOTHING["spacing"]
    if "{s}" in template:
        spacing = float(rng.choice(HELD_SPACINGS if held else TRAIN_SPACINGS))
    while n * spacing > (1.2 if short else MAX_SCENE_SECONDS):
        n -= 1
    thing = captions.pick(rng, captions.CLICK_WORDS[lang][timbre])
    things = thing + ("s" if n > 1 and lang == "en" else "")
    text, level = _fill(template, rng, lang, _level(rng), "clicks", n=captions.say_count(n, rng, lang), thing=thing,
                        things=things, s=captions.say_seconds(spacing, rng, lang), times=captions.say_times(n, rng),
                        verb=captions.pick(rng, captions.CLICK_VERBS[timbre]))
    return text, Event("clicks", count=n, spacing=spacing, timbre=timbre, level=level)


def noise(rng, held: bool, lang: str, short: bool = False, shape: int | None = None,
          colour: int | None = None) -> tuple[str, Event]:
    shape = int(rng.choice([STEADY, FADE_OUT, FADE_IN])) if shape is None else shape
    colour = int(rng.choice([WHITE, PINK, BROWN])) if colour is None else colour
    template = captions.pick(rng, captions.templates((f"noise{shape}", lang), held))
    d = SAID_NOTHING["noise"]
    if "{d}" in template:
        d = _seconds(rng, held, 0.3 if short else 0.5, 0.8 if short else 2.5)
    text, level = _fill(template, rng, lang, _level(rng), "noise", d=captions.say_seconds(d, rng, lang),
                        c=captions.pick(rng, captions.NOISE_WORDS[lang][colour]))
    return text, Event("noise", d, colour=colour, shape=shape, level=level)


def sequence(rng, held: bool, lang: str) -> tuple[str, list[Event]]:
    makers = (lambda: tone(rng, held, lang, short=True), lambda: clicks(rng, held, lang, short=True),
              lambda: noise(rng, held, lang, short=True))
    # short events last at most 1.2 s, so a pair and its gap fit in MAX_SCENE_SECONDS
    (ta, a), (tb, b) = makers[rng.integers(3)](), makers[rng.integers(3)]()
    join = captions.pick(rng, captions.templates(("join", lang), held))
    return join.format(a=ta, b=tb), [a, b]


FAMILIES = ("tone", "sweep", "siren", "clicks", "noise", "sequence")
WEIGHTS = (0.22, 0.16, 0.1, 0.2, 0.17, 0.15)


def draw(rng: np.random.Generator, *, held: bool = False, family: str | None = None,
         lang: str | None = None) -> Scene:
    """One captioned scene of ``family`` (drawn by :data:`WEIGHTS` when None), in English or
    Chinese (``lang`` "en" or "zh"; drawn when None). The benchmark's families ``fade`` (noise
    fading out) and ``flat`` (steady white noise) are noises too."""
    family = family or str(rng.choice(FAMILIES, p=WEIGHTS))
    lang = lang or ("zh" if rng.random() < captions.CHINESE_SHARE else "en")
    if family == "tone":
        text, e = tone(rng, held, lang)
        events = [e]
    elif family in ("sweep", "siren"):
        text, e = sweep(rng, held, lang, siren=family == "siren")
        events = [e]
    elif family == "clicks":
        text, e = clicks(rng, held, lang)
        events = [e]
    elif family in ("noise", "fade", "flat"):
        shape = FADE_OUT if family == "fade" else STEADY if family == "flat" else None
        text, e = noise(rng, held, lang, shape=shape, colour=WHITE if family == "flat" else None)
        events = [e]
    else:
        text, events = sequence(rng, held, lang)
    return Scene(captions.finish(text, lang, held, rng), events, family, lang)
