"""Command line: one AuK edit from files, for scripts and for debugging without the UI.

    python -m auk_app edit --input in.wav --instruction "Raise the pitch by 2 semitones." --output out.wav

Prints the result record (seed, knobs, frames, timings) and its edit check ("check": task, asked,
got, unit, tolerance, pass, and the line "asked −6 dB · got −5.9 dB ✓", also on stderr) as JSON on
stdout. --candidates N runs seeds seed … seed+N−1 together and writes the best by the check to
--output and every other one beside it as <output>_seed<seed>.wav; "candidates" lists all, best
first. A request that cannot be served prints one sentence on stderr, exits with status 2 and
writes no file.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
import sys
from pathlib import Path

from auk_app.config import DTYPE_CHOICES
from auk_app.errors import AppError, InputError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m auk_app", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    edit = commands.add_parser("edit", help="edit or generate one clip")
    edit.add_argument("--instruction", required=True)
    edit.add_argument("--output", type=Path, required=True, help="WAV file to write (24 kHz, PCM16)")
    edit.add_argument("--input", type=Path, help="source clip; omit to generate from text")
    edit.add_argument("--checkpoint", type=Path, help="AuK checkpoint directory (default: found weights, else the demo)")
    edit.add_argument("--qwen", type=Path, help="Qwen2.5-Omni-3B snapshot directory")
    edit.add_argument("--seconds", type=float, help="target length; default: the source's length")
    edit.add_argument("--nfe", type=int)
    edit.add_argument("--cfg", type=float)
    edit.add_argument("--sway", type=float)
    edit.add_argument("--t-grid", help="comma-separated time grid, e.g. 0,0.3,0.7,1")
    edit.add_argument("--seed", type=int)
    edit.add_argument("--candidates", type=int, default=1,
                      help="run this many seeds (seed, seed+1, …; 1–8) together and keep the best by the edit check")
    edit.add_argument("--region", type=float, nargs=2, metavar=("START", "END"),
                      help="edit only these seconds of --input (up to 30 s of a file of up to 10 minutes); "
                           "the whole file is written, --seconds is then the region's new length")
    latent = edit.add_mutually_exclusive_group()
    latent.add_argument("--vae-sample", dest="vae_sample", action="store_true",
                        help="the source clip's latent is a draw from the VAE posterior seeded by --seed, as upstream "
                             "AuK samples it (the default)")
    latent.add_argument("--vae-mean", dest="vae_sample", action="store_false",
                        help="take the VAE posterior's mean instead, as vLLM-Omni does")
    edit.set_defaults(vae_sample=True)
    edit.add_argument("--device")
    edit.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES,
                      help="autocast-bf16 = upstream AuK's float32 weights under bf16 autocast (see app.py --help)")
    edit.add_argument("--download", action="store_true", help="download missing weights from the Hugging Face Hub")
    return parser


def check_output(path: Path) -> None:
    """Refuse an output the edit could not be written to, before anything loads.

    write_wav writes ``<output>.part`` and renames it, so that file is created and removed here:
    permissions alone miss a read-only disk, a name too long, or a folder already called so.
    """
    try:
        if path.is_dir():
            raise InputError(f"--output {path} is a folder; give a file name such as {path / 'out.wav'}.")
        if not path.parent.is_dir():
            raise InputError(f"--output {path}: the folder {path.parent} does not exist. Create it first.")
        from auk_app.audio_io import part_path  # here: --help and argument errors stay instant

        part = part_path(path)
        existed = part.exists()  # a stale one from a killed run: write_wav overwrites it, so may we
        with open(part, "ab"):
            pass
        if not existed:
            part.unlink()
    except OSError as exc:
        raise InputError(f"--output {str(path)[:80]} cannot be written ({exc.strerror or exc}). "
                         "Choose another file name or folder.") from exc


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from auk_app.audio_io import write_wav
    from auk_app.auk.request import EditRequest, check_candidates
    from auk_app.service import Studio, StudioConfig

    try:
        candidates = check_candidates(args.candidates)
        check_output(args.output)
        studio = Studio(StudioConfig(
            extra_auk=(args.checkpoint,) if args.checkpoint else (), qwen=args.qwen, device=args.device,
            dtype=args.dtype, download=args.download,
        ))
        request = EditRequest(
            instruction=args.instruction, audio=args.input, seconds=args.seconds, nfe=args.nfe, cfg=args.cfg,
            sway=args.sway, t_grid=args.t_grid, seed=args.seed, vae_sample=args.vae_sample,
            region_start=args.region[0] if args.region else None, region_end=args.region[1] if args.region else None,
            limits=studio.config.limits,
        )
        made, _ = studio.edit_candidates(request, args.checkpoint.name if args.checkpoint else "auto",
                                         candidates=candidates)
        table = []
        for candidate in made:
            path = args.output if candidate.rank == 1 else candidate_path(args.output, candidate.result.record.seed)
            write_wav(path, candidate.result.wav, candidate.result.sample_rate)
            table.append({"rank": candidate.rank, "seed": candidate.result.record.seed, "file": str(path),
                          "check": candidate.check_entry()})
    except AppError as error:
        print(error, file=sys.stderr)
        return 2
    except Exception as error:  # a bug or the disk: still one sentence, and no half-written file
        print(f"The edit failed unexpectedly ({type(error).__name__}: {error}).", file=sys.stderr)
        return 2
    best = made[0]
    print(f"check: {best.check.display()}", file=sys.stderr)
    output = {**asdict(best.result.record), "check": table[0]["check"]}
    if candidates > 1:
        output["candidates"] = table
    print(json.dumps(output, indent=1, ensure_ascii=False))
    return 0


def candidate_path(output: Path, seed: int) -> Path:
    """Where a candidate other than the best is written: beside --output, named by its seed."""
    return output.with_name(f"{output.stem}_seed{seed}{output.suffix or '.wav'}")


if __name__ == "__main__":
    sys.exit(main())
