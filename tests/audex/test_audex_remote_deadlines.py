"""An Audex server that drips or answers garbage: every call to it ends within its deadline, in one
sentence naming the limit, and Stop reaches the caller wherever it waits. A few lines of socket code
on 127.0.0.1 play the server; deadlines are set short so each case takes about a second, and the
time bounds allow 5 s past each deadline for a loaded two-core CI."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from auk_app.audex.remote import EngineError, RemoteSampler
from auk_app.audex.token_sampler import Deadline
from auk_app.errors import Cancelled
from auk_app.progress import silent
from tests.audex.runs import sampling

CARD = json.dumps({"data": [{"id": "audex", "max_model_len": 8192}]}).encode()
DRIP_FOR_SECONDS = 8.0  # the fake server stops dripping then, so a broken client fails instead of hanging
SLACK = 5.0  # seconds past a deadline a call may take on a loaded CI


def _models_ok(conn) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(CARD) + CARD)


def _drip(conn, head: bytes, piece: bytes, every: float) -> None:
    conn.sendall(head)
    end = time.monotonic() + DRIP_FOR_SECONDS
    while time.monotonic() < end:
        conn.sendall(piece)
        time.sleep(every)


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


ANSWERS = {  # (path, behaviour) → what the fake server does with the connection
    "drip_models": lambda conn: _drip(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", b"{", 0.2),
    "garbage_models": lambda conn: conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n<html>hi!"),
    "keepalive_run": lambda conn: _drip(conn, SSE_HEAD, _chunk(b": keep-alive\n\n"), 0.2),
    "endless_run": lambda conn: _drip(
        conn, SSE_HEAD, _chunk(b'data: {"choices": [{"token_ids": [7], "finish_reason": null}]}\n\n'), 0.1),
    "second_long_run": lambda conn: _second_long_run(conn),
}


def _second_long_run(conn) -> None:
    """Ten chunks 0.1 s apart, then the end token: a run of about a second."""
    conn.sendall(SSE_HEAD)
    for _ in range(10):
        conn.sendall(_chunk(b'data: {"choices": [{"token_ids": [7], "finish_reason": null}]}\n\n'))
        time.sleep(0.1)
    conn.sendall(_chunk(b'data: {"choices": [{"token_ids": [2], "finish_reason": "stop"}]}\n\n') + _chunk(b""))


@pytest.fixture
def server():
    """``server(models, completions)``: the URL of a fake server answering /v1/models and
    /v1/completions with the named behaviours (``"ok"``: a proper model card)."""
    sockets = []
    models_asked = threading.Event()

    def start(models: str, completions: str = "keepalive_run") -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        sockets.append(listener)

        def serve(conn):
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                if request.startswith(b"GET /v1/models"):
                    models_asked.set()
                answer = models if request.startswith(b"GET /v1/models") else completions
                try:
                    _models_ok(conn) if answer == "ok" else ANSWERS[answer](conn)
                except OSError:  # the client hung up: what a deadline should make it do
                    pass

        def accept():
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    start.models_asked = models_asked
    yield start
    for listener in sockets:
        listener.close()


VOCAB = SimpleNamespace(end_tid=2)  # all the request body needs of the vocabulary


def _sample(engine, run=None, *, should_stop=None, deadline=None):
    """An unguided run of the prompt [1, 2, 3] on ``engine``."""
    return engine.sample([1, 2, 3], None, VOCAB, run or sampling(cfg_scale=1.0), label="Sampling", progress=silent,
                         should_stop=should_stop, deadline=deadline)


def _positions(engine, should_stop=None, deadline=None):
    return engine.max_positions(should_stop=should_stop, deadline=deadline)


def _timed(call):
    started = time.monotonic()
    with pytest.raises((EngineError, Cancelled)) as failed:
        call()
    return str(failed.value), time.monotonic() - started


def test_a_model_list_that_drips_meets_the_call_deadline(server):
    engine = RemoteSampler(server("drip_models"), read_timeout=5.0, call_deadline=1.0)
    message, took = _timed(lambda: _positions(engine))
    assert "did not complete the model list (/v1/models) within 1 s" in message and took < 1.0 + SLACK


def test_a_call_stuck_on_the_model_list_does_not_hold_up_the_next(server):
    """No thread holds the engine's lock over the network, where an abandoned one would hang the next
    request: while one call waits on a dripping model list, another on the same engine meets its own
    deadline."""
    url = server("drip_models")
    engine, stop_first = RemoteSampler(url, read_timeout=5.0, call_deadline=60.0), threading.Event()
    first = threading.Thread(target=lambda: _timed(lambda: _positions(engine, stop_first.is_set)), daemon=True)
    first.start()
    try:
        assert server.models_asked.wait(10)
        message, took = _timed(lambda: _positions(engine, deadline=Deadline.after(1.0, "set by the test")))
        assert "did not complete the request within its 1 s deadline (set by the test; hit during the model list" \
            in message and took < 1.0 + SLACK
        assert first.is_alive()  # the first is still waiting: the second did not wait for it
    finally:
        stop_first.set()
        first.join(10)


def test_stop_reaches_a_run_waiting_for_a_dripping_model_list(server):
    engine = RemoteSampler(server("drip_models"), read_timeout=5.0, call_deadline=30.0)
    stop_at = time.monotonic() + 0.5
    message, took = _timed(lambda: _positions(engine, lambda: time.monotonic() > stop_at))
    assert "Generation was stopped before it started" in message and took < 0.5 + SLACK


def test_a_model_list_that_is_not_json_gets_our_sentence(server):
    engine = RemoteSampler(server("garbage_models"), read_timeout=5.0, call_deadline=5.0)
    message, _ = _timed(lambda: _positions(engine))
    assert "sent a reply this app cannot read" in message and "JSONDecodeError" not in message


def test_keep_alives_without_tokens_end_the_run_after_the_no_token_timeout(server):
    """Keep-alives every 0.2 s satisfy the 5 s per-read timeout; the no-token timer (1 s) ends the run."""
    engine = RemoteSampler(server("ok", "keepalive_run"), read_timeout=5.0, no_token_timeout=1.0)
    message, took = _timed(lambda: _sample(engine))
    assert "sent no tokens for 1 s after 0 tokens" in message and took < 1.0 + SLACK


def test_a_run_that_never_ends_meets_the_request_deadline(server):
    engine = RemoteSampler(server("ok", "endless_run"), read_timeout=5.0)
    message, took = _timed(lambda: _sample(engine, deadline=Deadline.after(1.0, "set by the test")))
    assert "did not complete the request within its 1 s deadline (set by the test; hit during the run (" in message
    assert "tokens came)" in message and took < 1.0 + SLACK


def test_a_request_with_a_comparison_run_shares_one_deadline(server, monkeypatch):
    """compare_unmasked makes two runs; each with its own deadline would let a request hold the model slot
    twice as long. Here each run (about 1 s) fits the 1.6 s deadline, both together do not."""
    from auk_app.knobs import audex_request
    from auk_app.service import Studio, StudioConfig
    from tests.conftest import REPO

    url = server("ok", "second_long_run")
    studio = Studio(StudioConfig(demo_dir=REPO / "assets" / "AuK-Tiny", device="cpu", audex_server=url))
    engine, runs, asked = RemoteSampler(url, read_timeout=5.0), [], []
    monkeypatch.setattr(engine, "deadline", lambda tokens: asked.append(tokens) or Deadline.after(1.6, "test"))

    class Pipeline:  # the sampler's part of AudexPipeline.generate, without a tokenizer or a codec
        sampler = engine
        thinker_dir = xcodec_dir = REPO
        device, dtype = "cpu", "float32"

        def generate(self, run, *, label, progress, should_stop, deadline, decode=True):
            runs.append("masked" if run.use_mask else "unmasked")
            return _sample(engine, replace(run, cfg_scale=1.0), should_stop=should_stop, deadline=deadline)

    pipeline = Pipeline()
    monkeypatch.setattr(studio, "audex", lambda: pipeline)
    request = audex_request(dict(caption="rain", max_seconds=1.0, compare_unmasked=True), studio.config.limits)
    message, took = _timed(lambda: studio.text_to_audio(request))
    assert asked == [200 + 1 + 200]  # both runs' tokens: the masked one's cap and end token, the comparison's cap
    assert runs == ["masked", "unmasked"] and "within its 1.6 s deadline (test; hit during the run (" in message
    assert took < 1.6 + SLACK


def _stream_of(line: bytes):
    return lambda conn: conn.sendall(SSE_HEAD + _chunk(line) + _chunk(b""))


def _refusal(body: bytes):
    return lambda conn: conn.sendall(
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


ANSWERS.update({
    "empty_choices": _stream_of(b'data: {"choices": []}\n\n'),
    "string_error": _stream_of(b'data: {"error": "the model crashed"}\n\n'),
    "list_event": _stream_of(b"data: [1, 2]\n\n"),
    "list_refusal": _refusal(b'["bad", "request"]'),
    "string_refusal": _refusal(b'{"error": "no such model"}'),
})


@pytest.mark.parametrize("answer, words", [
    ("empty_choices", "sent a reply this app cannot read after 0 tokens ('data: {\"choices\": []}')"),
    ("string_error", "failed the run after 0 tokens: the model crashed."),
    ("list_event", "sent a reply this app cannot read after 0 tokens ('data: [1, 2]')"),
    ("list_refusal", 'refused the request (HTTP 400: ["bad", "request"])'),
    ("string_refusal", "refused the request (HTTP 400: no such model)"),
])
def test_unexpected_replies_get_our_sentence_naming_what_came(server, answer, words):
    """Each of these, read as vLLM's shape, would raise IndexError, AttributeError or TypeError in the
    reader thread and leave the user with "ended the run after 0 of at most … tokens (None)"."""
    engine = RemoteSampler(server("ok", answer), read_timeout=5.0)
    message, _ = _timed(lambda: _sample(engine))
    assert words in message, message


FLOOD_BYTES = 64 << 20  # all a flooding fake sends: a client without limits fails the test, not the machine
FLOOD_PIECE = b"7" * (64 << 10)
flooded: dict[str, int] = {}  # behaviour → the bytes the fake sent before the client hung up


def _flood(name: str, head: bytes, frame=lambda piece: piece):
    """Send ``head``, then pieces without a line end until the client hangs up or FLOOD_BYTES went."""
    def answer(conn):
        sent = 0
        try:
            conn.sendall(head)
            while sent < FLOOD_BYTES:
                conn.sendall(frame(FLOOD_PIECE))
                sent += len(FLOOD_PIECE)
        finally:
            flooded[name] = sent
    return answer


ANSWERS.update({
    "endless_line": _flood("endless_line", SSE_HEAD + _chunk(b'data: {"choices": [{"token_ids": [7'), _chunk),
    "endless_models": _flood("endless_models", b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n"),
    "endless_refusal": _flood("endless_refusal", b"HTTP/1.1 400 Bad Request\r\nContent-Length: 1000000000\r\n\r\n"),
})


def _sent_by(name: str) -> int:
    """The bytes the fake sent, once it noticed the hang-up."""
    until = time.monotonic() + 10
    while name not in flooded and time.monotonic() < until:
        time.sleep(0.05)
    return flooded.pop(name)


@pytest.mark.parametrize("models, run, words", [
    ("endless_models", "keepalive_run", "sent a model list (/v1/models) of more than 1,048,576 bytes after 0 tokens"),
    ("ok", "endless_line", "sent a line of more than 1,048,576 bytes after 0 tokens, so the run was given up"),
    ("ok", "endless_refusal", "refused the request (HTTP 400: a body of more than 65,536 bytes)."),
], ids=["model-list", "stream-line", "refusal-body"])
def test_a_server_that_floods_is_cut_off_at_the_limit_in_one_sentence(server, models, run, words):
    """An endless line or body took 1.6 GB in 40 s; now the reader stops at its limit and hangs up.
    What the fake got out (the limit plus the sockets' buffers) shows the client stopped reading."""
    engine = RemoteSampler(server(models, run), read_timeout=5.0)
    message, took = _timed(lambda: _sample(engine))
    assert words in message and len(message) < 400 and took < SLACK, message
    assert _sent_by(models if models != "ok" else run) < FLOOD_BYTES // 2
