"""Audex-Tiny's training data: captioned procedural sounds as event-codec frames.

A *scene* is one or two events (a tone or glide, clicks or knocks, a noise), separated by 0.2 s
of silence. :func:`draw` picks a scene and a caption for it, in the training or the held-out
split: held-out captions use other wordings (templates never seen in training) and, where they
say a frequency, length or click spacing, values training never uses (a held-out sweep ends at a
training frequency half the time). :func:`frames` writes the scene
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

FRAME_RATE = 50
GAP_SECONDS = 0.2
MAX_SCENE_SECONDS = 3.0  # the demo's default length (service.AUDEX_DEMO_SECONDS)
HELD_FREQS = (330, 470, 620, 760, 910, 1130, 1370, 1550, 1780)
HELD_SECONDS = (0.7, 1.3, 1.9)
HELD_SPACINGS = (0.3,)
TRAIN_SPACINGS = (0.1, 0.2, 0.4, 0.5, 0.6)
SAID_NOTHING = {"beep": 0.3, "spacing": 0.2, "noise": 1.0}  # lengths when a caption gives none
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six")
LEVELS = {"": NORMAL, "quiet": SOFT, "soft": SOFT, "loud": LOUD}
COLOURS = {"white": WHITE, "pink": PINK, "brown": BROWN}


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


def say_seconds(s: float, rng: np.random.Generator) -> str:
    """Varied English for a duration (in tenths of a second: the event codec's resolution)."""
    words = {0.5: ["half a second"], 1.0: ["one second", "a second"], 2.0: ["two seconds"]}
    options = [f"{s:g} seconds", f"{s:g} s", f"{s:g} sec"]
    if s < 1.0 or rng.random() < 0.3:
        ms = round(s * 1000)
        options += [f"{ms} ms", f"{ms} milliseconds"]
    options += words.get(s, [])
    return str(rng.choice(options))


def say_count(n: int, rng: np.random.Generator) -> str:
    return NUMBER_WORDS[n] if rng.random() < 0.7 else str(n)


def say_hz(f: int, rng: np.random.Generator) -> str:
    return str(rng.choice([f"{f} Hz", f"{f} hz", f"{f} hertz"]))


# ---------------------------------------------------------------- captions
# Templates: {f} frequency, {d} duration, {f0}/{f1} glide ends, {n} count, {c} colour, {s} spacing,
# {lv} an optional level word with its space. Held-out templates add four words training never
# uses ("exactly", "slowly", "after", "glides"), which the tokenizer reads as <unk>.

TONE_TRAIN = (
    "a {lv}{f} beep lasting {d}", "a {lv}tone at {f} for {d}", "{d} of a {lv}{f} tone", "beep at {f} for {d}",
    "a {lv}sine tone of {f}, {d} long", "play a {f} tone for {d}", "a pure {lv}tone at {f} that lasts {d}",
    "a {f} sine wave, {d}", "a {lv}beep of {d} at {f}", "{f} tone, {d}",
)
TONE_HELD = ("a {lv}steady {f} beep, {d} long", "generate a sine wave at {f} that lasts {d}", "a {d} {f} tone")
SWEEP_TRAIN = (
    "a sweep from {f0} to {f1} over {d}", "a tone gliding from {f0} to {f1} in {d}",
    "a {lv}sine sweep from {f0} to {f1}, {d} long", "a chirp from {f0} to {f1} lasting {d}",
    "a pitch glide from {f0} to {f1} over {d}", "{d} sweep from {f0} to {f1}",
)
SWEEP_HELD = ("a {lv}tone that glides from {f0} to {f1}, {d} long", "a {d} chirp from {f0} to {f1}")
SIREN_TRAIN = ("a siren between {f0} and {f1}, {d} long", "a siren going from {f0} to {f1} and back over {d}")
SIREN_HELD = ("a {d} siren between {f0} and {f1}",)
CLICK_TRAIN = (
    "{n} {lv}{things}", "{n} {things}, {s} apart", "{n} {lv}{things} spaced {s} apart", "a series of {n} {things}",
    "the sound of {n} {things}", "{n} short {things}", "{n} {things} on a door", "{n} {lv}{things} on wood",
)
CLICK_HELD = ("exactly {n} {things}", "a series of {n} {lv}{things} spaced {s} apart")
NOISE_TRAIN = {
    STEADY: ("{d} of {c} noise", "a burst of {lv}{c} noise, {d} long", "{c} noise for {d}", "steady {c} noise, {d}",
             "a {lv}{c} noise burst lasting {d}"),
    FADE_OUT: ("{c} noise fading out over {d}", "a burst of {c} noise that fades away", "{lv}{c} noise fading out",
               "{c} noise that fades out, {d} long", "a {c} noise fade out over {d}"),
    FADE_IN: ("{c} noise fading in over {d}", "{c} noise that fades in", "{lv}{c} noise fading in, {d}",
              "a {c} noise fade in lasting {d}"),
}
NOISE_HELD = {
    STEADY: ("a steady burst of {c} noise for {d}",),
    FADE_OUT: ("{c} noise slowly fading out, {d} long", "a {lv}{c} noise that fades away over {d}"),
    FADE_IN: ("{c} noise slowly fading in, {d} long",),
}
JOINS_TRAIN = ("{a}, then {b}", "{a} followed by {b}", "first {a}, then {b}", "{a} and then {b}")
JOINS_HELD = ("{a}, and after that {b}", "first {a} followed by {b}")


def _said(level: int, template: str) -> int:
    """The level drawn when the template says it, else the normal one."""
    return level if "{lv}" in template else NORMAL


def _lv(rng: np.random.Generator) -> tuple[str, int]:
    word = str(rng.choice(["", "", "", "", "quiet", "soft", "loud"]))
    return (word + " " if word else ""), LEVELS[word]


def tone(rng, held: bool, short: bool = False) -> tuple[str, Event]:
    f = _freq(rng, held)
    d = _seconds(rng, held, 0.2, 0.8 if short else 2.5)
    lv, db = _lv(rng)
    if short and rng.random() < 0.4:
        return f"a {lv}{say_hz(f, rng)} beep", Event("tone", SAID_NOTHING["beep"], f, f, level=db)
    template = str(rng.choice(TONE_HELD if held else TONE_TRAIN))
    return template.format(lv=lv, f=say_hz(f, rng), d=say_seconds(d, rng)), Event("tone", d, f, f, level=_said(db, template))


def sweep(rng, held: bool, siren: bool = False) -> tuple[str, Event]:
    f0 = _freq(rng, held, 200, 2000)
    while True:
        f1 = _freq(rng, held if rng.random() < 0.5 else False, 200, 2000)
        if abs(np.log2(f1 / f0)) >= 0.5:
            break
    if siren:
        f0, f1 = min(f0, f1), max(f0, f1)
    d = _seconds(rng, held, 0.5, 2.5)
    lv, db = _lv(rng)
    templates = (SIREN_HELD if held else SIREN_TRAIN) if siren else (SWEEP_HELD if held else SWEEP_TRAIN)
    template = str(rng.choice(templates))
    text = template.format(lv=lv, f0=say_hz(f0, rng) if rng.random() < 0.5 else str(f0), f1=say_hz(f1, rng), d=say_seconds(d, rng))
    return text, Event("siren" if siren else "sweep", d, f0, f1, level=_said(db, template))


def clicks(rng, held: bool, short: bool = False) -> tuple[str, Event]:
    n = int(rng.integers(1, 4 if short else 7))
    spacing = float(rng.choice(HELD_SPACINGS)) if held else float(rng.choice(TRAIN_SPACINGS))
    timbre = KNOCK_TIMBRE if rng.random() < 0.4 else CLICK_TIMBRE
    lv, db = _lv(rng)
    template = str(rng.choice(CLICK_HELD if held else CLICK_TRAIN))
    said_spacing = "{s}" in template
    if not said_spacing:
        spacing = SAID_NOTHING["spacing"]
    while n * spacing > (1.2 if short else MAX_SCENE_SECONDS):
        n -= 1
    things = ("knock" if timbre == KNOCK_TIMBRE else "click") + ("s" if n > 1 else "")
    count = say_count(n, rng) if n > 1 else str(rng.choice(["a", "one"]))
    text = template.format(n=count, lv=lv, things=things, s=say_seconds(spacing, rng))
    if n == 2 and rng.random() < 0.2 and not said_spacing:
        template = "{lv}knocks twice" if timbre == KNOCK_TIMBRE else "{lv}clicks twice"
        text = template.format(lv=lv)
    return text, Event("clicks", count=n, spacing=spacing, timbre=timbre, level=_said(db, template))


def noise(rng, held: bool, short: bool = False, shape: int | None = None,
          colour: str | None = None) -> tuple[str, Event]:
    shape = int(rng.choice([STEADY, FADE_OUT, FADE_IN])) if shape is None else shape
    colour = colour or str(rng.choice(list(COLOURS)))
    d = _seconds(rng, held, 0.3 if short else 0.5, 0.8 if short else 2.5)
    lv, db = _lv(rng)
    template = str(rng.choice((NOISE_HELD if held else NOISE_TRAIN)[shape]))
    if "{d}" not in template:
        d = SAID_NOTHING["noise"]
    text = template.format(lv=lv, c=colour, d=say_seconds(d, rng))
    return text, Event("noise", d, colour=COLOURS[colour], shape=shape, level=_said(db, template))


def sequence(rng, held: bool) -> tuple[str, list[Event]]:
    makers = (lambda: tone(rng, held, short=True), lambda: clicks(rng, held, short=True),
              lambda: noise(rng, held, short=True))
    # short events last at most 1.2 s, so a pair and its gap fit in MAX_SCENE_SECONDS
    (ta, a), (tb, b) = makers[rng.integers(3)](), makers[rng.integers(3)]()
    join = str(rng.choice(JOINS_HELD if held else JOINS_TRAIN))
    return join.format(a=ta, b=tb), [a, b]


FAMILIES = ("tone", "sweep", "siren", "clicks", "noise", "sequence")
WEIGHTS = (0.24, 0.18, 0.06, 0.2, 0.17, 0.15)


def draw(rng: np.random.Generator, *, held: bool = False, family: str | None = None) -> Scene:
    """One captioned scene of ``family`` (drawn by :data:`WEIGHTS` when None). The benchmark's
    families ``fade`` (noise fading out) and ``flat`` (steady white noise) are noises too."""
    family = family or str(rng.choice(FAMILIES, p=WEIGHTS))
    if family == "tone":
        text, e = tone(rng, held)
        events = [e]
    elif family in ("sweep", "siren"):
        text, e = sweep(rng, held, siren=family == "siren")
        events = [e]
    elif family == "clicks":
        text, e = clicks(rng, held)
        events = [e]
    elif family in ("noise", "fade", "flat"):
        shape = FADE_OUT if family == "fade" else STEADY if family == "flat" else None
        text, e = noise(rng, held, shape=shape, colour="white" if family == "flat" else None)
        events = [e]
    else:
        text, events = sequence(rng, held)
    text = " ".join(text.split())
    if rng.random() < 0.5:
        text = text[0].upper() + text[1:]
    if rng.random() < 0.5:
        text += "."
    return Scene(text, events, family)
