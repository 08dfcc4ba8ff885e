"""Picture of a generated codec stream: codec id against position, coloured by codebook.

A phase-valid stream climbs a staircase (layer 0, 1, 2, 3, 0, ...) inside the four 1024-wide
bands; unmasked sampling scatters over all eight bands and the out-of-phase points are marked.
It draws into an axes of the caller's figure with matplotlib's object API, never pyplot, so no
global figure registry is touched and concurrent requests cannot draw into each other's figures.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from auk_app.audex.tta import AUDEX_AUDIOCODEC_VOCAB_SIZE, XCODEC1_CODEBOOK_SIZE, XCODEC1_NUM_CODEBOOKS

_PHASE_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")
TITLE_CHARS = 44  # a title line in the page-sized figure (auk_app.ui.figures.WIDTH_INCHES) at 11 pt


def _title(report: Mapping[str, Any]) -> str:
    valid = "phase-valid" if report["phase_valid"] else f"{report['mismatch_count']} out-of-phase codes"
    first = report["first_mismatch"]
    where = f" (first at position {first[0]}: codebook {first[2]}, expected {first[3]})" if first else ""
    return (
        f"{report['codec_count']} codec tokens = {report['frames']} frames"
        f" + {report['dropped_tokens']} dropped; end: {report['end_reason']}\n{valid}{where}"
    )


def draw_token_stream(ax, codec_ids: Sequence[int], report: Mapping[str, Any], *, heading: str = "") -> None:
    """Draw the stream into ``ax``: codec ids (0..8191) in order, titled from ``report``
    (a :func:`~auk_app.audex.report.build_report` dict) under an optional ``heading`` line."""
    books = [c // XCODEC1_CODEBOOK_SIZE for c in codec_ids]
    upper = range(XCODEC1_NUM_CODEBOOKS, AUDEX_AUDIOCODEC_VOCAB_SIZE // XCODEC1_CODEBOOK_SIZE)
    groups = [(f"codebook {b}", colour, {b}) for b, colour in enumerate(_PHASE_COLOURS)]
    groups.append(("codebooks 4-7 (never decoded)", "tab:gray", set(upper)))
    for label, colour, members in groups:
        xs = [i for i, book in enumerate(books) if book in members]
        if xs:
            ax.scatter(xs, [codec_ids[i] for i in xs], s=6, color=colour, label=label)
    wrong = [i for i, book in enumerate(books) if book != i % XCODEC1_NUM_CODEBOOKS]
    if wrong:
        ax.scatter(wrong, [codec_ids[i] for i in wrong], s=40, marker="x", color="red", label="out of phase")
    for edge in range(XCODEC1_CODEBOOK_SIZE, AUDEX_AUDIOCODEC_VOCAB_SIZE, XCODEC1_CODEBOOK_SIZE):
        ax.axhline(edge, color="0.85", linewidth=0.8, zorder=0)
    ax.set_ylim(-100, AUDEX_AUDIOCODEC_VOCAB_SIZE + 100)
    ax.set_xlabel("index in the codec stream")
    ax.set_ylabel("codec id")
    title = "\n".join(textwrap.wrap(heading) + [line for part in _title(report).split("\n")
                                                  for line in textwrap.wrap(part, TITLE_CHARS)])
    ax.set_title(title, loc="left")
    if codec_ids:  # under the plot, where it hides no points and leaves the plot the figure's width
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=2, markerscale=2)
