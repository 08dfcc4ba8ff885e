"""Bounded reads of a server's reply: lines split anywhere across chunks, and the limits."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from auk_app.bounded_reads import TooLong, iter_lines, read_body, said


def _response(*chunks: bytes) -> httpx.Response:
    """A streamed reply whose body arrives in ``chunks``, as httpx hands a socket's reads on."""
    return httpx.Response(200, stream=_Chunks(chunks))


class _Chunks(httpx.SyncByteStream):
    def __init__(self, chunks):
        self.chunks = chunks

    def __iter__(self):
        yield from self.chunks


def test_lines_come_whole_however_the_chunks_cut_them():
    body = b"data: one\r\n\r\ndata: two\nlast"
    for cut in range(1, len(body)):
        got = list(iter_lines(_response(body[:cut], body[cut:]), limit=10))
        assert got == ["data: one", "", "data: two", "last"], cut
    assert list(iter_lines(_response(*[bytes([b]) for b in body]), limit=10))[-1] == "last"


def test_a_line_over_its_limit_stops_the_read_before_it_ends():
    def endless():
        yield b"ok\n"
        while True:
            yield b"x" * 1000

    lines = iter_lines(httpx.Response(200, stream=_Chunks(endless())), limit=10_000)
    assert next(lines) == "ok"
    with pytest.raises(TooLong, match="more than 10,000 bytes"):
        next(lines)
    assert list(iter_lines(_response(b"x" * 10, b"\n"), limit=10)) == ["x" * 10]
    with pytest.raises(TooLong):
        list(iter_lines(_response(b"x" * 5, b"x" * 6, b"\n"), limit=10))


def test_a_body_over_its_limit_is_refused():
    assert read_body(_response(b"abc", b"de"), limit=5) == b"abcde"
    with pytest.raises(TooLong, match="more than 5 bytes"):
        read_body(_response(b"abc", b"def"), limit=5)


def test_what_a_server_said_is_one_line_of_a_sentence_s_length():
    assert said("  a\n\tb  ") == "a b"
    assert said("x" * 10_000) == "x" * 199 + "…" and len(said("y" * 50, limit=20)) == 20


class _EndlessHealth(BaseHTTPRequestHandler):
    """Answers 200, then a body that goes on until the client hangs up (64 MiB at most)."""

    sent: list[int] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.end_headers()
        sent = 0
        try:
            while sent < 64 << 20:
                self.wfile.write(b"x" * (64 << 10))
                sent += 64 << 10
        except OSError:
            pass
        _EndlessHealth.sent.append(sent)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("launcher", ["auk_app.audex_vllm.launch", "auk_app.serve.launch"])
def test_the_launchers_readiness_probes_read_the_status_not_the_body(tmp_path, launcher):
    """They read whole bodies: a server answering 200 and an endless body kept them reading."""
    import importlib
    import subprocess
    import sys
    import time

    wait_until_ready = importlib.import_module(launcher).wait_until_ready
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EndlessHealth)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # the server's process
    log = tmp_path / "server.log"
    log.write_text("READY\n")
    _EndlessHealth.sent.clear()
    try:
        wait_until_ready(f"http://127.0.0.1:{server.server_address[1]}", process, timeout=30, log=log)
        until = time.monotonic() + 10
        while not _EndlessHealth.sent and time.monotonic() < until:  # the fake notices the hang-up
            time.sleep(0.05)
        assert _EndlessHealth.sent and _EndlessHealth.sent[0] < 32 << 20
    finally:
        process.kill()
        process.wait()
        server.shutdown()
        server.server_close()
