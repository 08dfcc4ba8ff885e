"""AudexPipeline: caption -> guided, phase-masked token stream -> XCodec1 -> 16 kHz mono audio.

``generate`` runs the numbered steps of spec §1: check the request, build the conditional prompt
and its length-matched null prompt, sample the stream (:mod:`auk_app.audex.sampler`), report its
validity, keep whole frames and decode them. Models load lazily, each once, behind its own lock,
and are then shared read-only: all per-request state (KV cache, generator, mask) lives in the
call, so concurrent requests do not interfere.

Device policy, decided once in :meth:`AudexPipeline.from_paths`: CUDA when available; the thinker
in bf16 on CUDA (as vLLM's stage 0) and float32 on CPU, with sampler logits always cast to
float32; XCodec1 always float32.

With an ``engine`` (:class:`auk_app.audex.remote.RemoteEngine`), step 3 runs on that vLLM server
instead: only the tokenizer and XCodec1 are loaded here, never the LM.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np
import torch

from auk_app.audex.params import MAX_NEW_TOKENS, TTASampling
from auk_app.audex.prompt import build_tta_cond_prompt, build_tta_null_prompt
from auk_app.audex.report import build_report
from auk_app.audex.rvq import stream_to_frames
from auk_app.audex.sampler import Progress, SampledStream, ShouldStop, sample_stream, token_limit
from auk_app.audex.thinker import AudexThinker, load_thinker, load_tokenizer
from auk_app.audex.vocab import AudexVocab
from auk_app.audex.xcodec import SAMPLE_RATE, decode_frames, load_xcodec
from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.runtime import pick_device, pick_precision
from auk_app.validate import check_caption, plain_text


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

    def __init__(self, thinker_dir: Path, xcodec_dir: Path, *, device: torch.device, dtype: torch.dtype,
                 engine: Any = None) -> None:
        self.thinker_dir = thinker_dir
        self.xcodec_dir = xcodec_dir
        self.device = device
        self.dtype = dtype
        self.sample_rate = SAMPLE_RATE
        self.engine = engine
        self._thinker: AudexThinker | None = None
        self._text: tuple[Any, AudexVocab] | None = None
        self._codec: Any = None
        self._thinker_lock = threading.Lock()
        self._codec_lock = threading.Lock()

    @classmethod
    def from_paths(
        cls,
        thinker_dir: str | Path,
        xcodec_dir: str | Path,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        engine: Any = None,
    ) -> AudexPipeline:
        """A pipeline over ``thinker_dir`` (Audex snapshot root or its checkpoint_folder_audiogen)
        and ``xcodec_dir`` (an XCodec1 snapshot), sampling on ``engine`` when given. Cheap: no
        file is read until first use."""
        device = pick_device(device)
        return cls(Path(thinker_dir), Path(xcodec_dir), device=device, dtype=pick_precision(device, dtype).weights,
                   engine=engine)

    @property
    def thinker(self) -> AudexThinker:
        """The loaded thinker (LM, tokenizer, token layout); loads on first access."""
        with self._thinker_lock:
            if self._thinker is None:
                self._thinker = load_thinker(self.thinker_dir, device=self.device, dtype=self.dtype)
            return self._thinker

    @property
    def codec(self) -> Any:
        """The loaded XcodecModel (float32); loads on first access."""
        with self._codec_lock:
            if self._codec is None:
                self._codec = load_xcodec(self.xcodec_dir, device=self.device)
            return self._codec

    @property
    def text(self) -> tuple[Any, AudexVocab]:
        """The tokenizer and TTA layout: the thinker's, or with an engine, the tokenizer alone."""
        if self.engine is None:
            return self.thinker.tokenizer, self.thinker.vocab
        with self._thinker_lock:
            if self._text is None:
                self._text = load_tokenizer(self.thinker_dir)
            return self._text

    def load(self) -> AudexPipeline:
        """Load the models now (e.g. at app start) instead of on the first request."""
        _ = self.text, self.codec
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

    def _sample(self, caption: str, params: TTASampling, *, progress: Progress | None,
                should_stop: ShouldStop | None, deadline: Any) -> SampledStream:
        """Steps 2 and 3 of :meth:`generate`: the prompts (for CFG also the null prompt of the same
        token length), the check that they fit the model's positions, and the sampled stream."""
        vocab = self.text[1]
        cond_ids, null_ids = self.prompt_ids(caption, guided=params.guided)
        if self.engine is None:
            max_positions = self.thinker.model.config.max_position_embeddings
        else:
            max_positions = self.engine.max_model_len(should_stop, deadline)
        if len(cond_ids) + token_limit(params) > max_positions:
            raise InputError(
                f"The caption makes a {len(cond_ids)}-token prompt; with up to {token_limit(params)} generated "
                f"tokens that exceeds the model's {max_positions} positions. Shorten the caption or generate fewer seconds."
            )
        if self.engine is None:
            return sample_stream(
                self.thinker.model, cond_ids, null_ids, vocab, params, progress=progress, should_stop=should_stop
            )
        return self.engine.sample_stream(cond_ids, null_ids, vocab, params, progress=progress,
                                         should_stop=should_stop, deadline=deadline)

    def generate(
        self,
        caption: str,
        *,
        cfg_scale: float = 3.0,
        codec_cap: int = 4000,
        max_tokens: int | None = None,
        temperature: float = 1.0,
        top_k: int = 80,
        top_p: float = 1.0,
        seed: int = 0,
        use_mask: bool = True,
        decode: bool = True,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
        deadline: Any = None,
    ) -> AudexResult:
        """Generate one clip for ``caption``.

        Raises InputError for bad values (before any model work), CheckpointError when weights
        cannot be loaded, Cancelled when ``should_stop()`` turns True between tokens.
        ``progress(done, total)`` is called after every generated token. ``deadline`` (a
        :class:`auk_app.audex.remote.Deadline`) bounds the engine's calls, shared with the request's
        other runs; the in-process sampler has no server to wait for and ignores it.
        """
        # 1. Check the request.
        caption = check_caption(caption, Limits())
        params = TTASampling(
            cfg_scale=cfg_scale,
            codec_cap=codec_cap,
            max_tokens=MAX_NEW_TOKENS if max_tokens is None else max_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            use_mask=use_mask,
        )
        # 2. Prompts and 3. the sampled stream.
        stream = self._sample(caption, params, progress=progress, should_stop=should_stop, deadline=deadline)
        # 4. Report, then keep whole frames and decode.
        return self._result(stream, self.text[1], params, decode=decode)

    def _result(self, stream: SampledStream, vocab: AudexVocab, params: TTASampling, *, decode: bool) -> AudexResult:
        """Step 4 of :meth:`generate`: the validity report, then whole frames decoded (when asked)."""
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
            seed=params.seed,
            timings={"prefill": stream.prefill_seconds, "sampling": stream.sampling_seconds, "decode": decode_seconds},
            tokens_per_second=len(stream.token_ids) / lm_seconds if lm_seconds > 0 else 0.0,
        )
