"""Start the deployment of deploy/serve.yaml on a local Ray of its own (tests, bench, trying it out).

``python -m auk_app.serve.launch --replicas 2 --cpu --port 8000`` (from the Ray virtualenv) starts
Ray in this process with ``--num-cpus`` CPUs and no dashboard, runs the ``auk`` application of the
config file with the given overrides, prints ``READY <url>`` and serves until SIGTERM or SIGINT,
then shuts Serve and its Ray down. On a real cluster use ``serve deploy deploy/serve.yaml``
instead (docs/serve.md). :func:`start_local` and :func:`wait_until_ready` are plain Python, for
the app's side (no Ray import).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from auk_app.bounded_reads import status

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "deploy" / "serve.yaml"
RAY_PYTHON = REPO / ".venv-ray" / "bin" / "python"


def application(config: Path = CONFIG, *, replicas: int | None = None, cpu: bool = False, max_batch: int | None = None,
                max_ongoing: int | None = None, threads: int | None = None, journal: str | None = None,
                num_cpus: float | None = None) -> dict[str, Any]:
    """The ``auk`` application of ``config`` with the overrides: a fixed number of replicas instead
    of autoscaling, CPU replicas (no GPU asked for), the batch, the torch threads, a journal dir."""
    app = next(a for a in yaml.safe_load(config.read_text())["applications"] if a["name"] == "auk")
    deployment = app["deployments"][0]
    args = dict(app.get("args") or {})
    actor = dict(deployment.get("ray_actor_options") or {})
    if replicas is not None:
        deployment.pop("autoscaling_config", None)
        deployment["num_replicas"] = replicas
    if cpu:
        actor["num_gpus"] = 0
        args["device"] = "cpu"
    if num_cpus is not None:
        actor["num_cpus"] = num_cpus
    if max_batch is not None:
        args["max_batch"] = max_batch
    if max_ongoing is not None:
        deployment["max_ongoing_requests"] = max_ongoing
    if threads is not None:
        args["threads"] = threads
    if journal is not None:
        args["journal"] = journal
    deployment["ray_actor_options"] = actor
    app["args"] = args
    return app


def _serve(app: dict[str, Any], *, port: int, num_cpus: int) -> None:
    import ray
    from ray import serve

    from auk_app.serve.deployment import AuKReplica

    env = {"PYTHONPATH": str(REPO)}
    if app["args"].get("threads"):  # Ray sets OMP_NUM_THREADS to an actor's CPUs, and it changes the sums' order
        env["OMP_NUM_THREADS"] = str(app["args"]["threads"])
    ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env={"env_vars": env})
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    options = {k: v for k, v in app["deployments"][0].items() if k != "name"}
    serve.run(AuKReplica.options(**options).bind(**app["args"]), name=app["name"], route_prefix=app["route_prefix"])
    print(f"READY http://127.0.0.1:{port}{app['route_prefix']}", flush=True)
    stopped = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.append(True))
    while not stopped:
        time.sleep(0.2)
    serve.shutdown()
    ray.shutdown()


def start_local(*, port: int, log: Path, python: Path = RAY_PYTHON, **overrides: Any) -> subprocess.Popen:
    """The launcher in a process group of its own (so it can be stopped whole), output to ``log``."""
    argv = [str(python), "-m", "auk_app.serve.launch", "--port", str(port)]
    for key, value in overrides.items():
        if value is True:
            argv.append(f"--{key.replace('_', '-')}")
        elif value is not None and value is not False:
            argv += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    with open(log, "wb") as out:
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_until_ready(url: str, process: subprocess.Popen, *, timeout: float, log: Path) -> None:
    """Return once ``url`` (the app's route) answers 200; RuntimeError with the log's tail otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if "READY" in log.read_text(errors="replace"):
            try:
                if status(url, timeout=5.0) == 200:
                    return
            except httpx.HTTPError:
                pass
        time.sleep(1.0)
    state = f"exited with {process.returncode}" if process.poll() is not None else f"not ready after {timeout:g} s"
    raise RuntimeError(f"The local Serve deployment {state}; the end of its log:\n{log.read_text(errors='replace')[-3000:]}")


def stop_local(process: subprocess.Popen, timeout: float = 60.0) -> None:
    """SIGTERM (Serve and Ray shut down), then SIGKILL to the launcher's own process group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # what Ray left of this group: raylet, workers
    except (ProcessLookupError, PermissionError):
        pass
    process.wait(10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve AuK on a local Ray of its own (deploy/serve.yaml's app).")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count(), help="CPUs this local Ray offers")
    parser.add_argument("--replicas", type=int, help="a fixed number of replicas instead of autoscaling")
    parser.add_argument("--cpu", action="store_true", help="replicas on the CPU, no GPU asked for")
    parser.add_argument("--replica-cpus", type=float, help="CPUs each replica reserves")
    parser.add_argument("--max-batch", type=int)
    parser.add_argument("--max-ongoing", type=int)
    parser.add_argument("--threads", type=int, help="torch threads per replica")
    parser.add_argument("--journal", help="a directory each replica writes a line per finished run to")
    args = parser.parse_args(argv)
    app = application(args.config, replicas=args.replicas, cpu=args.cpu, max_batch=args.max_batch,
                      max_ongoing=args.max_ongoing, threads=args.threads, journal=args.journal,
                      num_cpus=args.replica_cpus)
    _serve(app, port=args.port, num_cpus=args.num_cpus)


if __name__ == "__main__":
    sys.exit(main())
