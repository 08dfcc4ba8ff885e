"""How a bench hands over its result: one JSON object printed, and written where ``--out`` says."""

from __future__ import annotations

import json
from pathlib import Path


def publish(result: dict, out: Path | None) -> None:
    text = json.dumps(result, indent=1)
    print(text, flush=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
