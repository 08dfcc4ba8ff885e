"""AuK Studio entry point: parse the command line, build the Studio and the UI, launch.

    python app.py                      # 127.0.0.1:7860, local weights if found, else the demo model
    python app.py --host 0.0.0.0 --preload --default-model flash
    python app.py --mcp                # also the public endpoints as MCP tools at /gradio_api/mcp/

Nothing is written to the directory the app runs from: outputs go to Gradio's temp dir
(GRADIO_TEMP_DIR), weights are only read (or downloaded to the Hugging Face cache with --download).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from auk_app.config import DTYPE_CHOICES, QUANTIZE_CHOICES
from auk_app.resolve import AUDEX, AUK_BASE, AUK_FLASH, QWEN_OMNI, XCODEC1, Repo

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
DEFAULT_AUK_BATCH = 4  # auk_app.auk.batching.DEFAULT_MAX_BATCH; not imported, so --help stays instant


def _where(repo: Repo) -> str:
    return f"default: ${repo.env_var}, then ./ckpts/{repo.local_name}, then the HF cache; get it with `{repo.download_command}`"


def _positive(text: str) -> int:
    """A whole number of at least 1 (argparse also runs this on a default given as a string)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="app.py",
        description="AuK Studio: instruction-driven speech/audio editing (AuK, 24 kHz) and text-to-audio "
        "(Audex, 16 kHz) in one Gradio app. Without released weights it serves the embedded demo model.",
        epilog="Checkpoint resolution, first hit wins: flag > environment variable > ./ckpts/<name> > "
        "Hugging Face cache > download (only with --download, or on a Hugging Face Space).",
    )
    net = parser.add_argument_group("server")
    net.add_argument("--host", help=f"interface to bind (default: $GRADIO_SERVER_NAME, else {DEFAULT_HOST}; "
                                    "0.0.0.0 for containers)")
    net.add_argument("--port", type=int, help=f"port (default: $GRADIO_SERVER_PORT, else {DEFAULT_PORT})")
    net.add_argument("--share", action="store_true", help="also open a temporary public gradio.live link")
    net.add_argument("--mcp", action="store_true", default=None,
                     help="also serve the public endpoints as MCP tools over Streamable HTTP at /gradio_api/mcp/ "
                          "(default: $GRADIO_MCP_SERVER, which Gradio reads; docs/running.md)")

    _checkpoint_flags(parser.add_argument_group("checkpoints"))
    _runtime_flags(parser.add_argument_group("runtime"))
    return parser


def _checkpoint_flags(ckpt: argparse._ArgumentGroup) -> None:
    ckpt.add_argument("--auk-base", type=Path, metavar="DIR", help=f"AuK base checkpoint dir ({_where(AUK_BASE)})")
    ckpt.add_argument("--auk-flash", type=Path, metavar="DIR", help=f"AuK-Flash checkpoint dir ({_where(AUK_FLASH)})")
    ckpt.add_argument("--auk-extra", type=Path, metavar="DIR", action="append", default=[],
                      help="another AuK checkpoint dir to offer, listed by its folder name (repeatable)")
    ckpt.add_argument("--qwen", type=Path, metavar="DIR", help=f"Qwen2.5-Omni-3B dir, AuK's text encoder ({_where(QWEN_OMNI)})")
    ckpt.add_argument("--audex", type=Path, metavar="DIR", help=f"Nemotron-Labs-Audex-2B snapshot ({_where(AUDEX)})")
    ckpt.add_argument("--xcodec", type=Path, metavar="DIR", help=f"XCodec1 snapshot ({_where(XCODEC1)})")
    ckpt.add_argument("--download", action="store_true",
                      help="download missing checkpoints from Hugging Face (opt-in; only the files the app reads)")
    ckpt.add_argument("--demo-dir", type=Path, metavar="DIR",
                      help="the embedded demo model's directory (default: assets/AuK-Tiny beside app.py)")


def _runtime_flags(run: argparse._ArgumentGroup) -> None:
    run.add_argument("--device", default="auto", help="auto (CUDA when available, else CPU), cpu, cuda, cuda:1, …")
    run.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES,
                     help="how the DiT and the text encoders run (auto: bfloat16 on CUDA, else float32). float32, "
                          "bfloat16, float16: weights in that dtype (bfloat16 is vLLM-Omni's recipe); autocast-bf16: "
                          "float32 weights under bf16 autocast, upstream AuK's recipe, twice bfloat16's weight memory")
    run.add_argument("--quantize", default=os.environ.get("AUK_QUANTIZE", "none"), choices=QUANTIZE_CHOICES,
                     help="int8 or int4 (CUDA only) weights for the DiT's and text encoder's block linears, the "
                          "rest in --dtype (default: $AUK_QUANTIZE, else none; docs/running.md)")
    run.add_argument("--audex-server", metavar="URL", default=os.environ.get("AUDEX_SERVER_URL"),
                     help="sample Audex on this vLLM server running the Audex plugin (default: $AUDEX_SERVER_URL; "
                          "unset: in this process); the app keeps the tokenizer and XCodec1 decoding")
    run.add_argument("--auk-server", metavar="URL", default=os.environ.get("AUK_SERVER_URL"),
                     help="run AuK edits on this Ray Serve deployment, its proxy and route, e.g. http://head:8000/auk "
                          "(default: $AUK_SERVER_URL; unset: in this process); the app keeps the upload check, "
                          "planning, region splicing, figures and manifest (docs/serve.md)")
    run.add_argument("--offload", action="store_true", help="keep only the component in use on the GPU (less memory; "
                     "edits then run one at a time, taking turns with text to audio)")
    run.add_argument("--auk-batch", type=_positive, metavar="N", default=os.environ.get("AUK_BATCH", DEFAULT_AUK_BATCH),
                     help="AuK edits served at once: concurrent edits of one shape bucket share each DiT step, up to N "
                          f"(default: $AUK_BATCH, else {DEFAULT_AUK_BATCH}; 1 = one edit at a time)")
    run.add_argument("--auk-pack", dest="pack", action="store_true",
                     help="concurrent edits sharing a DiT step attend over their own frames only (variable-length "
                          "attention on CUDA) instead of their bucket's padding; off by default until measured on a "
                          "GPU (docs/speed.md)")
    run.add_argument("--no-compile", dest="compile", action="store_false",
                     help="run the DiT's blocks uncompiled on CUDA (compiled by default there: a step takes about half "
                          "the time, after a compilation of up to a minute in the first edits)")
    run.add_argument("--preload", action="store_true", help="load the default models at start instead of on first use")
    run.add_argument("--default-model", default="auto", metavar="NAME",
                     help="the model 'auto' means: auto (released weights when found, else demo), demo, base, flash, "
                          "or an --auk-extra folder name")


def server_address(args: argparse.Namespace) -> tuple[str, int]:
    """(host, port) to serve on, once a socket could bind them: a port out of range (0 included),
    taken or not a number is one sentence here, before Gradio is imported (which reads
    GRADIO_SERVER_PORT as it loads) and before any model loads, not a traceback."""
    from auk_app.errors import InputError

    host = args.host or os.environ.get("GRADIO_SERVER_NAME") or DEFAULT_HOST
    from_env = os.environ.get("GRADIO_SERVER_PORT") or None
    if from_env is not None and not from_env.isdigit():  # Gradio's import fails on it, whatever --port says
        raise InputError(f"GRADIO_SERVER_PORT is {from_env[:20]!r}, not a port number; set it to one from 1 to "
                         "65535, e.g. 7860, or unset it and give --port.")
    port = args.port if args.port is not None else from_env or DEFAULT_PORT
    if not str(port).isdigit() or not 1 <= int(port) <= 65535:
        raise InputError(f"The port {str(port)[:20]!r} is not a port number from 1 to 65535; give --port (or "
                         "GRADIO_SERVER_PORT) one, e.g. 7860.")
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            # As uvicorn binds: a port our own server left in TIME_WAIT a moment ago is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, int(port)))
    except OSError as exc:
        raise InputError(f"Cannot serve on {host}:{port} ({exc.strerror or exc}): the port is in use or the host "
                         "is not this machine's; stop the other server or choose another --port or --host.") from exc
    return host, int(port)


def _refuse(exc: Exception) -> None:
    """One sentence and status 2, as `python -m auk_app` answers a bad request."""
    print(f"AuK Studio cannot start: {exc}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from auk_app.errors import AppError

    try:
        host, port = server_address(args)
    except AppError as exc:
        _refuse(exc)
    # Heavy imports after argument parsing and the address, so --help is instant and a bad port is one sentence.
    from auk_app.ui.app import build_demo, launch_options
    from auk_app.ui.mcp_tools import serve_tools
    from auk_app.ui.text import serving_line
    from auk_app.ui.warming import Warming, startup_steps
    from auk_app.quantize import quiet_library_logs
    from auk_app.service import Studio, StudioConfig

    quiet_library_logs()
    overrides = {"demo_dir": args.demo_dir} if args.demo_dir else {}
    config = StudioConfig(
        auk_base=args.auk_base, auk_flash=args.auk_flash, extra_auk=tuple(args.auk_extra), qwen=args.qwen,
        audex=args.audex, xcodec=args.xcodec, device=args.device, dtype=args.dtype, quantize=args.quantize,
        offload=args.offload, auk_batch=args.auk_batch, pack=args.pack, compile=None if args.compile else False,
        download=args.download,
        default_model=args.default_model, audex_server=args.audex_server,
        auk_server=args.auk_server, **overrides,
    )
    try:
        studio = Studio(config)
        engine_line = studio.engine.start(studio.entry("auto"), preload=args.preload)
        if args.preload:
            studio.audex().load()
    except AppError as exc:
        _refuse(exc)
    print(serving_line(studio.info()), flush=True)
    if engine_line is not None:
        print(engine_line, flush=True)
    # The page answers first; what first runs need loads behind it, and the page says what is left.
    warming = Warming(startup_steps(studio), on_done=lambda seconds: print(
        f"Warm-up done, {seconds:.1f} s after the page came up.", flush=True))
    demo = build_demo(studio, warming)
    demo.launch(server_name=host, server_port=port, share=args.share, prevent_thread_lock=True, mcp_server=args.mcp,
                **launch_options())
    serve_tools(demo)
    warming.start()
    demo.block_thread()


if __name__ == "__main__":
    main()
