"""The Studio: the models on this machine, the one kept resident, the engine edits run on, and Audex.

It knows which models exist (the registry), loads them lazily and keeps one AuK model resident at
a time, picks the engine edits run on (this process, or a Ray Serve deployment: :mod:`auk_app.engine`),
keeps the uploads it decoded lately, and serves text to audio. An edit itself is a job
(:mod:`auk_app.job`). The embedded demo model (``assets/AuK-Tiny``) is always available and goes
through the same loader as a release; nothing here branches on "demo" except what is reported to
the user and which Audex snapshot is used.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auk_app import demo, resolve
from auk_app.audex.request import TRAINED_SECONDS, AudexRequest, TextToAudioResult
from auk_app.auk.batching import DEFAULT_MAX_BATCH
from auk_app.auk.checkpoint import read_auk_checkpoint
from auk_app.auk.conditioner import instruction_reader
from auk_app.auk.pipeline import AuKPipeline
from auk_app.auk.configs import QWEN_OMNI
from auk_app.catalog import RELEASED, ModelEntry
from auk_app.config import Limits
from auk_app.engine import Engine, LocalEngine
from auk_app.errors import InputError
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.quantize import pick_quantization
from auk_app.runtime import pick_device, pick_precision
from auk_app.uploads import Uploads
from auk_app.urls import server_host
from auk_app.validate import shown

if TYPE_CHECKING:  # the Audex stack imports in seconds: only a Studio that serves Audex pays for it
    from auk_app.audex.pipeline import AudexPipeline

AUDEX_DEMO_SECONDS = 3.0  # the tiny demo LM on a CPU: a few seconds keep a run short
AUDEX_RUN = "Sampling"  # the progress phases of text_to_audio's runs
AUDEX_COMPARISON_RUN = "Comparison run without the mask"


@dataclass(frozen=True)
class StudioConfig:
    """Where the weights are (explicit paths win over the resolution order) and how to run them."""

    auk_base: Path | None = None
    auk_flash: Path | None = None
    extra_auk: tuple[Path, ...] = ()
    qwen: Path | None = None
    audex: Path | None = None
    xcodec: Path | None = None
    device: str | None = None
    dtype: str | None = None
    quantize: str = "none"  # weight-only int8 or int4 block linears of the DiT and text encoder (auk_app.quantize)
    offload: bool = False
    auk_batch: int = DEFAULT_MAX_BATCH  # most concurrent edits per DiT step (and concurrent edits the app admits)
    pack: bool = False  # shared steps attend over each edit's own frames (auk_app.auk.packing), not padding
    compile: bool | None = None  # compile the DiT's blocks; None: on CUDA
    download: bool = False
    default_model: str = "auto"
    audex_server: str | None = None  # a vLLM server with the Audex plugin samples Audex streams
    auk_server: str | None = None  # a Ray Serve deployment of AuK (auk_app.serve) runs the edits
    limits: Limits = field(default_factory=Limits)
    demo_dir: Path = demo.DEMO_DIR

    def __post_init__(self) -> None:
        if isinstance(self.auk_batch, bool) or not isinstance(self.auk_batch, int) or self.auk_batch < 1:
            raise InputError(f"auk_batch is the number of edits served at once, at least 1; got {self.auk_batch!r}.")


class Studio:
    """Model registry, residency and Audex, shared by the Gradio app, the CLI and the tests."""

    def __init__(self, config: StudioConfig = StudioConfig()):
        if config.audex_server:
            from auk_app.audex.remote import check_server_url

            check_server_url(config.audex_server)  # a bad URL is refused here, before anything loads
        self.config = config
        self.device = pick_device(config.device)
        self.precision = pick_precision(self.device, config.dtype)
        self.quantization = pick_quantization(self.device, self.precision, config.quantize)  # refused at start
        self.engine: Engine = self._engine()  # a bad Serve URL is refused here
        self.uploads = Uploads(config.limits.max_decoded_samples)
        demo.register()  # the demo model is always offered, and read like a release
        self._entries = self._discover()
        self.not_downloaded = {key: label for key, (label, _) in RELEASED.items() if key not in self._entries}
        self._default = self._pick_default(config.default_model)
        self._pipelines: dict[str, AuKPipeline] = {}
        self._audex = None
        # Decided from where the files are, without writing the demo snapshot: that waits for first use.
        self.audex_demo = not self.config.download and (
            resolve.find(resolve.AUDEX, self.config.audex) is None
            or resolve.find(resolve.XCODEC1, self.config.xcodec) is None
        )
        self._lock = threading.Lock()
        self._editing = threading.Condition()  # guards _running: edits in flight per model key
        self._running: dict[str, int] = {}
        self._readers: dict[str, Callable[[str], str | None] | None] = {}  # per model: its instruction_reader
        self._readers_lock = threading.Lock()

    def _engine(self) -> Engine:
        """Where edits run: the Serve deployment of --auk-server, else this process."""
        if not self.config.auk_server:
            return LocalEngine(self._resident)
        from auk_app.serve.client import ServeRunner
        from auk_app.serve.engine import ServeEngine

        return ServeEngine(ServeRunner(self.config.auk_server), self.config.limits, self.device)

    # ------------------------------------------------------------------ registry

    def _discover(self) -> dict[str, ModelEntry]:
        entries = {"demo": ModelEntry("demo", "AuK-Tiny (demo)", read_auk_checkpoint(self.config.demo_dir), demo=True)}
        found = {
            "base": self._find(resolve.AUK_BASE, self.config.auk_base),
            "flash": self._find(resolve.AUK_FLASH, self.config.auk_flash),
        }
        for key, directory in found.items():
            if directory is not None:
                checkpoint = read_auk_checkpoint(directory)
                entries[key] = ModelEntry(key, f"{checkpoint.name} ({checkpoint.variant})", checkpoint, demo=False)
        for directory in self.config.extra_auk:
            checkpoint = read_auk_checkpoint(directory)
            key = Path(directory).name
            entries[key] = ModelEntry(key, f"{checkpoint.name} ({key})", checkpoint, demo=False)
        return entries

    def _find(self, repo: resolve.Repo, explicit: Path | None) -> Path | None:
        if self.config.download:
            return resolve.resolve(repo, explicit, download=True)
        return resolve.find(repo, explicit)

    def _pick_default(self, wanted: str) -> str:
        if wanted == "auto":
            return next((k for k in ("base", "flash") if k in self._entries), "demo")
        return self.entry(wanted).key

    def models(self) -> list[ModelEntry]:
        return list(self._entries.values())

    def entry(self, name: str | None) -> ModelEntry:
        """The model a client named: ``auto``, a key or a label; InputError lists the choices."""
        name = (name or "auto").strip()
        if name == "auto":
            return self._entries[self._default]
        for entry in self._entries.values():
            if name in (entry.key, entry.label):
                return entry
        choices = ", ".join(["auto", *self._entries])
        for key, label in self.not_downloaded.items():
            if name in (key, label):
                raise InputError(self._get_released(key, choices))
        raise InputError(f"Unknown model {shown(name)}. Choose one of: {choices}.")  # shown: a 100 kB name stays short

    def released(self) -> list[str]:
        """The keys of the released weights on this machine (a config that declares no tasks: AuK's own)."""
        return [e.key for e in self._entries.values() if not e.demo and e.checkpoint.capabilities.tasks is None]

    def _get_released(self, key: str, choices: str) -> str:
        """One sentence: the released variant ``key`` is not here, the command that fetches it, the choices now."""
        label, repo = RELEASED[key]
        qwen = "" if resolve.find(resolve.QWEN_OMNI, self.config.qwen) else f" and `{resolve.QWEN_OMNI.download_command}`"
        return (f"{label} is not downloaded: fetch it with `{repo.download_command}`{qwen}, then restart the app; "
                f"until then choose one of: {choices}.")

    # ------------------------------------------------------------------ AuK

    def pipeline(self, entry: ModelEntry) -> AuKPipeline:
        """The entry's pipeline; loading another model first unloads the resident one."""
        with self._lock:
            pipeline = self._pipelines.get(entry.key)
            if pipeline is None:
                text_encoder = None
                if entry.checkpoint.text_encoder.kind == QWEN_OMNI:  # a snapshot to find (MiniLM is installed)
                    text_encoder = self._qwen_dir(entry)
                pipeline = AuKPipeline(
                    entry.checkpoint, text_encoder_path=text_encoder, device=self.device, dtype=self.precision,
                    offload=self.config.offload, limits=self.config.limits, max_batch=self.config.auk_batch,
                    compile=self.config.compile, pack=self.config.pack, quantize=self.quantization,
                )
                for other in self._pipelines.values():
                    other.unload()
                self._pipelines = {entry.key: pipeline}
            return pipeline

    def _qwen_dir(self, entry: ModelEntry) -> Path:
        bundled = entry.checkpoint.directory / "thinker"  # a vLLM-Omni assembled directory links it here
        if self.config.qwen is None and resolve.QWEN_OMNI.is_complete(bundled):
            return bundled
        return resolve.resolve(resolve.QWEN_OMNI, self.config.qwen, download=self.config.download)

    def instruction_problem(self, entry: ModelEntry, instruction: str) -> str | None:
        """What ``entry``'s text encoder refuses in ``instruction`` (more tokens than it has positions),
        read by its tokenizer alone, which is kept per model."""
        with self._readers_lock:  # validators run side by side: the tokenizer is loaded once
            if entry.key not in self._readers:
                encoder = entry.checkpoint.text_encoder
                locate = (lambda: self._qwen_dir(entry)) if encoder.kind == QWEN_OMNI else (lambda: None)
                self._readers[entry.key] = instruction_reader(encoder, locate)
        reader = self._readers[entry.key]
        return None if reader is None else reader(instruction)

    @contextlib.contextmanager
    def _resident(self, entry: ModelEntry) -> Iterator[AuKPipeline]:
        """The entry's pipeline, counted as in use while the block runs. Edits of the resident model
        run side by side (they share DiT steps); one of another model waits until they are done, so a
        switch never unloads a model under running edits nor holds two models at once."""
        with self._editing:
            self._editing.wait_for(lambda: not any(n for key, n in self._running.items() if key != entry.key))
            pipeline = self.pipeline(entry)
            self._running[entry.key] = self._running.get(entry.key, 0) + 1
        try:
            yield pipeline
        finally:
            with self._editing:
                self._running[entry.key] -= 1
                self._editing.notify_all()

    # ------------------------------------------------------------------ Audex

    def audex(self) -> AudexPipeline:
        """The Audex pipeline: the released weights when found, else Audex-Tiny (assets/Audex-Tiny)."""
        from auk_app.audex.pipeline import AudexPipeline
        from auk_app.audex.remote import RemoteSampler

        with self._lock:
            if self._audex is None:
                if self.audex_demo:
                    from auk_app.demo.audex_snapshot import shared_demo_snapshot

                    demo = shared_demo_snapshot()
                    root, xcodec = demo.thinker_dir, demo.xcodec_dir
                else:
                    root = self._find(resolve.AUDEX, self.config.audex)
                    xcodec = self._find(resolve.XCODEC1, self.config.xcodec)
                server = RemoteSampler(self.config.audex_server) if self.config.audex_server else None
                # Audex has no float32-master recipe: under autocast-bf16 it runs bf16 weights, as released.
                self._audex = AudexPipeline.from_paths(root, xcodec, device=self.device, dtype=self.precision.compute,
                                                       sampler=server, quantization=self.quantization)
            return self._audex

    @property
    def audex_seconds(self) -> float:
        """The default length: the released model's 10 s, or a few seconds of the tiny demo on a CPU."""
        return AUDEX_DEMO_SECONDS if self.audex_demo else TRAINED_SECONDS

    def text_to_audio(self, request: AudexRequest, *, progress: Progress = silent,
                      should_stop: ShouldStop | None = None) -> TextToAudioResult:
        """The masked run and, when asked for, the same seed without the mask (not decoded);
        ``progress(phase, done, total)`` names the run in ``phase``.

        On an Audex server both runs share one deadline, sized from the tokens the request asks for:
        each run with its own would let a request with a comparison hold the one model slot twice as long."""
        pipeline = self.audex()
        sampler = pipeline.sampler
        deadline = sampler.deadline(request.tokens_asked())
        result = pipeline.generate(request.sampling, label=AUDEX_RUN, progress=progress, should_stop=should_stop,
                                   deadline=deadline)
        unmasked = None
        if request.compare_unmasked:
            unmasked = pipeline.generate(request.unmasked(), label=AUDEX_COMPARISON_RUN, decode=False,
                                         progress=progress, should_stop=should_stop, deadline=deadline)
        model = {
            "model": "Audex-Tiny (demo)" if self.audex_demo else "Nemotron-Labs-Audex-2B",
            "demo_model": self.audex_demo, "thinker_dir": pipeline.thinker_dir.name,
            "xcodec_dir": pipeline.xcodec_dir.name, "device": str(pipeline.device),
            "dtype": str(pipeline.dtype).removeprefix("torch."),
            "quantize": self.quantization.mode if sampler.engine == "in-process" else "none",  # a server's own
            "engine": sampler.engine,
            "engine_server": sampler.host,
        }
        return TextToAudioResult(request=request, result=result, unmasked=unmasked, model=model,
                                 warnings=tuple(self.caption_warnings(request.caption)))

    def caption_warnings(self, caption: str) -> list[str]:
        """With Audex-Tiny, one sentence naming the words of ``caption`` it does not know; none with
        the released weights."""
        if not self.audex_demo:
            return []
        from auk_app.demo.audex_vocabulary import caption_warnings  # the release path imports nothing of the demo
        return caption_warnings(caption)

    # ------------------------------------------------------------------ status

    def _audex_server_host(self) -> str | None:
        return server_host(self.config.audex_server) if self.config.audex_server else None

    def info(self) -> dict[str, Any]:
        loaded = next((key for key, p in self._pipelines.items() if p.loaded), None)
        default = self._entries[self._default]
        return {
            "available_models": ["auto", *self._entries],
            "not_downloaded": {key: RELEASED[key][1].download_command for key in self.not_downloaded},
            "default_model": default.key,
            "loaded_model": loaded,
            "device": str(self.device),
            "dtype": self.precision.name,
            "quantize": self.quantization.mode,
            "demo": default.demo,
            "audex_demo": self.audex_demo,
            "audex_server": self._audex_server_host(),
            "auk_server": self.engine.host,
            "models": {
                e.key: {"label": e.label, "variant": e.checkpoint.variant, "folder": e.checkpoint.directory.name,
                        "demo": e.demo, "defaults": asdict(e.checkpoint.defaults),
                        "capabilities": asdict(e.checkpoint.capabilities)}
                for e in self._entries.values()
            },
        }
