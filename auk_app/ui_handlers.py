"""The app's event functions, bound to one Studio: thin parse → Studio → render steps.

The public ones are the API (``edit_audio``, ``text_to_audio``, ``inspect_audio``,
``model_info``): their parameter names and defaults are what ``gradio_client`` shows, and every
parameter has one. Each model endpoint has a validator (``check_edit``, ``check_audex``) that
Gradio runs before the request enters the queue; the pipelines check everything again.
AppErrors become ``gr.Error`` with their sentence; anything else is logged and reported with its
type, never as Gradio's generic error text.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder

from auk_app import instructions, outputs, rvq_table, ui_text, upload_check
from auk_app.audex.params import MAX_CODEC_CAP, TTASampling
from auk_app.audex.report import FRAME_RATE_HZ
from auk_app.audex.rvq import MAX_TTA_FRAMES
from auk_app.auk.pipeline import EditRequest
from auk_app.errors import AppError, Cancelled, InputError
from auk_app.service import ModelEntry, Studio
from auk_app.validate import (
    check_caption, check_duration_known, check_instruction, check_sampling, check_seconds, check_seed, parse_t_grid,
    random_seed, shown,
)
from auk_app.ui_runs import Runs
from auk_app.zerogpu import gpu

log = logging.getLogger(__name__)

CODEC_TOKENS_PER_SECOND = 4 * FRAME_RATE_HZ  # XCodec1: 4 codebooks × 50 frames per second = 200
MAX_AUDEX_SECONDS = MAX_CODEC_CAP / CODEC_TOKENS_PER_SECOND  # 20 s of tokens…
DECODED_AUDEX_SECONDS = MAX_TTA_FRAMES / FRAME_RATE_HZ  # …of which decode keeps 10 s
AUDEX_DEMO_SECONDS = 3.0  # the tiny demo LM on a CPU: a few seconds keep a run short
AUDEX_SECONDS = 10.0  # the released model was trained on 10 s clips
AUDEX_DEFAULTS = TTASampling()  # the official recipe: cfg 3.0, temperature 1.0, top-k 80
_PHASES = {
    "load": "Loading the model (first run only)",
    "condition": "Encoding the instruction and the clip",
    "decode": "Decoding to 24 kHz audio",
}


# ----------------------------------------------------------------------------- value checks


def _ok() -> dict:
    return gr.validate(True, "")


def _checked(check, value) -> dict:
    """``gr.validate`` for one value: invalid with the AppError's sentence when ``check`` raises one."""
    try:
        check(value)
    except AppError as exc:
        return gr.validate(False, str(exc))
    except (TypeError, ValueError):
        return gr.validate(False, f"{shown(value)} is not a number.")
    return _ok()


def pick_seed(seed: Any, randomize: bool) -> int:
    return random_seed() if randomize else check_seed(seed)


def codec_cap(max_seconds: Any) -> int:
    """200 codec tokens per second, in whole frames of 4 tokens, at most the 4000-token cap."""
    if max_seconds is None or isinstance(max_seconds, bool) or not 0 < float(max_seconds) <= MAX_AUDEX_SECONDS:
        raise InputError(
            f"max_seconds must be more than 0 and at most {MAX_AUDEX_SECONDS:g} (the {MAX_CODEC_CAP}-token codec cap); "
            f"got {max_seconds!r}. Only the first {DECODED_AUDEX_SECONDS:g} s are decoded."
        )
    return max(4, min(MAX_CODEC_CAP, int(float(max_seconds) * CODEC_TOKENS_PER_SECOND) // 4 * 4))


def _as_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _whole(value: Any) -> Any:
    """A whole float (a number box's 80.0) as an int; anything else unchanged, for the checks to refuse."""
    is_number = isinstance(value, float) and value.is_integer()
    return int(value) if is_number else value


def _raise_if_stopped(stop) -> None:
    """A run stopped after its last step still delivers nothing: no files are written."""
    if stop.is_set():
        raise Cancelled("Stopped before the result was ready; nothing was produced.")


def _as_float(value: Any) -> float | None:
    return None if value is None else float(value)


# An absolute path: a slash-separated run of at least two parts, not inside a URL.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])(?:/[^\s/'\"`,;()]+)+/([^\s/'\"`,;()]+)")


def without_paths(message: str) -> str:
    """``message`` with absolute paths cut to their last part: clients never see the server's disk."""
    return _ABSOLUTE_PATH.sub(r"\1", message)


def _gr_error(exc: Exception) -> gr.Error:
    """The user's sentence for an AppError; a logged failure message for anything else."""
    if isinstance(exc, AppError):
        return gr.Error(without_paths(str(exc)), print_exception=False)
    log.exception("request failed")
    return gr.Error(
        f"The run failed unexpectedly ({type(exc).__name__}: {without_paths(str(exc))[:200]}). "
        "Nothing was produced; the server log has the details."
    )


def _output_root() -> Path:
    """Inside Gradio's temp dir (GRADIO_TEMP_DIR when set), never the working directory."""
    return Path(get_upload_folder()) / "auk_studio"


# ----------------------------------------------------------------------------- progress and GPU budget


def _auk_progress(progress: gr.Progress):
    """The pipeline's ``progress(phase, done, total)`` as Gradio progress with a readable phase."""

    def report(phase: str, done: int, total: int) -> None:
        if phase == "sample":
            progress((done, total), desc=f"Sampling: Euler step {done} of {total}", unit="steps")
        else:
            progress((done, total), desc=_PHASES.get(phase, phase), unit="phase")

    return report


def _audex_progress(progress: gr.Progress, label: str):
    """Token progress, forwarded about a hundred times per run rather than for each of up to 4001 tokens."""

    def report(done: int, total: int) -> None:
        if done == total or done % max(1, total // 100) == 0:
            progress((done, total), desc=f"{label}: codec token {done} of at most {total}", unit="tokens")

    return report


def _named(args: tuple, kwargs: dict, names: tuple[str, ...]) -> dict:
    return dict(zip(names, args)) | kwargs


def edit_gpu_seconds(*args, **kwargs) -> int:
    """ZeroGPU budget for one edit: loading plus a per-step cost growing with the target length."""
    named = _named(args, kwargs, ("audio", "instruction", "model", "seconds", "nfe"))
    try:
        steps, target = float(named.get("nfe") or 32), float(named.get("seconds") or 30)
    except (TypeError, ValueError):
        steps, target = 32.0, 30.0
    return int(min(180, 30 + steps * target * 0.05))


def audex_gpu_seconds(*args, **kwargs) -> int:
    """ZeroGPU budget for text-to-audio: about 10 ms per guided token, twice with the comparison run."""
    named = _named(args, kwargs, ("caption", "cfg", "max_seconds", "temperature", "top_k", "seed",
                                  "randomize_seed", "compare_unmasked"))
    try:
        tokens = codec_cap(named.get("max_seconds") or AUDEX_SECONDS)
    except AppError:
        tokens = MAX_CODEC_CAP
    runs = 2 if named.get("compare_unmasked") else 1
    return int(min(180, 20 + runs * tokens * 0.01))


# ----------------------------------------------------------------------------- UI updates


def knob_updates(entry: ModelEntry) -> tuple[dict, dict, dict, dict, dict]:
    """nfe, cfg, sway, t_grid and the note for ``entry``: locked, with the reason, on Flash."""
    checkpoint = entry.checkpoint
    if checkpoint.is_flash:
        steps = len(checkpoint.t_grid) - 1
        grid = ", ".join(f"{t:.4g}" for t in checkpoint.t_grid)
        return (
            gr.update(value=None, interactive=False, placeholder=f"fixed: {steps}"),
            gr.update(value=None, interactive=False, placeholder="fixed: 0"),
            gr.update(value=None, interactive=False, placeholder="fixed: none"),
            gr.update(value="", interactive=False, placeholder=f"fixed by {checkpoint.name}: {grid}"),
            gr.update(value=ui_text.flash_note(entry.label, steps, grid), elem_classes=["flash-note"]),
        )
    shown = {key: "none" if value is None else f"{value:g}" for key, value in checkpoint.defaults.items()}
    return (
        gr.update(interactive=True, placeholder=f"default: {shown['nfe']}"),
        gr.update(interactive=True, placeholder=f"default: {shown['cfg']}"),
        gr.update(interactive=True, placeholder=f"default: {shown['sway']}"),
        gr.update(interactive=True, placeholder="empty: built from nfe and sway, e.g. 0, 0.1, 0.4, 1"),
        gr.update(value=ui_text.base_note(entry.label), elem_classes=["note"]),
    )


def field_updates(task_key: str) -> list[dict]:
    """The builder's five generic inputs, relabelled (or hidden) for ``task_key``."""
    chosen = instructions.task(task_key)
    updates = []
    for name in instructions.FIELD_NAMES:
        slot = chosen.slots.get(name)
        if slot is None:
            updates.append(gr.update(visible=False, value=None if name in instructions.CHOICE_FIELDS else ""))
        elif slot.choices:
            updates.append(gr.update(visible=True, label=slot.label, choices=list(slot.choices), value=slot.default))
        else:
            updates.append(gr.update(visible=True, label=slot.label, value="", placeholder=slot.placeholder))
    return updates


# ----------------------------------------------------------------------------- handlers


class Handlers:
    """Every event function of the app over one Studio (and its limits, and the stop flags)."""

    def __init__(self, studio: Studio):
        self.studio = studio
        self.limits = studio.config.limits
        self.audex_demo = studio.audex_is_demo
        self.audex_seconds = AUDEX_DEMO_SECONDS if self.audex_demo else AUDEX_SECONDS
        self._runs = Runs()
        # On a ZeroGPU Space the GPU is attached per call, for a budget computed from the request.
        self.edit_audio = self._runs.stoppable(gpu(edit_gpu_seconds)(self._edit_audio))
        self.text_to_audio = self._runs.stoppable(gpu(audex_gpu_seconds)(self._text_to_audio))

    # ------------------------------------------------------------------ AuK

    def check_edit(self, audio=None, instruction=None, model="auto", seconds=0, nfe=None, cfg=None, sway=None,
                   t_grid=None, seed=0, randomize_seed=True, vae_sample=True):
        """Validator: the upload check and every knob, before the request is queued."""
        limits = self.limits
        if audio is None:
            audio_ok = _ok()
        else:
            findings = upload_check.check_upload(audio, limits)
            audio_ok = gr.validate(findings["verdict"] != "rejected", findings["message"])
        return [
            audio_ok,
            _checked(lambda v: check_instruction(v, limits), instruction),
            _checked(self.studio.entry, model),
            _checked(lambda v: check_duration_known(check_seconds(v, limits), audio is not None), seconds),
            _checked(lambda v: check_sampling(v, None, None, limits), nfe),
            _checked(lambda v: check_sampling(None, v, None, limits), cfg),
            _checked(lambda v: check_sampling(None, None, v, limits), sway),
            _checked(lambda v: parse_t_grid(v, limits), t_grid),
            _ok() if randomize_seed else _checked(check_seed, seed),
            _ok(),
            _ok(),
        ]

    def _edit_audio(self, audio=None, instruction=None, model="auto", seconds=0, nfe=None, cfg=None, sway=None,
                    t_grid=None, seed=0, randomize_seed=True, vae_sample=True, progress=gr.Progress(),
                    request: gr.Request = None):
        """Edit a clip, or generate speech/audio from the instruction alone, with AuK.

        Returns the 24 kHz WAV (PCM16, at the level the model produced), the before/after PNG and the
        manifest. seconds 0 = automatic (exactly the source's length); nfe/cfg/sway/t_grid left empty
        use the chosen model's defaults (Flash always runs its fixed recipe). vae_sample True draws the
        clip's latent from the VAE posterior with the seed, as upstream AuK does; False takes its mean.
        """
        stop = self._runs.flag(request)
        try:
            check_sampling(nfe, cfg, sway, self.limits)  # before int()/float() can round a bad value
            edit = EditRequest(
                instruction=instruction, audio=audio, seconds=_as_float(seconds), nfe=_as_int(nfe),
                cfg=_as_float(cfg), sway=_as_float(sway), t_grid=t_grid or None,
                seed=pick_seed(seed, randomize_seed), vae_sample=bool(vae_sample), fit_to_source=True,
            )
            result, entry = self.studio.edit(edit, model, progress=_auk_progress(progress), should_stop=stop.is_set)
            _raise_if_stopped(stop)
            made = outputs.render_edit(
                result, entry, source_path=audio, randomized_seed=bool(randomize_seed), root=_output_root(),
                requested={"seconds": seconds, "nfe": nfe, "cfg": cfg, "sway": sway, "t_grid": t_grid or None,
                           "vae_sample": vae_sample},
            )
        except Exception as exc:
            raise _gr_error(exc) from exc
        state = {"seed": made.manifest["seed"], "file": str(made.manifest_file)}
        return str(made.audio), str(made.figure), made.manifest, state

    # ------------------------------------------------------------------ Audex

    def check_audex(self, caption=None, cfg=AUDEX_DEFAULTS.cfg_scale, max_seconds=None,
                    temperature=AUDEX_DEFAULTS.temperature, top_k=AUDEX_DEFAULTS.top_k, seed=0,
                    randomize_seed=True, compare_unmasked=False):
        """Validator for text-to-audio: each knob through TTASampling's own checks."""
        return [
            _checked(lambda v: check_caption(v, self.limits), caption),
            _checked(lambda v: TTASampling(cfg_scale=v), cfg),
            _checked(codec_cap, self.audex_seconds if max_seconds is None else max_seconds),
            _checked(lambda v: TTASampling(temperature=v), temperature),
            _checked(lambda v: TTASampling(top_k=_whole(v)), top_k),
            _ok() if randomize_seed else _checked(check_seed, seed),
            _ok(),
            _ok(),
        ]

    def _text_to_audio(self, caption=None, cfg=AUDEX_DEFAULTS.cfg_scale, max_seconds=None,
                       temperature=AUDEX_DEFAULTS.temperature, top_k=AUDEX_DEFAULTS.top_k, seed=0,
                       randomize_seed=True, compare_unmasked=False, progress=gr.Progress(),
                       request: gr.Request = None):
        """Generate a sound from a caption with Audex (16 kHz).

        Returns the WAV (None when nothing decodable came out), the figure (spectrogram and token
        stream), the RVQ-phase validity report and the manifest. max_seconds sets the codec cap
        (200 tokens per second). compare_unmasked also samples the same seed without the phase mask:
        its report goes into the manifest ("unmasked") and its token stream into the figure.
        """
        max_seconds = self.audex_seconds if max_seconds is None else max_seconds
        stop = self._runs.flag(request)
        try:
            caption = check_caption(caption, self.limits)
            pipeline = self.studio.audex()
            knobs = {"cfg": cfg, "max_seconds": max_seconds, "codec_cap": codec_cap(max_seconds),
                     "temperature": temperature, "top_k": _whole(top_k), "top_p": AUDEX_DEFAULTS.top_p}
            settings = dict(cfg_scale=cfg, codec_cap=knobs["codec_cap"], temperature=temperature,
                            top_k=knobs["top_k"], seed=pick_seed(seed, randomize_seed), should_stop=stop.is_set)
            result = pipeline.generate(caption, progress=_audex_progress(progress, "Sampling"), **settings)
            unmasked = None
            if compare_unmasked:
                unmasked = pipeline.generate(
                    caption, use_mask=False, decode=False,
                    progress=_audex_progress(progress, "Comparison run without the mask"), **settings,
                )
            _raise_if_stopped(stop)
            model = {
                "model": "Audex demo (tiny, untrained)" if self.audex_demo else "Nemotron-Labs-Audex-2B",
                "demo_model": self.audex_demo, "thinker_dir": Path(pipeline.thinker_dir).name,
                "xcodec_dir": Path(pipeline.xcodec_dir).name, "device": str(pipeline.device),
                "dtype": str(pipeline.dtype).removeprefix("torch."),
            }
            made = outputs.render_audex(
                result, caption=caption, knobs=knobs, model=model, randomized_seed=bool(randomize_seed),
                root=_output_root(), unmasked=unmasked,
            )
        except Exception as exc:
            raise _gr_error(exc) from exc
        table = rvq_table.report_table(result.report, unmasked.report if unmasked else None)
        state = {"seed": result.seed, "file": str(made.manifest_file), "table": table}
        audio = None if made.audio is None else str(made.audio)
        return audio, str(made.figure), result.report, made.manifest, state

    # ------------------------------------------------------------------ cheap public helpers

    def inspect_audio(self, audio=None):
        """The upload check's findings for a clip, without running a model: rate, channels, length, levels, verdict."""
        return upload_check.check_upload(audio, self.limits)

    def model_info(self):
        """Which models exist, which is loaded, on which device and dtype, and whether the demo is in use."""
        return self.studio.info()

    # ------------------------------------------------------------------ private UI plumbing

    def on_model_change(self, model):
        try:
            return knob_updates(self.studio.entry(model))
        except AppError:  # a typed, unknown name: the validator explains it on Generate
            return tuple(gr.skip() for _ in range(5))

    def on_audio_change(self, audio):
        findings = None if audio is None else upload_check.check_upload(audio, self.limits)
        usable = findings is not None and findings["verdict"] != "rejected"
        return ui_text.upload_verdict(findings), (findings["duration_s"] if usable else None)

    def preview(self, task_key, mode, text, original, option, amount, source_seconds, language=instructions.EN):
        fields = {"mode": mode, "text": text, "original": original, "option": option, "amount": amount}
        built = instructions.build(task_key, {k: v or "" for k, v in fields.items()},
                                   source_seconds=source_seconds, language=language or instructions.EN,
                                   limits=self.limits)
        return ui_text.builder_preview(built), {"instruction": built.instruction, "seconds": built.duration.seconds}

    @staticmethod
    def apply_built(built):
        return built["instruction"], built["seconds"]

    def after_edit(self, state):
        return state["seed"], gr.update(value=state["file"], visible=True), self.status()

    def after_audex(self, state):
        return state["seed"], gr.update(value=state["file"], visible=True), state["table"], self.status()

    def stop(self, request: gr.Request):
        self._runs.stop(request)

    def status(self):
        return ui_text.status_line(self.studio.info())
