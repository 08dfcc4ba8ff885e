"""Every sentence the UI shows that is built from data: status line, banners, notes, API and About pages.

Plain strings (Markdown), no gradio: kept apart from the layout so the wording can be read and
tested on its own.
"""

from __future__ import annotations

import math

from typing import Any

from auk_app import instructions, knobs, lengths
from auk_app.config import Limits
from auk_app.resolve import AUDEX, AUK_BASE, AUK_FLASH, QWEN_OMNI, XCODEC1
from auk_app.catalog import GET_WEIGHTS

_RELIABILITY = {True: "reliable", False: "often unstable", None: "not tested"}  # ComfyUI-AuK's community tests
_VERDICT_MARKS = {"ok": "✓ Ready:", "warning": "⚠ Usable, but:", "rejected": "✗ Refused:"}


def status_line(info: dict[str, Any]) -> str:
    """What is loaded, on which device and dtype, and which Audex is in use (from Studio.info())."""
    models = info["models"]
    default = models[info["default_model"]]["label"]
    loaded = models[info["loaded_model"]]["label"] if info["loaded_model"] else "none yet (loads on the first run)"
    audex = "Audex-Tiny demo" if info["audex_demo"] else "Nemotron-Labs-Audex-2B"
    return (
        f"**AuK default:** {default} · **loaded:** {loaded} · **device:** {info['device']} · "
        f"**dtype:** {info['dtype']} · **Audex:** {audex}"
    )


def loading_line(pending: list[str]) -> str:
    """What the app still loads in the background, which a run started now waits for ("" once done)."""
    if not pending:
        return ""
    return (f"⏳ **Still loading:** {', '.join(pending)}. The page works meanwhile; a run started now waits "
            "for what it needs.")


def serving_line(info: dict[str, Any]) -> str:
    """The console's first word on what this server runs, from Studio.info()."""
    default = info["models"][info["default_model"]]
    audex = "the Audex-Tiny demo" if info["audex_demo"] else "Nemotron-Labs-Audex-2B"
    weights = "the embedded demo model (no released weights found)" if default["demo"] else "released weights"
    loading = ("the demo models load behind the page once it answers" if default["demo"]
               else "released weights load on first use unless --preload")
    quantized = "" if info.get("quantize", "none") == "none" else f" with {info['quantize']} block weights"
    return (f"AuK Studio serves {default['label']} ({weights}) and {audex} on {info['device']}, {info['dtype']}"
            f"{quantized}; {loading}.")


def demo_banner() -> str:
    return (
        "⚠ **The embedded demo model is in use, not the released AuK weights.** AuK-Tiny is a small model "
        "trained for this app on tones and espeak-ng speech: it changes the volume of speech and tones "
        "(\"Increase the volume by 6 dB.\", within about 1 dB) and shifts their pitch (\"Raise the pitch by 2 "
        "semitones.\", within a few cents), generates sine tones from text (\"Generate a 450 Hz sine tone.\", "
        "within 1 %) and removes part of the noise (at 5 dB SNR it gains 10 to 11 dB on tones, about 6 dB on speech). "
        "Everything it outputs sounds synthetic: "
        "its codec re-synthesises sound from harmonics and noise. "
        + GET_WEIGHTS
    )


def audex_banner() -> str:
    return (
        "⚠ **Demo mode: Audex-Tiny, a small model trained here on synthetic sounds, not the released Audex.** "
        "It makes beeps and tones, sweeps and sirens (200–2000 Hz), clicks and knocks (up to six), and white, "
        "pink or brown noise, steady or fading in or out, alone or two in a row (\"a 1000 Hz beep, then two "
        "clicks\"), at the frequency, length and count the caption says: lengths in tenths of a second, up to "
        "the demo's 3 s. Give frequencies and lengths with a unit, in digits or words (\"440 Hz\", \"six hundred "
        "hertz\", \"300 ms\", \"two seconds\"); a fraction of a second in digits (\"1.5 seconds\": \"one and a "
        "half seconds\" can come out as half a second). It cannot make anything else (rain, voices, music): "
        "other words are unknown to it. Its "
        "codec re-synthesises events from a few digits, so everything sounds synthetic; the phase mask, the "
        "validity report and the decoding path are the release's. "
        f"For the released model set `{AUDEX.env_var}` and `{XCODEC1.env_var}` (or pass `--audex` and `--xcodec`)."
    )


def upload_verdict(findings: dict[str, Any] | None) -> str:
    """The upload check's one line under the player."""
    if findings is None:
        return "No clip: the instruction alone generates audio (set a duration)."
    return f"{_VERDICT_MARKS[findings['verdict']]} {findings['message']}"


def rewritten_note(suggestion) -> str:
    who = {"thinker": "the model's thinker", "recogniser": "the demo's recogniser"}[suggestion.by]
    return (f"Rewritten into the model's wording by {who}, from: “{suggestion.asked}”. Change it if it is not what "
            "you meant, then Generate.")


def stopped_note(clock: str) -> str:
    return (f"Stopped at {clock}: a run in progress ends at its next step and writes nothing; "
            "a waiting one is dropped from the queue.")


def stopped_done(clock: str) -> str:
    return f"■ Stopped: the run ended at {clock}, at its next step, and wrote nothing."


def grid(times) -> str:
    """A time grid as the page shows and takes it: "0, 0.07612, 0.2929, 0.6173, 1"."""
    return ", ".join(f"{t:.4g}" for t in times)


def flash_note(label: str, times) -> str:
    return (
        f"**Locked: {label} runs a fixed recipe:** {len(times) - 1} steps, no guidance and its own time grid "
        f"`{grid(times)}`. "
        "It is a distilled student that only works this way (guidance blows up the amplitude), so these fields "
        "are locked. Values sent through the API are ignored and listed under `ignored` in the manifest."
    )


def base_note(label: str) -> str:
    return (f"The sliders start at {label}'s own defaults; left there, the run uses the default. "
            "A custom time grid replaces the step count and sway.")


def builder_preview(built: instructions.Built) -> str:
    """The builder's result: instruction, duration with its reason, what is missing, reliability."""
    duration = built.duration
    when = f"{duration.seconds:g} s, " if duration.seconds else ""
    lines = [f"**Instruction:** `{built.instruction}`", f"**Duration:** {when}{duration.reason}"]
    if built.problem:
        lines.append(f"⚠ {built.problem}")
    lines += [f"_{remark}_" for remark in (built.reliability, built.note) if remark]
    return "\n\n".join(lines)


SERVER_PLACEHOLDER = "http://<this server's address>/"  # until the page has loaded and knows it


def api_page(available_models: list[str], limits: Limits, url: str = SERVER_PLACEHOLDER) -> str:
    """The API tab; ``url`` is this server's address as the browser reached it (see Handlers.api_page)."""
    models = ", ".join(f"`{key}`" for key in available_models)
    return f"""
### Calling AuK Studio from Python

Every endpoint is named and every parameter has a default, so send only what you need. Files come
back as local paths; `Client(..., download_files=False)` returns URLs instead.

```python
from gradio_client import Client, handle_file

client = Client("{url}")
wav, figure, manifest, check_line, candidates, candidate_wavs = client.predict(
    audio=handle_file("speech.wav"), instruction="Decrease the volume by 10 dB.",
    seed=42, randomize_seed=False, candidates=4, api_name="/edit_audio")
print(manifest["seed"], manifest["check"], manifest["timings"])  # the best of the 4 seeds 42…45
print(check_line)  # "asked −10 dB · got −9.6 dB ✓"
```

| Endpoint | Returns |
|---|---|
| `/edit_audio` | WAV (24 kHz, PCM16), before/after PNG, manifest (with `warnings` and the edit `check`), the check's line, the table of candidates best first (`rank`, `seed`, `check`, `file`), their WAVs |
| `/text_to_audio` | WAV (16 kHz, PCM16), PNG, validity report, manifest |
| `/suggest_instruction` (`audio`, `instruction`, `model`) | `asked`, `used` (your request in the model's wording, or your words), `by` (`thinker` or `recogniser`), `warning` |
| `/inspect_audio` (`audio`) | `sample_rate`, `channels`, `duration_s`, `peak`, `rms`, `silent`, `clipping`, `verdict`, `message` |
| `/model_info` | `available_models` ({models}), `loaded_model`, `device`, `dtype`, `demo`, … |

#### `/edit_audio`'s parameters

{_parameters(knobs.EDIT, limits)}

#### `/text_to_audio`'s parameters

{_parameters(knobs.AUDEX, limits)}

A bad value is refused with a sentence naming the limit: a `ValidationError` before the request
is queued, or an `AppError`. Several edits run at once (concurrent edits of similar length share each model
step); text-to-audio runs one at a time.
"""


def _parameters(endpoint: knobs.Knobs, limits: Limits) -> str:
    """A table of an endpoint's knobs: the name with its default below it, and what it does. Two
    columns, so that it reads on a phone too."""
    rows = [f"| `{k.name}`<br>default `{k.default!r}` | {k.describe(limits)} |" for k in endpoint]
    return "\n".join(["| parameter | what it does |", "|---|---|", *rows])


def about_page(limits: Limits, max_file_size: str) -> str:
    repos = "\n".join(
        f"| {repo.repo_id} | `{repo.env_var}` | `{repo.download_command}` |"
        for repo in (AUK_BASE, AUK_FLASH, QWEN_OMNI, AUDEX, XCODEC1)
    )
    tasks = "\n".join(f"| {t.category} | {t.name} | `{_example(t)}` | {_RELIABILITY[t.reliable]} |"
                      for t in instructions.TASKS)
    return f"""
### Models
**AuK** edits or generates 24 kHz speech and audio from an instruction: a diffusion transformer with flow
matching over a VAE's 50 Hz latents, conditioned on Qwen2.5-Omni-3B. **AuK-Flash** is its 4-step distilled
student. **Audex** makes 16 kHz sound from a caption: a language model samples XCodec1's four-codebook tokens
under an RVQ phase mask. The embedded **AuK-Tiny** and **Audex-Tiny** demos are small models trained here on synthetic sounds.

### Limits
{lengths.summary(limits)} Clips from {limits.min_seconds * 1000:.0f} ms, up to {limits.max_channels} channels,
{limits.min_sample_rate / 1000:g}–{limits.max_sample_rate / 1000:g} kHz, peaks up to {20 * math.log10(limits.max_peak):+.0f} dBFS; targets from
{limits.min_seconds:g} s to {limits.max_target_seconds:g} s; nfe {limits.min_nfe}–{limits.max_nfe}; cfg 0–{limits.max_cfg:g};
sway {limits.min_sway:g} to {limits.max_sway:g}; instructions and captions up to {limits.max_instruction_chars} characters;
uploads up to {max_file_size.upper()} and {limits.max_decoded_samples / 1e6:g} million samples (frames × channels,
read from the header before decoding). Audex's max_seconds: {knobs.AUDEX['max_seconds'].describe(limits)}

### Getting the released weights
| Repository | Environment variable | Download |
|---|---|---|
{repos}

Or start the app with `--download`. `python app.py --help` lists every option.

### Tasks AuK understands
The task is chosen by the wording alone; the builder on the first tab writes these templates for you.

| Category | Task | Example wording | Released AuK in community tests (no prompt enhancer) |
|---|---|---|---|
{tasks}
"""


def _example(task: instructions.Task) -> str:
    """The task's template filled with its defaults and placeholder examples."""
    return task.render({name: slot.default or slot.placeholder for name, slot in task.slots.items()})
