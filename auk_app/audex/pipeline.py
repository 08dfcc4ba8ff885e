"""AudexPipeline: caption -> guided, phase-masked token stream -> XCodec1 -> 16 kHz mono audio.

``generate`` runs these steps on a request's checked
:class:`~auk_app.audex.params.AudexSampling`: build the conditional prompt and its length-matched
null prompt, sample the stream on the pipeline's :class:`~auk_app.audex.token_sampler.TokenSampler`
(the LM in this process, or an Audex vLLM server), report its validity, keep whole frames and
decode them. The tokenizer and XCodec1 load lazily, each once, behind its own lock, and are then
shared read-only: all per-request state lives in the call, so concurrent requests do not interfere.

Device policy, decided once in :meth:`AudexPipeline.from_paths`: CUDA when available; the thinker
in bf16 on CUDA (as vLLM's stage 0) and float32 on CPU, with sampler logits always cast to
float32; XCodec1 always float32.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np
import torch

from auk_app.audex.params import AudexSampling
from auk_app.audex.prompt import build_tta_cond_prompt, build_tta_null_prompt
from auk_app.audex.report import build_report
from auk_app.audex.rvq import stream_to_frames
from auk_app.audex.sampler import LocalSampler
from auk_app.audex.thinker import TokenizerOnce
from auk_app.audex.token_sampler import Deadline, SampledStream, TokenSampler
from auk_app.audex.vocab import AudexVocab
from auk_app.audex.xcodec import SAMPLE_RATE, decode_frames, load_xcodec
from auk_app.errors import InputError
from auk_app.progress import Progress, ShouldStop, silent
from auk_app.quantize import NONE, Quantization
from auk_app.runtime import pick_device, pick_precision
from auk_app.validate import plain_text


@dataclass(frozen=True)
class AudexResult:
    """One generated clip.

    ``waveform``: mono float32 at ``sample_rate`` (16 000 Hz), ``decoded_frames · 320`` samples;
    empty when the stream is not decodable (``report["decodable"]`` False, only possible with
    the mask off); None when ``decode=False``. ``token_ids``: generated ids (prompt excluded,
    ``<audiogen_end>`` included when sampled); ``codec_ids``: their codec ids (0..8191) in order.
    ``timings``: seconds of ``prefill``, ``sampling`` and ``decode``. ``tokens_per_second``:
    generated tokens over prefill + sampling time.
    """

    waveform: np.ndarray | None
    sample_rate: int
    token_ids: tuple[int, ...]
    codec_ids: tuple[int, ...]
    report: dict[str, Any]
    end_reason: str
    seed: int
    timings: dict[str, float]
    tokens_per_second: float


class AudexPipeline:
    """Audex text-to-audio over local checkpoint folders; nothing is downloaded."""

    def __init__(self, thinker_dir: Path, xcodec_dir: Path, *, sampler: TokenSampler, device: torch.device,
                 dtype: torch.dtype, text: TokenizerOnce | None = None) -> None:
        self.thinker_dir = thinker_dir
        self.xcodec_dir = xcodec_dir
        self.sampler = sampler
        self.device = device
        self.dtype = dtype
        self.sample_rate = SAMPLE_RATE
        self._text = text or TokenizerOnce(thinker_dir)
        self._codec: Any = None
        self._codec_lock = threading.Lock()

    @classmethod
    def from_paths(
        cls,
        thinker_dir: str | Path,
        xcodec_dir: str | Path,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        sampler: TokenSampler | None = None,
        quantization: Quantization = NONE,
    ) -> AudexPipeline:
        """A pipeline over ``thinker_dir`` (Audex snapshot root or its checkpoint_folder_audiogen)
        and ``xcodec_dir`` (an XCodec1 snapshot), sampling on ``sampler`` (e.g. a
        :class:`~auk_app.audex.remote.RemoteSampler`), by default the thinker in this process, its
        decoder layers' linears quantized by ``quantization`` (:mod:`auk_app.quantize`).
        Cheap: no file is read until first use."""
        device = pick_device(device)
        dtype = pick_precision(device, dtype).weights
        text = TokenizerOnce(Path(thinker_dir))  # shared with the in-process sampler: read once
        sampler = sampler or LocalSampler(Path(thinker_dir), device=device, dtype=dtype, text=text,
                                          quantization=quantization)
        return cls(Path(thinker_dir), Path(xcodec_dir), sampler=sampler, device=device, dtype=dtype, text=text)

    @property
    def codec(self) -> Any:
        """The loaded XcodecModel (float32); loads on first access."""
        with self._codec_lock:
            if self._codec is None:
                self._codec = load_xcodec(self.xcodec_dir, device=self.device)
            return self._codec

    @property
    def text(self) -> tuple[Any, AudexVocab]:
        """The tokenizer and TTA layout; loads on first access."""
        return self._text()

    def load(self) -> AudexPipeline:
        """Load the models now (e.g. at app start) instead of on the first request."""
        _ = self.text, self.codec
        self.sampler.load()
        return self

    def prompt_ids(self, caption: str, *, guided: bool) -> tuple[list[int], list[int] | None]:
        """Token ids of the conditional prompt and, with guidance, its length-matched null twin.

        Special tokens typed into the caption are removed first: they would rewrite the prompt.
        """
        tokenizer = self.text[0]
        plain = plain_text(caption, tokenizer, "caption", "the sound").strip()
        cond_prompt = build_tta_cond_prompt(plain)
        if not guided:
            return tokenizer.encode(cond_prompt), None
        try:
            null_prompt = build_tta_null_prompt(tokenizer, cond_prompt)
        except ValueError as exc:
            raise InputError(
                f"This caption cannot be paired with an unconditional prompt of equal length ({exc}). "
                "Rephrase the caption, or set cfg_scale to 1.0 to run without guidance."
            ) from exc
        return tokenizer.encode(cond_prompt), tokenizer.encode(null_prompt)

    def generate(
        self,
        sampling: AudexSampling,
        *,
        label: str = "Sampling",
        decode: bool = True,
        progress: Progress = silent,
        should_stop: ShouldStop | None = None,
        deadline: Deadline | None = None,
    ) -> AudexResult:
        """Generate one clip for ``sampling`` (checked when it was built).

        Raises InputError for a caption the tokenizer or the model's positions refuse (before any
        sampling), CheckpointError when weights cannot be loaded, Cancelled when ``should_stop()``
        turns True between tokens. ``progress(label, done, total)`` is called after every
        generated token. ``deadline`` (from ``self.sampler.deadline``) bounds a server's calls,
        shared with the request's other runs.
        """
        # 1. The prompts, and the check that they fit the model's positions; 2. the sampled stream.
        vocab = self.text[1]
        cond_ids, null_ids = self.prompt_ids(sampling.caption, guided=sampling.guided)
        max_positions = self.sampler.max_positions(should_stop=should_stop, deadline=deadline)
        if len(cond_ids) + sampling.token_limit > max_positions:
            raise InputError(
                f"The caption makes a {len(cond_ids)}-token prompt; with up to {sampling.token_limit} generated "
                f"tokens that exceeds the model's {max_positions} positions. Shorten the caption or generate fewer seconds."
            )
        stream = self.sampler.sample(cond_ids, null_ids, vocab, sampling, label=label, progress=progress,
                                     should_stop=should_stop, deadline=deadline)
        # 3. Report, then keep whole frames and decode.
        return self._result(stream, vocab, sampling, decode=decode)

    def _result(self, stream: SampledStream, vocab: AudexVocab, sampling: AudexSampling, *,
                decode: bool) -> AudexResult:
        """Step 3 of :meth:`generate`: the validity report, then whole frames decoded (when asked)."""
        codec_ids = vocab.codec_ids(stream.token_ids)
        report = build_report(stream.token_ids, stream.end_reason, vocab)
        waveform = None
        decode_seconds = 0.0
        if decode:
            started = perf_counter()
            if report["decodable"]:
                frames, _ = stream_to_frames(codec_ids)
                waveform = decode_frames(self.codec, frames)
            else:
                waveform = np.zeros(0, dtype=np.float32)
            decode_seconds = perf_counter() - started
        lm_seconds = stream.prefill_seconds + stream.sampling_seconds
        return AudexResult(
            waveform=waveform,
            sample_rate=self.sample_rate,
            token_ids=stream.token_ids,
            codec_ids=tuple(codec_ids),
            report=report,
            end_reason=stream.end_reason,
            seed=sampling.seed,
            timings={"prefill": stream.prefill_seconds, "sampling": stream.sampling_seconds, "decode": decode_seconds},
            tokens_per_second=len(stream.token_ids) / lm_seconds if lm_seconds > 0 else 0.0,
        )
