"""The edit check: did the result do what the instruction asked?

    from auk_app.check import check, rank
    result = check("将音量降低6分贝。", source, output, 24000)
    result.display()       # "asked −6 dB · got −5.9 dB ✓"
    result.to_manifest()   # {"task": "volume", "asked": -6.0, "got": -5.9, "unit": "dB", "tolerance": 1.0, "pass": True, …}
    best = rank(checks)[0]  # of several candidates

Targets come from ``targets`` (what the recogniser found in the instruction), numbers from
``measures`` (pyloudnorm, librosa's pYIN and trim), what the result kept of its source from ``kept``,
what it changed that was not asked from ``unasked``, the record and ranking from ``result``.
"""

from auk_app.check.checks import check
from auk_app.check.kept import keep_scores, keep_similarity
from auk_app.check.measures import Clip, SharedClip, warm_up
from auk_app.check.result import KEEP_MIN, EditCheck, rank, unmeasured
from auk_app.check.targets import MEASURED, UNMEASURED, Target, target_from_text, target_of

__all__ = [
    "KEEP_MIN", "MEASURED", "UNMEASURED", "Clip", "EditCheck", "SharedClip", "Target", "check", "keep_scores",
    "keep_similarity", "rank", "target_from_text", "target_of", "unmeasured", "warm_up",
]
