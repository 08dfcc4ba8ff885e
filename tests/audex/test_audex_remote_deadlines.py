"""An Audex server that drips or answers garbage: every call to it ends within its deadline, in one
sentence naming the limit, and Stop reaches the caller wherever it waits. A few lines of socket code
on 127.0.0.1 play the server; deadlines are set short so each case takes about a second."""

from __future__ import annotations

import json
import socket
import threading
import time
from types import SimpleNamespace

import pytest

from auk_app.audex.params import TTASampling
from auk_app.audex.remote import EngineError, RemoteEngine
from auk_app.errors import Cancelled

CARD = json.dumps({"data": [{"id": "audex", "max_model_len": 8192}]}).encode()
DRIP_FOR_SECONDS = 8.0  # the fake server stops dripping then, so a broken client fails instead of hanging


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
}


@pytest.fixture
def server():
    """``server(models, completions)``: the URL of a fake server answering /v1/models and
    /v1/completions with the named behaviours (``"ok"``: a proper model card)."""
    sockets = []

    def start(models: str, completions: str = "keepalive_run") -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        sockets.append(listener)

        def serve(conn):
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
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

    yield start
    for listener in sockets:
        listener.close()


VOCAB = SimpleNamespace(end_tid=2)  # all the request body needs of the vocabulary


def _timed(call):
    started = time.monotonic()
    with pytest.raises((EngineError, Cancelled)) as failed:
        call()
    return str(failed.value), time.monotonic() - started


def test_a_model_list_that_drips_meets_the_call_deadline_and_holds_no_lock(server):
    engine = RemoteEngine(server("drip_models"), read_timeout=5.0, call_deadline=1.0)
    message, took = _timed(engine.max_model_len)
    assert "did not complete the model list (/v1/models) within 1 s" in message and took < 3
    assert engine._lock.acquire(blocking=False)  # the abandoned read holds nothing
    engine._lock.release()


def test_stop_reaches_a_run_waiting_for_a_dripping_model_list(server):
    engine = RemoteEngine(server("drip_models"), read_timeout=5.0, call_deadline=30.0)
    stop_at = time.monotonic() + 0.5
    message, took = _timed(lambda: engine.max_model_len(lambda: time.monotonic() > stop_at))
    assert "Generation was stopped before it started" in message and took < 2


def test_a_model_list_that_is_not_json_gets_our_sentence(server):
    engine = RemoteEngine(server("garbage_models"), read_timeout=5.0, call_deadline=5.0)
    message, _ = _timed(engine.max_model_len)
    assert "sent a reply this app cannot read" in message and "JSONDecodeError" not in message


def test_keep_alives_without_tokens_end_the_run_after_the_read_timeout(server):
    engine = RemoteEngine(server("ok", "keepalive_run"), read_timeout=1.0, call_deadline=5.0)
    message, took = _timed(lambda: engine.sample_stream([1, 2, 3], None, VOCAB, TTASampling(cfg_scale=1.0)))
    assert "sent no tokens for 1 s after 0 tokens" in message and took < 3


def test_a_run_that_never_ends_meets_the_run_deadline(server):
    engine = RemoteEngine(server("ok", "endless_run"), read_timeout=5.0, run_deadline=1.0)
    message, took = _timed(lambda: engine.sample_stream([1, 2, 3], None, VOCAB, TTASampling(cfg_scale=1.0)))
    assert "did not complete the run within 1 s (" in message and "tokens came)" in message and took < 3


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
    """Issue 44 review: each of these raised IndexError, AttributeError or TypeError in the reader
    thread, and the user read "ended the run after 0 of at most … tokens (None)"."""
    engine = RemoteEngine(server("ok", answer), read_timeout=5.0)
    message, _ = _timed(lambda: engine.sample_stream([1, 2, 3], None, VOCAB, TTASampling(cfg_scale=1.0)))
    assert words in message, message
