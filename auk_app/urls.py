"""Server URLs given by a user (``--audex-server``, ``--auk-server``): one reading for both servers."""

from __future__ import annotations

from urllib.parse import urlsplit


def http_url(url: str) -> str:
    """``url`` as a client can call it: ``http://`` in front when it names no scheme, no trailing
    slash. ValueError, with the reason as a clause ("it is not …"), for anything but an http(s) URL
    with a host and a port from 1 to 65535, so each server's sentence can add what to give instead
    (and show the URL only through :func:`named`: it may hold a password)."""
    full = url if "//" in url else f"http://{url}"
    try:
        parts = urlsplit(full)
        port = parts.port  # raises ValueError for a port outside 0–65535 or not a number
    except ValueError as exc:  # an unclosed "[" too
        raise ValueError(f"its host or port cannot be read ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise ValueError("it is not an http(s) URL with a host and a port from 1 to 65535")
    return full.rstrip("/")


def server_host(url: str) -> str:
    """``host[:port]`` of ``url`` without scheme, credentials, path or query: safe to show, even of
    a URL :func:`http_url` refused (what of it cannot be read is left out)."""
    try:
        parts = urlsplit(url if "//" in url else f"http://{url}")
        host = parts.hostname or ""
    except ValueError:  # an unclosed "["
        return ""
    try:
        port = parts.port
    except ValueError:  # out of range or not a number
        port = None
    return f"{host}:{port}" if port else host


def named(url: str) -> str:
    """`` (host:port)`` of ``url`` for a sentence about it, or nothing: never its credentials or query."""
    host = server_host(url)
    return f" ({host})" if host else ""
