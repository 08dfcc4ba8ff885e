"""Apps the tests start as processes (``python app.py``): their console as it comes, and their end."""

from __future__ import annotations

import subprocess
import threading

WARMED = "Warm-up done"  # the line app.py prints once the demo models are loaded behind the page


def watch(process: subprocess.Popen) -> tuple[list[str], threading.Event]:
    """The lines ``process`` prints (text stdout), collected by a thread, and an event set at WARMED."""
    console, warmed = [], threading.Event()

    def read() -> None:
        for line in process.stdout:
            console.append(line)
            if WARMED in line:
                warmed.set()

    threading.Thread(target=read, daemon=True).start()
    return console, warmed


def stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """End ``process``: asked first, killed if it has not gone within ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
