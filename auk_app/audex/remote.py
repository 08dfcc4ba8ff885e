"""Sample TTA streams on an Audex vLLM server instead of in this process.

Each run is sent as a CFG pair of OpenAI-compatible completions with token-id prompts: the
conditional prompt and its length-matched null prompt, tied by one ``cfg_pair_id`` in
``vllm_xargs`` (see :mod:`auk_app.audex.xargs`) and one seed; without guidance, only the first. Both are
streamed, each on its own thread, while the caller's thread reports progress and watches
``should_stop``: stopping closes both connections, which makes vLLM abort both requests. The
server's plugin keeps the pair step-locked and token-identical, and this client checks that it did.

Failures become one sentence (:class:`EngineError`): a server that cannot be reached, one that
sends nothing for ``read_timeout`` seconds, one that refuses the request, and one that drops the
connection mid-stream. Per-read timeouts alone let a server that drips (a keep-alive every 30 s
and no tokens, or a model list a byte at a time) hold a run for ever, so the model list has a
deadline of its own, a run gives up after ``no_token_timeout`` seconds without a new token, and
each request has one overall :class:`Deadline`, sized from the tokens it asks for and shared by
all its calls (a comparison run is a second run of the same request, not a second allowance). The
caller's thread does all its waiting where Stop reaches it, holding no lock over the network.
Every line and body is read within a size limit (:mod:`auk_app.bounded_reads`), and a message
quotes at most a sentence's length of what the server said.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import httpx

from auk_app.audex import xargs
from auk_app.audex.params import AudexSampling
from auk_app.audex.token_sampler import Deadline, SampledStream, end_reason, prompt_rows, stopped
from auk_app.audex.vocab import AudexVocab
from auk_app.bounded_reads import IDENTITY, TooLong, iter_lines, read_body, said
from auk_app.errors import AppError
from auk_app.progress import Progress, ShouldStop
from auk_app.urls import http_url, named, server_host

_POLL_SECONDS = 0.05  # how often the caller's thread looks at should_stop and progress
# Tokens per streamed chunk: one event per token makes the API server's output handling and this
# process's parsing the bottleneck at 8 users on 2 cores; 16 tokens is a tenth of a second of audio.
_STREAM_INTERVAL = 16
CALL_DEADLINE_SECONDS = 15.0  # the whole /v1/models exchange, however the bytes arrive
# The most a line of the token stream or the model list may hold. A line is one event: 16 tokens
# take about 400 bytes, and a whole 4,200-token stream that a slow client let pile up, under 100 kB.
LINE_BYTES = 1 << 20
MODEL_LIST_BYTES = 1 << 20
REFUSAL_BYTES = 64 << 10  # a refusal's body: its message is all this app shows of it


class EngineError(AppError):
    """The Audex server could not serve a run; the message says what happened and what to do."""


def check_server_url(url: str) -> str:
    """``url`` ready to call (:func:`auk_app.urls.http_url`), or one sentence. Run by the Studio when
    it is built, so a bad --audex-server is refused at start-up, not inside the first page load."""
    try:
        return http_url(url)
    except ValueError as exc:
        raise EngineError(f"The Audex server URL{named(url)} cannot be used: {exc}; give one like "
                          "http://127.0.0.1:8000.") from None


@dataclass
class _Stream:
    """One streamed completion: its tokens so far, how it ended, and its open response."""

    body: dict[str, Any]
    tokens: list[int] = field(default_factory=list)
    first_token_at: float | None = None  # perf_counter() when the first tokens arrived
    finish_reason: str | None = None
    error: Exception | None = None
    response: httpx.Response | None = None
    last_token_at: float = field(default_factory=perf_counter)  # keep-alives do not move it
    reply: bytes | None = None  # a plain request's whole reply (the model list)


def completion_bodies(sampling: AudexSampling, *, model_id: str, cond_ids: Sequence[int],
                      null_ids: Sequence[int] | None, end_tid: int, pair_id: str) -> list[dict[str, Any]]:
    """The ``/v1/completions`` bodies of one run: the conditional request and, with guidance, its
    null-prompt companion tied to it by ``pair_id``. The one place ``sampling`` becomes HTTP."""
    extra = {xargs.TTA_CODEC_CAP: sampling.codec_cap} if sampling.use_mask else {}
    bodies = [{
        "model": model_id, "prompt": list(prompt), "max_tokens": sampling.token_limit, "stream": True,
        "stream_interval": _STREAM_INTERVAL,
        "temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p, "seed": sampling.seed,
        "stop_token_ids": [end_tid], "ignore_eos": True, "return_token_ids": True,
        "skip_special_tokens": False, "vllm_xargs": dict(extra),
    } for prompt in prompt_rows(cond_ids, null_ids, sampling)]
    if sampling.guided:
        for body, role in zip(bodies, (xargs.COND, xargs.UNCOND), strict=True):
            body["vllm_xargs"].update({xargs.CFG_PAIR_ID: pair_id, xargs.CFG_ROLE: role,
                                       xargs.CFG_SCALE: sampling.cfg_scale})
    # Both members carry the run's seed: from the same blended logits they draw the same tokens; a
    # server that does not blend both rows gives them different logits, and the pair drifts apart.
    return bodies


class RemoteSampler:
    """The :class:`~auk_app.audex.token_sampler.TokenSampler` of a vLLM server running the Audex
    plugin, addressed by its base URL (``http://host:8000``)."""

    engine = "vllm"

    def __init__(self, url: str, *, connect_timeout: float = 5.0, read_timeout: float = 60.0,
                 no_token_timeout: float | None = None, call_deadline: float = CALL_DEADLINE_SECONDS) -> None:
        """``read_timeout`` bounds each read of the socket, ``no_token_timeout`` (default: the same)
        the time between tokens, whatever else arrives; ``call_deadline`` the model list's whole exchange."""
        self.url = check_server_url(url)
        self.host = server_host(url)
        self._timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        self.no_token_timeout = read_timeout if no_token_timeout is None else no_token_timeout
        self.call_deadline = call_deadline
        self._model: dict[str, Any] | None = None
        self._lock = threading.Lock()  # guards _model only; never held while the network is waited on

    def load(self) -> None:
        """Nothing to load here: the model card is read with the first request, within its deadline."""

    def deadline(self, tokens: int) -> Deadline:
        """The deadline of a request that may generate ``tokens`` over all its runs, starting now."""
        return Deadline.for_tokens(tokens)

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=self._timeout, headers=IDENTITY)

    def model(self, should_stop: ShouldStop | None = None, deadline: Deadline | None = None) -> dict[str, Any]:
        """The served model's card from ``/v1/models`` (``id``, ``max_model_len``), read once,
        within ``call_deadline`` seconds (and the request's ``deadline``) however the server drips
        it; Stop ends the wait."""
        if self._model is None:
            fetched = _Stream({})
            with self._client() as client:
                request = client.build_request("GET", "/v1/models")
                thread = threading.Thread(target=self._fetch, args=(client, request, fetched), daemon=True)
                thread.start()
                self._wait([thread], [fetched], should_stop, started=perf_counter(), call_limit=self.call_deadline,
                           deadline=deadline, what="the model list (/v1/models)")
            if fetched.error is not None:
                raise fetched.error
            try:
                card = json.loads(fetched.reply)["data"][0]
                card = {"id": str(card["id"]), "max_model_len": int(card["max_model_len"])}
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise self._unreadable(0, fetched.reply) from exc
            with self._lock:
                self._model = self._model or card
        return self._model

    def max_positions(self, *, should_stop: ShouldStop | None, deadline: Deadline | None) -> int:
        return self.model(should_stop, deadline)["max_model_len"]

    def sample(self, cond_ids: Sequence[int], null_ids: Sequence[int] | None, vocab: AudexVocab,
               sampling: AudexSampling, *, label: str, progress: Progress, should_stop: ShouldStop | None,
               deadline: Deadline | None) -> SampledStream:
        """What :class:`~auk_app.audex.sampler.LocalSampler` returns, sampled on the server before
        ``deadline`` (the request's; without one, a deadline sized for this run alone)."""
        total = sampling.token_limit
        deadline = deadline or Deadline.for_tokens(total)
        model_id = self.model(should_stop, deadline)["id"]
        bodies = completion_bodies(sampling, model_id=model_id, cond_ids=cond_ids, null_ids=null_ids,
                                   end_tid=vocab.end_tid, pair_id=uuid.uuid4().hex)
        streams = [_Stream(body) for body in bodies]
        started = perf_counter()
        with self._client() as client:
            threads = [threading.Thread(target=self._run, args=(client, s), daemon=True) for s in streams]
            for thread in threads:
                thread.start()
            self._wait(threads, streams, should_stop, started=started, deadline=deadline,
                       what="the run", progress=progress, label=label, total=total)
        for stream in streams:
            if stream.error is not None:
                raise stream.error
        cond = streams[0]
        if len(streams) == 2 and streams[1].tokens != cond.tokens:
            raise EngineError(
                f"The Audex server at {self.host} let a CFG pair drift apart (the conditional and unconditional "
                "streams differ), so the result was discarded. Serve with the Audex plugin's scheduler and logits "
                "processors (docs/vllm.md has the `vllm serve` line) and try again."
            )
        tokens = list(cond.tokens)
        reason = end_reason(tokens, vocab, sampling) if tokens else None
        if reason is None:
            raise EngineError(f"The Audex server at {self.host} ended the run after {len(tokens)} of at most {total} "
                              f"tokens ({cond.finish_reason}), so no audio was made. Try again.")
        first = cond.first_token_at or started
        return SampledStream(
            token_ids=tuple(tokens),
            end_reason=reason,
            prefill_seconds=first - started,  # the first chunk's wait: queueing, the prompt, its first tokens
            sampling_seconds=perf_counter() - first,
        )

    def _wait(self, threads: list[threading.Thread], streams: list[_Stream], should_stop: ShouldStop | None, *,
              started: float, deadline: Deadline | None, what: str, call_limit: float | None = None,
              progress: Progress | None = None, label: str = "", total: int = 0) -> None:
        """Wait in the caller's thread for ``threads`` (one per stream), reporting progress, until they end,
        one fails, Stop is pressed (Cancelled), ``call_limit`` seconds pass, the request's ``deadline`` comes
        or no token came for ``no_token_timeout`` (EngineError); then hang up every connection, which ends
        the threads and vLLM's requests."""
        reported = 0
        try:
            while alive := [t for t in threads if t.is_alive()]:
                self._check_stop(should_stop, streams[0], total)
                if any(s.error is not None for s in streams):
                    break
                reported = self._report(progress, label, streams[0].tokens, reported, total)
                self._check_clock(streams, started, call_limit, deadline, what)
                alive[0].join(_POLL_SECONDS)
            self._check_stop(should_stop, streams[0], total)  # a Stop pressed as the streams ended still stops
        finally:
            for stream in streams:  # closing the connection makes vLLM abort the request
                if stream.response is not None:
                    hang_up(stream.response)
        self._report(progress, label, streams[0].tokens, reported, total)

    @staticmethod
    def _check_stop(should_stop: ShouldStop | None, stream: _Stream, total: int) -> None:
        if should_stop is not None and should_stop():
            raise stopped(len(stream.tokens), total)

    def _check_clock(self, streams: list[_Stream], started: float, call_limit: float | None,
                     deadline: Deadline | None, what: str) -> None:
        """The call's own limit, the request's deadline and, for a run, the time since the last token
        (keep-alives do not count); the sentence names the one that was hit."""
        now, done = perf_counter(), len(streams[0].tokens)
        run = call_limit is None  # only the model-list fetch has a limit of its own; a run has tokens
        came = f" ({done} tokens came)" if run else ""
        if call_limit is not None and now - started > call_limit:
            raise EngineError(f"The Audex server at {self.host} did not complete {what} within {call_limit:g} s"
                              f"{came}, so the run was given up; the server is overloaded or stuck.")
        if deadline is not None and now > deadline.ends_at:
            raise EngineError(f"The Audex server at {self.host} did not complete the request within its "
                              f"{deadline.seconds:g} s deadline ({deadline.basis}; hit during {what}{came}), so "
                              "the run was given up; the server is overloaded or stuck.")
        if run and now - min(s.last_token_at for s in streams) > self.no_token_timeout:
            raise EngineError(f"The Audex server at {self.host} sent no tokens for {self.no_token_timeout:g} s after "
                              f"{done} tokens, so the run was given up; the server is overloaded or stuck.")

    def _fetch(self, client: httpx.Client, request: httpx.Request, into: _Stream) -> None:
        """One plain request's whole reply into ``into.reply``; a failure is kept, as a stream's is."""
        try:
            into.response = self._call(lambda: client.send(request, stream=True), done=0)
            self._check(into.response)
            into.reply = read_body(into.response, MODEL_LIST_BYTES)
        except TooLong as exc:
            into.error = self._too_long("a model list (/v1/models)", exc, 0)
        except EngineError as exc:
            into.error = exc
        except (httpx.HTTPError, OSError) as exc:
            into.error = self._sentence(exc, 0)

    def _run(self, client: httpx.Client, stream: _Stream) -> None:
        """Read one streamed completion into ``stream``; any failure is kept as a sentence."""
        try:
            request = client.build_request("POST", "/v1/completions", json=stream.body)
            stream.response = self._call(lambda: client.send(request, stream=True), done=0)
            self._check(stream.response)
            for line in iter_lines(stream.response, LINE_BYTES):
                if line.startswith("data: ") and line != "data: [DONE]":
                    self._read_event(line, stream)
            if stream.finish_reason is None:
                raise EngineError(self._dropped(len(stream.tokens)))
        except TooLong as exc:
            stream.error = self._too_long("a line", exc, len(stream.tokens))
        except EngineError as exc:
            stream.error = exc
        except (httpx.HTTPError, OSError) as exc:  # also what closing it on a stop raises
            stream.error = self._sentence(exc, len(stream.tokens))

    def _read_event(self, line: str, stream: _Stream) -> None:
        """One ``data:`` line into ``stream``. Any shape but vLLM's (``choices: []``, a string
        ``error``, a JSON list) becomes a sentence naming what came: raised in the reader thread as
        anything else, it would leave the run without an error and the user with "ended the run … (None)"."""
        done = len(stream.tokens)
        try:
            event = json.loads(line[len("data: "):])
        except ValueError as exc:
            raise self._unreadable(done, line) from exc
        if isinstance(event, dict) and event.get("error") is not None:  # how vLLM fails an open stream
            error = event["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise EngineError(f"The Audex server at {self.host} failed the run after {done} tokens: {said(message)}.")
        choices = event.get("choices") if isinstance(event, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        ids = (choice.get("token_ids") or []) if isinstance(choice, dict) else None
        if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            raise self._unreadable(done, line)
        if ids:
            stream.last_token_at = perf_counter()
            stream.first_token_at = stream.first_token_at or stream.last_token_at
        stream.tokens.extend(ids)
        stream.finish_reason = choice.get("finish_reason") or stream.finish_reason

    def _too_long(self, what: str, exc: TooLong, done: int) -> EngineError:
        return EngineError(f"The Audex server at {self.host} sent {what} of {exc} after {done} tokens, so the run "
                           "was given up; point --audex-server at a vLLM server running the Audex plugin.")

    def _unreadable(self, done: int, sent: str | bytes | None) -> EngineError:
        """The sentence for a reply of a shape this app cannot read, quoting its start."""
        shown = sent.decode("utf-8", "replace") if isinstance(sent, bytes) else str(sent)
        shown = shown if len(shown) <= 120 else f"{shown[:120]}…"
        return EngineError(f"The Audex server at {self.host} sent a reply this app cannot read after {done} tokens "
                           f"({shown!r}); point --audex-server at a vLLM server running the Audex plugin.")

    def _call(self, call: Any, *, done: int) -> Any:
        try:
            return call()
        except httpx.HTTPError as exc:
            raise self._sentence(exc, done) from exc

    def _sentence(self, exc: Exception, done: int) -> EngineError:
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return EngineError(f"The Audex server at {self.host} cannot be reached; start it (docs/vllm.md has the "
                               "`vllm serve` line) or point --audex-server at a running one.")
        if isinstance(exc, httpx.ReadTimeout):
            return EngineError(f"The Audex server at {self.host} sent nothing for {self._timeout.read:g} s after "
                               f"{done} tokens, so the run was given up; the server is overloaded or stuck.")
        return EngineError(self._dropped(done))

    def _dropped(self, done: int) -> str:
        return (f"The Audex server at {self.host} closed the connection after {done} tokens, so no audio was made; "
                "it may have stopped. Check the server and try again.")

    def _check(self, response: httpx.Response) -> None:
        """Nothing for HTTP 200; else the refusal, with the server's message when its body has one
        (``{"error": {"message": …}}``, ``{"error": "…"}``), else its text (a list, HTML); of a
        body over REFUSAL_BYTES, only its size."""
        if response.status_code == 200:
            return
        try:
            text = read_body(response, REFUSAL_BYTES).decode("utf-8", "replace")
        except TooLong as exc:
            text = f"a body of {exc}"
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        raise EngineError(f"The Audex server at {self.host} refused the request (HTTP {response.status_code}: "
                          f"{said(message or text)}).")

    @staticmethod
    def _report(progress: Progress | None, label: str, tokens: list[int], reported: int, total: int) -> int:
        if progress is not None:
            for done in range(reported + 1, len(tokens) + 1):
                progress(label, done, total)
        return len(tokens)


def hang_up(response: httpx.Response) -> None:
    """Shut the connection's socket down, then close the response. A plain close, while the reader
    thread waits in ``recv`` on that socket, sends no FIN until that call returns, and a busy server
    goes on generating for up to 20 s before it notices the client has gone."""
    network_stream = response.extensions.get("network_stream")
    sock = network_stream.get_extra_info("socket") if network_stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed by the server or by the reader thread
            pass
    response.close()
