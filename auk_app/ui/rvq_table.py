"""The Audex RVQ-phase validity report as a Markdown table a person can read.

One row per question ("is the stream in phase?", "where is the first wrong code?", "how did it
end?"), one column per run: with the phase mask, and optionally without it beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_END_REASONS = {
    "end_token": "the model ended it on a frame boundary",
    "codec_cap": "the codec cap was reached",
    "max_tokens": "the token budget ran out",
}


def _yes(value: bool) -> str:
    return "✓ yes" if value else "✗ no"


def _first(mismatch: Any) -> str:
    if not mismatch:
        return "—"
    position, codec_id, found, expected = mismatch
    return f"position {position}: codec id {codec_id} is codebook {found}, expected {expected}"


_ROWS = (
    ("Phase-valid (position p from codebook p mod 4)", lambda r: _yes(r["phase_valid"])),
    ("Out-of-phase codes", lambda r: str(r["mismatch_count"])),
    ("First mismatch", lambda r: _first(r["first_mismatch"])),
    ("Codec tokens", lambda r: str(r["codec_count"])),
    ("Whole frames (4 tokens each)", lambda r: str(r["frames"])),
    ("Tokens of a partial last frame", lambda r: str(r["dropped_tokens"])),
    ("Codes from codebooks 4–7 (never decoded)", lambda r: str(r["upper_range_tokens"])),
    ("Non-codec tokens", lambda r: str(r["non_codec_tokens"])),
    ("Stream ended because", lambda r: _END_REASONS.get(r["end_reason"], r["end_reason"])),
    ("Decodable by XCodec1", lambda r: _yes(r["decodable"])),
    ("Decoded audio", lambda r: f"{r['decoded_frames']} frames = {r['seconds']:.2f} s"),
)


def report_table(masked: Mapping[str, Any], unmasked: Mapping[str, Any] | None = None) -> str:
    """Markdown for one report, or two side by side (with mask | without mask)."""
    runs = [("With the phase mask", masked)] + ([("Without the mask", unmasked)] if unmasked is not None else [])
    lines = ["| Check | " + " | ".join(name for name, _ in runs) + " |", "|---" * (1 + len(runs)) + "|"]
    for label, cell in _ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(report) for _, report in runs) + " |")
    return "\n".join(lines)
