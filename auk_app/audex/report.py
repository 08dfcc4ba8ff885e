"""Per-clip validity report of a generated TTA token stream (pure; JSON-serialisable).

It answers "could XCodec1 decode this, and if not, why": the phase check is exactly
:func:`validate_rvq_phase` on the whole codec stream (before the partial frame is cut), and the
counters show what unmasked sampling leaks in: upper-half codec ids (RVQ layers 4..7, which
Audex never models), text or padding ids, and a stream that does not end on a frame boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auk_app.audex.rvq import MAX_TTA_FRAMES
from auk_app.audex.params import FRAME_RATE_HZ, NUM_PHASES
from auk_app.audex.tta import XCODEC1_CODEBOOK_SIZE, validate_rvq_phase
from auk_app.audex.vocab import AudexVocab



def build_report(token_ids: Sequence[int], end_reason: str, vocab: AudexVocab) -> dict[str, Any]:
    """Validity report of the generated ids (prompt excluded, end marker included if sampled).

    Keys: ``phase_valid``, ``mismatch_count``, ``first_mismatch``, ``codec_count`` (as
    validate_rvq_phase), ``frames`` (whole frames), ``dropped_tokens`` (partial-frame tokens),
    ``end_reason``, ``upper_range_tokens`` (codec ids >= 4096), ``non_codec_tokens`` (ids that are
    neither codec nor ``<audiogen_end>``), ``generated_tokens``, ``decodable`` (at least one whole
    frame and the whole-frame stream is in phase; the reference refuses anything else),
    ``decoded_frames`` (what decode keeps: at most 500) and ``seconds`` of audio that yields.
    """
    codec_ids = vocab.codec_ids(token_ids)
    report = validate_rvq_phase(codec_ids)
    frames, dropped = divmod(len(codec_ids), NUM_PHASES)
    whole = validate_rvq_phase(codec_ids[: frames * NUM_PHASES])
    decodable = frames > 0 and whole["phase_valid"]
    decoded_frames = min(frames, MAX_TTA_FRAMES) if decodable else 0
    upper_start = NUM_PHASES * XCODEC1_CODEBOOK_SIZE  # 4096
    report.update(
        frames=frames,
        dropped_tokens=dropped,
        end_reason=end_reason,
        upper_range_tokens=sum(1 for c in codec_ids if c >= upper_start),
        non_codec_tokens=sum(1 for t in token_ids if t not in vocab.codec_of and t != vocab.end_tid),
        generated_tokens=len(token_ids),
        decodable=decodable,
        decoded_frames=decoded_frames,
        seconds=decoded_frames / FRAME_RATE_HZ,
    )
    return report
