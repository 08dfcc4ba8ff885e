"""Every knob a request takes, declared once: its default, its check and the sentence for a bad
value, its help text, its label and its widget.

The page's inputs and their validator, the API's parameters, the CLI's flags, the request types,
the Serve body and the manifest's ``requested`` are all read from :data:`EDIT` and :data:`AUDEX`, so
a knob is added or changed here and nowhere else in the front ends. A check takes the value as a
client sent it (JSON, a number box's 4.0, a flag's ``"false"``) and returns the value the run uses,
or raises InputError naming the limit and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from auk_app.audex import params
from auk_app.audex.request import DECODED_SECONDS, TRAINED_SECONDS, AudexRequest
from auk_app.config import Limits
from auk_app.errors import AppError, InputError, KnobError
from auk_app.validate import check_caption, check_flag, check_instruction, check_seed, is_real, is_whole, shown

MAX_CANDIDATES = 8  # seeds of one edit run side by side (they share DiT steps in the batcher)

Check = Callable[[Any, Limits], Any]
Span = Callable[[Limits], tuple[float, float, float]]


@dataclass(frozen=True)
class Knob:
    """One input of an endpoint. ``default`` is what the API and the CLI send when a client leaves it
    out; ``widget`` and ``group`` say how and where the page shows it ("" for the API alone)."""

    name: str
    default: Any
    check: Check
    help: str  # one sentence: the CLI's help, the API table, the page's info line
    label: str
    widget: str  # "audio", "text", "choice", "number", "slider", "checkbox", "grid"
    group: str = ""
    cli: bool = True  # a flag of `python -m auk_app edit`
    span: Span | None = None  # a slider's (lowest, highest, step) under the limits
    run: bool = False  # what the model's run reads: a field of the request (auk.request.EditRequest)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def describe(self, limits: Limits) -> str:
        """The help text with the limits it names filled in ("up to {max_target_seconds:g} s")."""
        return self.help.format_map(asdict(limits))


class Knobs(Sequence[Knob]):
    """An endpoint's knobs in the API's order."""

    def __init__(self, knobs: Sequence[Knob]):
        self._knobs = tuple(knobs)
        self._by_name = {k.name: k for k in self._knobs}

    def __getitem__(self, index):
        return self._by_name[index] if isinstance(index, str) else self._knobs[index]

    def __len__(self) -> int:
        return len(self._knobs)

    def __iter__(self) -> Iterator[Knob]:
        return iter(self._knobs)

    def __contains__(self, name) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def defaults(self) -> dict[str, Any]:
        return {k.name: k.default for k in self._knobs}

    def in_group(self, group: str) -> list[Knob]:
        return [k for k in self._knobs if k.group == group]

    def problems(self, values: Mapping[str, Any], limits: Limits) -> dict[str, str]:
        """The sentence of each value in ``values`` its knob refuses, by name (a seed too where a fresh
        draw replaces it: the manifest records what was sent)."""
        found = {}
        for name, value in values.items():
            if name in self._by_name:
                try:
                    self._by_name[name].check(value, limits)
                except AppError as exc:
                    found[name] = str(exc)
        return found

    def checked(self, values: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
        """Every knob's value as the run uses it (defaults for those left out); the first refusal raises."""
        return {k.name: k.check(values.get(k.name, k.default), limits) for k in self._knobs}


# ----------------------------------------------------------------------------- checks


def _any(value, limits: Limits):
    return value


def _number(what: str, span: Span) -> Check:
    """None (the checkpoint's default) or a real number within ``span``, a whole one where it steps by 1."""

    def check(value, limits: Limits):
        if value is None:
            return None
        low, high, step = span(limits)
        whole = step == 1
        if not (is_whole(value) if whole else is_real(value)) or not low <= value <= high:
            within = f"a whole number from {low:g} to {high:g}" if whole else f"between {low:g} and {high:g}"
            raise InputError(f"{what} must be {within}; got {shown(value)}.")
        return int(value) if whole else float(value)

    return check


def _slider(name: str, what: str, span: Span, help: str, label: str) -> Knob:
    """A sampling knob: a slider at the model's default on the page, empty (the default) in the API."""
    return Knob(name, None, _number(what, span), help, label, "slider", "advanced", span=span, run=True)


def _flag(name: str) -> Check:
    return lambda value, limits: check_flag(value, name)


def _candidates(value, limits: Limits) -> int:
    if not (is_whole(value) and 1 <= value <= MAX_CANDIDATES):
        raise InputError(f"candidates is how many seeds of the edit to run and rank, a whole number from 1 to "
                         f"{MAX_CANDIDATES}; got {shown(value)}.")
    return int(value)


def _model(value, limits: Limits) -> str:
    """A model's key; the Studio says whether it is one (it knows which exist)."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"model names a model from /model_info, e.g. \"auto\"; got {shown(value)}.")
    return value.strip()


def _seconds(value, limits: Limits) -> float | None:
    """Target length in seconds, or None (0 means automatic)."""
    if value is None:
        return None
    if not is_real(value) or value < 0:
        raise InputError(
            f"seconds (the duration) must be 0 (automatic) or a positive number of seconds, at most "
            f"{limits.max_target_seconds:g}; got {shown(value)}."
        )
    if value == 0:
        return None
    if value > limits.max_target_seconds:
        raise InputError(
            f"seconds asks for {value:g} s; the limit is {limits.max_target_seconds:g} s. Ask for less."
        )
    if value < limits.min_seconds:
        raise InputError(
            f"seconds asks for {value:g} s; the shortest is {limits.min_seconds:g} s (two 20 ms latent "
            "frames). Ask for more, or 0 to match the source clip."
        )
    return float(value)


def _region_edge(name: str) -> Check:
    """One edge of a region, in seconds within the longest source a region is read from; the request
    checks the region as a whole (check_region)."""

    def check(value, limits: Limits) -> float | None:
        if value is None:
            return None
        if not is_real(value) or not 0 <= value <= limits.max_region_source_seconds:
            raise InputError(f"{name} is seconds from 0 to {limits.max_region_source_seconds:g} (the longest "
                             f"recording a region is cut from); got {shown(value)}. Leave region_end empty to "
                             "edit the whole clip.")
        return float(value)

    return check


def _times(value: str | Sequence[float] | None, what: str, example: str, most: int) -> tuple[float, ...] | None:
    """Flow times, comma-separated or listed: 2 to ``most`` of them, finite, strictly increasing,
    within [0, 1]; None when left empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        parts = value.replace(";", ",").split(",") if isinstance(value, str) else list(value)
        times = [float(part) for part in parts if not isinstance(part, str) or part.strip()]
    except (TypeError, ValueError):
        raise InputError(f"{what} {shown(value)} is not a comma-separated list of numbers, {example}.") from None
    problem = None
    if not 2 <= len(times) <= most:
        problem = f"needs {'2 numbers' if most == 2 else f'2 to {most} points'}; it has {len(times)}"
    elif not all(math.isfinite(t) and 0.0 <= t <= 1.0 for t in times):
        problem = "must lie within [0, 1]"
    elif any(b <= a for a, b in zip(times, times[1:])):
        problem = "must be strictly increasing"
    if problem:
        raise InputError(f"{what} {shown(times)} {problem}, {example}.")
    return tuple(times)


def _t_grid(value: str | Sequence[float] | None, limits: Limits) -> tuple[float, ...] | None:
    """A time grid: finite, strictly increasing, within [0, 1]."""
    return _times(value, "The time grid (t_grid)", "e.g. \"0, 0.3, 0.7, 1\"", limits.max_grid_points)


def _cfg_interval(value: str | Sequence[float] | None, limits: Limits) -> tuple[float, float] | None:
    """The flow times (from, to) between which guidance runs; None: at every step."""
    return _times(value, "The guidance interval (cfg_interval)", "from and to, e.g. \"0.1, 0.9\"", 2)


def need_duration(seconds: float | None, has_clip: bool) -> None:
    """A target length must come from somewhere: ``seconds`` (None = automatic) or the clip."""
    if seconds is None and not has_clip:
        raise KnobError(
            "seconds",
            "Without a source clip the model cannot infer a duration: there is no length to match. Set the "
            "duration in seconds (e.g. 3, or the builder's estimate), or upload a clip to edit."
        )


def check_region(start, end, has_clip: bool, limits: Limits) -> tuple[float, float] | None:
    """(start, end) in seconds of the part of the clip to edit; None for the whole clip (no end, or
    0 as a number box sends it, like seconds' 0 for automatic). An empty start is the beginning."""
    if end is None or (end == 0 and not start):
        return None
    start = 0.0 if start is None else start
    problem = None
    if not (is_real(start) and is_real(end)):
        problem = (f"region_start and region_end are seconds; got {shown(start)} and {shown(end)}. "
                   "Leave region_end empty to edit the whole clip.")
    elif start < 0 or end <= start:
        problem = (f"region_end ({end:g} s) must come after region_start ({start:g} s), and the start may not be "
                   "negative.")
    elif end - start > limits.max_target_seconds:
        problem = (f"The region lasts {end - start:g} s; the model edits at most {limits.max_target_seconds:g} s at a "
                   "time. Choose a shorter region.")
    elif end - start < limits.min_seconds:
        problem = f"The region lasts {end - start:g} s; the shortest is {limits.min_seconds:g} s. Choose a longer one."
    elif not has_clip:
        problem = "A region is a part of a clip: upload the clip to edit, or leave the region empty."
    if problem:
        raise KnobError("region_end", problem)
    return float(start), float(end)


def _max_seconds(value, limits: Limits) -> float | None:
    """Seconds of codec tokens, or None: the model's own length."""
    if value is None:
        return None
    params.codec_cap(value)
    return float(value)


# ----------------------------------------------------------------------------- the edit (AuK)

_SEEDS: Span = lambda limits: (0, 2**63 - 1, 1)  # noqa: E731
_SEED_HELP = "0 to 2^63−1; with randomize_seed off it reproduces a run, and the seed used is in the manifest."

EDIT = Knobs([
    Knob("audio", None, _any, "The clip to edit (any format soundfile or librosa reads); none generates from "
         "the instruction alone.", "Source clip (optional)", "audio", "source", cli=False, run=True),
    Knob("instruction", None, check_instruction, "What to do, e.g. \"Raise the pitch by 2 semitones.\"; the "
         "wording picks the task. Up to {max_instruction_chars} characters.", "Instruction", "text", "source",
         cli=False, run=True),
    Knob("model", "auto", _model, "auto (the released weights when found, else the demo), demo, base, flash or a "
         "name from /model_info.", "Model", "choice", "settings"),
    Knob("seconds", 0, _seconds, "The target length, up to {max_target_seconds:g} s; 0 is automatic: exactly the "
         "source's length (a region's own length with a region). Needed when there is no clip.", "Duration (s)",
         "number", "settings", run=True),
    _slider("nfe", "nfe (Euler steps)", lambda x: (x.min_nfe, x.max_nfe, 1), "Euler steps; empty: the model's "
            "default.", "nfe (Euler steps)"),
    _slider("cfg", "cfg (guidance strength)", lambda x: (0, x.max_cfg, 0.1), "Guidance strength, 0 = none; "
            "empty: the model's default.", "cfg (guidance)"),
    _slider("sway", "sway", lambda x: (x.min_sway, x.max_sway, 0.1), "Crowds the steps near the noise end (−1) or "
            "the data end (1); empty: the model's default.", "sway"),
    Knob("t_grid", None, _t_grid, "A time grid: comma-separated, strictly increasing, within [0, 1], 2 to "
         "{max_grid_points} points; it replaces the step count and sway.", "Time grid (t_grid)", "grid", "advanced",
         run=True),
    Knob("seed", 0, lambda value, limits: check_seed(value), _SEED_HELP, "Seed", "number", "seed", span=_SEEDS,
         run=True),
    Knob("randomize_seed", True, _flag("randomize_seed"), "Draw a fresh seed instead of using seed.",
         "Randomise seed", "checkbox", "seed"),
    Knob("vae_sample", True, _flag("vae_sample"), "On: the clip's latent is a draw from the VAE posterior, seeded "
         "by the seed, as upstream AuK does. Off: the posterior mean, as vLLM-Omni does.",
         "Sample the clip's latent (vae_sample)", "checkbox", "advanced", run=True),
    Knob("region_start", None, _region_edge("region_start"), "Where the part to edit starts, in seconds (empty: the "
         "beginning), in a recording of up to {max_region_source_seconds:g} s (edits that keep the timing and the "
         "words run on a longer one whole).", "Region start (s)", "number", "region", run=True),
    Knob("region_end", None, _region_edge("region_end"), "Where it ends; empty or 0: the whole clip. At most "
         "{max_target_seconds:g} s after the start; only that part changes, the rest comes back as it was.",
         "Region end (s)", "number", "region", run=True),
    Knob("headroom", False, _flag("headroom"), "On: a gain keeps the result's peak under −1 dBFS. Off: the level "
         "the model produced, and clipping is reported.", "Keep headroom (peak under −1 dBFS)", "checkbox",
         "advanced"),
    Knob("enhance", False, _flag("enhance"), "Rewrite the instruction into the cookbook's wording first (the released "
         "model's thinker, or the demo's recogniser); the manifest records both.", "Rewrite my words into the "
         "model's wording", "checkbox", "advanced"),
    Knob("candidates", 1, _candidates, "Seeds seed, seed+1, … of the same edit, run together and ranked by the "
         "edit check; the best is the result.", "Candidates", "slider", "seed", span=lambda x: (1, MAX_CANDIDATES, 1)),
    _slider("step_cache", "step_cache (the step cache's threshold)", lambda x: (0, 1, 0.01), "Reuse the previous "
            "step's velocity where the DiT's input moved less than this since (relative), never twice in a row: "
            "fewer DiT steps for a little accuracy. 0 = off; empty: the model's default (off).", "Step cache"),
    Knob("cfg_interval", None, _cfg_interval, "Guidance only at the steps whose flow time t (0 noise, 1 the result) "
         "lies within \"from, to\", e.g. \"0.1, 0.9\"; the other steps run the conditional branch alone. Empty: "
         "every step.", "Guidance interval (cfg_interval)", "text", "advanced", run=True),
])

# ----------------------------------------------------------------------------- text to audio (Audex)

AUDEX = Knobs([
    Knob("caption", None, check_caption, "The sound to make, e.g. \"Rain falling on a tin roof.\"", "Caption",
         "text"),
    Knob("cfg", params.DEFAULT_CFG_SCALE, lambda value, limits: params.check_cfg_scale(value, "cfg"),
         "Guidance, 1–10; 3.0 recommended, 1 = no guidance.", "cfg", "number"),
    Knob("max_seconds", None, _max_seconds, f"The codec cap, 200 tokens a second: up to {params.MAX_SECONDS:g} s of "
         f"tokens, of which the first {DECODED_SECONDS:g} s are decoded; empty: the model's length.", "Max seconds",
         "number"),
    Knob("temperature", params.DEFAULT_TEMPERATURE, lambda value, limits: params.check_temperature(value),
         "0.0001–10; 1.0 recommended.", "Temperature", "number"),
    Knob("top_k", params.DEFAULT_TOP_K, lambda value, limits: params.check_top_k(value),
         "1–8192; 80 recommended.", "top-k", "number"),
    Knob("seed", 0, lambda value, limits: check_seed(value), _SEED_HELP, "Seed", "number", span=_SEEDS),
    Knob("randomize_seed", True, _flag("randomize_seed"), "Draw a fresh seed instead of using seed.",
         "Randomise seed", "checkbox"),
    Knob("compare_unmasked", False, _flag("compare_unmasked"), "Also sample the same seed without the RVQ phase "
         "mask, to show what the mask prevents.", "Also run without the RVQ phase mask and compare", "checkbox"),
])


def drawn_seed(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with ``seed`` None (a fresh draw) where ``randomize_seed`` asks for one."""
    return {**values, "seed": None} if check_flag(values.get("randomize_seed", True), "randomize_seed") else dict(values)

def audex_request(values: Mapping[str, Any], limits: Limits, *, seconds: float = TRAINED_SECONDS) -> AudexRequest:
    """The text-to-audio request of the API's knobs (:data:`AUDEX`; defaults for those left out,
    ``seconds`` for an empty ``max_seconds``), with a drawn seed where ``randomize_seed`` asks for one;
    InputError names a bad value by its API name."""
    knobs = {**AUDEX.defaults(), **drawn_seed(values)}
    checked = {name: AUDEX[name].check(knobs[name], limits) for name in AUDEX.names if name != "randomize_seed"}
    max_seconds = checked["max_seconds"] or seconds
    sampling = params.AudexSampling(caption=checked["caption"], limits=limits, cfg_scale=checked["cfg"],
                                    codec_cap=params.codec_cap(max_seconds), temperature=checked["temperature"],
                                    top_k=checked["top_k"], seed=checked["seed"])
    return AudexRequest(sampling, max_seconds, checked["compare_unmasked"])


def replaying(values: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """``values`` set to run again as they ran: with the ``seed`` used and no fresh draw."""
    return {**values, "seed": seed, "randomize_seed": False}


# What /suggest_instruction takes: the edit's request as a person writes it, for whose model, of which clip.
SUGGEST = Knobs([EDIT["audio"], EDIT["instruction"], EDIT["model"]])
