"""Command line: one AuK edit from files, for scripts and for debugging without the UI.

    python -m auk_app edit --input in.wav --instruction "Raise the pitch by 2 semitones." --output out.wav

Takes every knob /edit_audio takes (``--help`` lists them) and prints the result's manifest as JSON
on stdout, the same record the API returns: seed, knobs, frames, timings, levels, warnings (also on
stderr as they are known) and the edit check ("check": task, asked, got, unit, tolerance, pass, and
the line "asked −6 dB · got −5.9 dB ✓", also on stderr). --candidates N runs seeds seed … seed+N−1
together and writes the best by the check to --output and every other one beside it as
<output>_seed<seed>.wav; "candidates" then lists all, best first. A request that cannot be served
prints one sentence on stderr, exits with status 2 and writes no file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from auk_app.config import DTYPE_CHOICES, QUANTIZE_CHOICES, Limits
from auk_app.errors import AppError, InputError
from auk_app.knobs import EDIT, Knob

DEFAULT_AUK_BATCH = 4  # auk_app.auk.batching.DEFAULT_MAX_BATCH, named here so --help stays torch-free

_TYPES = {"number": float, "slider": float, "grid": str, "choice": str, "text": str}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m auk_app", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    edit = commands.add_parser("edit", help="edit or generate one clip")
    edit.add_argument("--audio", "--input", dest="audio", type=Path, help=EDIT["audio"].describe(Limits()))
    edit.add_argument("--instruction", required=True, help=EDIT["instruction"].describe(Limits()))
    edit.add_argument("--output", type=Path, required=True, help="WAV file to write (24 kHz, PCM16)")
    _knob_flags(edit, _OWN_DEFAULTS)
    _model_options(edit)
    _batch_parser(commands)
    return parser


def _knob_flags(parser: argparse.ArgumentParser, own: dict[str, str]) -> None:
    knobs = parser.add_argument_group("knobs", "as /edit_audio takes them; left out, the API's default")
    for knob in EDIT:
        if knob.cli:
            _add_knob(knobs, knob, own)


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", type=Path,
                        help="an AuK checkpoint directory to edit with (the model then defaults to it)")
    parser.add_argument("--qwen", type=Path, help="Qwen2.5-Omni-3B snapshot directory")
    parser.add_argument("--device")
    parser.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES,
                        help="autocast-bf16 = upstream AuK's float32 weights under bf16 autocast (see app.py --help)")
    parser.add_argument("--quantize", default="none", choices=QUANTIZE_CHOICES,
                        help="int8 or int4 weights for the DiT's and text encoder's block linears (see app.py --help)")
    parser.add_argument("--download", action="store_true", help="download missing weights from the Hugging Face Hub")


def _batch_parser(commands) -> None:
    """``batch``: every knob as the rows' default, the model options, and how the items run."""
    batch = commands.add_parser("batch", help="edit a whole set of clips from a manifest and report on it",
                                description=BATCH_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    batch.add_argument("manifest", type=Path, help="a JSONL or CSV file (one row an item), a folder of clips, or a "
                                                   "benchmark's own samples.jsonl or meta CSV")
    batch.add_argument("--out", type=Path, required=True, help="the folder the outputs and the report go to")
    batch.add_argument("--instruction", help="the instruction of a folder's clips, and of rows without one")
    batch.add_argument("--submission", action="store_true",
                       help="also write DIR/submission/<id>.wav as 16 kHz mono PCM16 WAV (the challenge's format)")
    _knob_flags(batch, _BATCH_DEFAULTS)
    _model_options(batch)
    batch.add_argument("--auk-batch", type=int, default=DEFAULT_AUK_BATCH,
                       help=f"items run at once, sharing each DiT step (default {DEFAULT_AUK_BATCH}; 1: one at a time)")
    batch.add_argument("--auk-server", help="a Ray Serve deployment of AuK to run the items on (see app.py --help)")


BATCH_HELP = """Edit every item of a manifest and report on the set, scored the way the editing benchmarks score.

    python -m auk_app batch set.jsonl --out results/ --submission

Writes DIR/<id>.wav (24 kHz) and DIR/<id>.json (the manifest /edit_audio returns, with the item's
scores under "batch"), with --submission DIR/submission/<id>.wav (16 kHz mono PCM16), then
DIR/report.csv and DIR/report.md, and prints the summary. The knob flags are every row's defaults;
a row's own columns win. Seeds are fixed (the row's, else --seed, else 0), so running the same
command again skips the items already written and redoes only those whose knobs changed. A bad
row fails alone, with its sentence; Ctrl-C stops between steps and keeps what was done.
Exit status: 0 all done, 1 some rows failed, 2 refused before anything ran, 130 stopped.
"""


# The command line draws a seed only when none is given (the API's seed 0 comes with randomize_seed on).
_OWN_DEFAULTS = {"seed": "a fresh one", "randomize_seed": "on unless --seed is given"}
# A batch keeps its seeds, so that running it again finds its outputs where they were.
_BATCH_DEFAULTS = {"seed": "0, or the row's own", "randomize_seed": "off"}


def _add_knob(group: argparse._ArgumentGroup, knob: Knob, own: dict[str, str]) -> None:
    """``knob`` as a flag: a switch pair (--x / --no-x) for a checkbox, else a value of its type."""
    default = own.get(knob.name, None if knob.default is None else str(knob.default).lower())
    text = knob.describe(Limits()) + ("" if default is None else f" Default: {default}.")
    if knob.widget == "checkbox":
        group.add_argument(knob.flag, dest=knob.name, action=argparse.BooleanOptionalAction, default=None, help=text)
    else:
        whole = knob.span is not None and knob.span(Limits())[2] == 1
        group.add_argument(knob.flag, dest=knob.name, type=int if whole else _TYPES[knob.widget], default=None,
                           help=text)


def _given(args: argparse.Namespace) -> dict:
    """The knobs given on the command line, by their API names (with --checkpoint, its model)."""
    values = {knob.name: getattr(args, knob.name) for knob in EDIT
              if getattr(args, knob.name, None) is not None}
    if args.checkpoint is not None:
        values.setdefault("model", args.checkpoint.name)
    return values


def _values(args: argparse.Namespace) -> dict:
    """The edit's knobs; the seed is drawn only without --seed."""
    values = _given(args)
    values.setdefault("randomize_seed", "seed" not in values)
    return values


def _config(args: argparse.Namespace, **more):
    from auk_app.service import StudioConfig

    return StudioConfig(extra_auk=(args.checkpoint,) if args.checkpoint else (), qwen=args.qwen, device=args.device,
                        dtype=args.dtype, quantize=args.quantize, download=args.download, **more)


def batch(args: argparse.Namespace) -> int:
    """The batch subcommand (auk_app.batch.console): a refusal before anything runs is one sentence, status 2."""
    from auk_app.batch.console import run_batch
    from auk_app.quantize import quiet_library_logs
    from auk_app.service import Studio

    quiet_library_logs()
    try:
        config = _config(args, auk_batch=args.auk_batch, auk_server=args.auk_server)
        return run_batch(lambda: Studio(config), args.manifest, args.out, instruction=args.instruction,
                         defaults=_given(args), submission=args.submission)
    except AppError as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Stopped before the batch started; nothing was written.", file=sys.stderr)
        return 130


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
    if args.command == "batch":
        return batch(args)
    from auk_app.job import EditJob
    from auk_app.results import EditOrder, write_edit
    from auk_app.quantize import quiet_library_logs
    from auk_app.service import Studio

    quiet_library_logs()
    written: list[Path] = []
    try:
        check_output(args.output)
        config = _config(args)
        order = EditOrder.from_knobs(_values(args), config.limits)  # every knob, before anything loads
        studio = Studio(config)
        made, _ = EditJob(studio, order, warn=lambda warning: print(f"warning: {warning}", file=sys.stderr)).run()
        manifests = []
        for rank, delivery in enumerate(made, start=1):
            path = args.output if rank == 1 else candidate_path(args.output, delivery.seed)
            manifests.append(write_edit(delivery, path))
            written.append(path)
    except Exception as error:  # noqa: BLE001: one sentence, and no file left behind
        for path in written:
            path.unlink(missing_ok=True)
        if not isinstance(error, AppError):
            error = f"The edit failed unexpectedly ({type(error).__name__}: {error})."
        print(error, file=sys.stderr)
        return 2
    best = manifests[0]
    print(f"check: {best['check']['display']}", file=sys.stderr)
    if len(manifests) > 1:
        best = {**best, "candidates": [{"rank": m["candidate"]["rank"], "seed": m["seed"], "file": str(path),
                                        "check": m["check"]} for m, path in zip(manifests, written)]}
    print(json.dumps(best, indent=1, ensure_ascii=False))
    return 0


def candidate_path(output: Path, seed: int) -> Path:
    """Where a candidate other than the best is written: beside --output, named by its seed."""
    return output.with_name(f"{output.stem}_seed{seed}{output.suffix or '.wav'}")


if __name__ == "__main__":
    sys.exit(main())
