"""Bounded reads of a server's reply: lines split anywhere across chunks, and the limits."""

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
