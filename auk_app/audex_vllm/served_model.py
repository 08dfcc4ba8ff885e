"""Write the folder ``vllm serve`` loads for an Audex snapshot.

The checkpoint declares ``model_type: nemotron_dense``, which neither transformers nor vLLM
knows; its math is Arcee's (see :mod:`auk_app.audex.thinker`), which vLLM serves. The folder
holds an Arcee ``config.json`` translated by the same :func:`arcee_config` the in-process
loader uses, the tokenizer files, the weight index, and links to the shards (no copy)::

    python -m auk_app.audex_vllm.served_model <audex-snapshot-or-audiogen-dir> <out-dir>
    python -m auk_app.audex_vllm.served_model --demo <out-dir>   # the tiny demo snapshot
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from auk_app.audex.thinker import arcee_config, audiogen_dir
from auk_app.resolve import AUDEX_AUDIOGEN_DIR, AUDEX_FULL_DIR, WEIGHT_INDEX

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def write_served_model(snapshot: str | Path, out_dir: str | Path) -> Path:
    """Write ``out_dir`` for ``snapshot`` (its root or its audiogen folder) and return it."""
    source = audiogen_dir(snapshot)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    native = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config = arcee_config(native, source=source / "config.json").to_dict()
    config.update(architectures=["ArceeForCausalLM"], model_type="arcee",
                  dtype=native.get("torch_dtype", "bfloat16"))
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for name in _TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, out / name)
    shutil.copyfile(source / WEIGHT_INDEX, out / WEIGHT_INDEX)
    weight_map = json.loads((source / WEIGHT_INDEX).read_text(encoding="utf-8"))["weight_map"]
    for shard in sorted(set(weight_map.values())):
        found = next(p for p in (source / shard, source.parent / AUDEX_FULL_DIR / shard) if p.is_file())
        link = out / shard
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(found.resolve(), link)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", nargs="?", type=Path, help=f"Audex snapshot root or its {AUDEX_AUDIOGEN_DIR}")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--demo", action="store_true", help="serve the app's tiny demo snapshot")
    args = parser.parse_args(argv)
    if args.demo == (args.snapshot is not None):
        parser.error("give either a snapshot or --demo")
    if args.demo:
        from auk_app.demo.audex_snapshot import shared_demo_snapshot

        args.snapshot = shared_demo_snapshot().audex_root
    print(write_served_model(args.snapshot, args.out_dir))


if __name__ == "__main__":
    main()
