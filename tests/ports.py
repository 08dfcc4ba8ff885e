"""Local ports for test servers; free of conftest's side effects, so the benches can use it too."""

import socket


def free_port() -> int:
    """A local TCP port nobody listens on now: for a server to start on, or to find nothing at."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
