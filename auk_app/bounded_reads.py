"""A server's replies read in bounded pieces: every line and every body has a size limit.

httpx's ``iter_lines`` and ``read`` keep whatever a server sends until it ends a line or the
body, so a misbehaving server (an endless line, a body that never stops) could take all this
process's memory before any timeout. Here the reader gives up once a line or body passes its
limit. Bodies are asked for and read uncompressed (``IDENTITY``, ``iter_raw``): a limit on the
bytes received is then a limit on the memory held, which a compressed body would not be. What a
server says reaches a user only through :func:`said`, cut to a sentence's length.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx

IDENTITY = {"accept-encoding": "identity"}  # the request headers of a bounded read
SAID_CHARS = 200  # the most of a server's own text a message quotes


class TooLong(Exception):
    """A line or body passed its limit of ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit:,} bytes")
        self.limit = limit


def status(url: str, *, timeout: float) -> int:
    """The HTTP status of ``GET url``, its body left unread (a readiness probe needs no more)."""
    with httpx.stream("GET", url, timeout=timeout, headers=IDENTITY) as response:
        return response.status_code


def read_body(response: httpx.Response, limit: int) -> bytes:
    """The whole body, or :class:`TooLong` as soon as more than ``limit`` bytes came."""
    chunks, size = [], 0
    for chunk in response.iter_raw():
        size += len(chunk)
        if size > limit:
            raise TooLong(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def iter_lines(response: httpx.Response, limit: int) -> Iterator[str]:
    """Each line of the body as text, without its ending (``\\n`` or ``\\r\\n``); :class:`TooLong`
    once a line passes ``limit`` bytes, without waiting for its end."""
    pending = bytearray()
    for chunk in response.iter_raw():
        searched = len(pending)  # the bytes before this chunk hold no line end
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", max(start, searched))) >= 0:
            if end - start > limit:
                raise TooLong(limit)
            yield _text(pending[start:end])
            start = end + 1
        del pending[:start]
        if len(pending) > limit:
            raise TooLong(limit)
    if pending:
        yield _text(pending)


def _text(line: bytes | bytearray) -> str:
    return bytes(line).removesuffix(b"\r").decode("utf-8", "replace")


def said(text: object, limit: int = SAID_CHARS) -> str:
    """What a server said, on one line and at most ``limit`` characters (cut with an ellipsis)."""
    flat = " ".join(str(text)[:4 * limit].split())
    return flat if len(flat) <= limit else f"{flat[:limit - 1]}…"
