"""A recording longer than the model's window, cut into windows the model was trained on, and the
windows' latents joined back into one recording.

Windows (:func:`plan_windows`): the fewest windows that cover the recording with at least
``overlap`` shared between neighbours, spread evenly from its start to its end. Each starts on a
latent frame, so a window's frame j is the recording's frame ``start // hop + j``, and each is a
whole window long except the last, which ends with the recording (at most a hop shorter): every
window is a clip as long as those the model was trained on, and all of them fall in one shape
bucket of the step batcher.

Joins (:class:`LatentJoiner`): in the latent domain, before anything is decoded. Each seam is a
linear crossfade over ``overlap`` frames in the middle of the span two neighbours share; every
other frame comes from one window. Decoded once (:mod:`auk_app.auk.stream_decode`), the waveform
then runs through every seam continuously: the decoder's receptive field, the demo codec's
oscillator phase and its noise all see one recording, where two separately decoded windows would
meet with their oscillators out of phase and their noise started afresh.

Linear, not equal-power: in their shared span two windows hold two edits of the same frames,
which agree up to the model's noise (correlated values), and weights that sum to one keep what
they agree on as it is. Equal-power weights (cos, sin) suit the power of uncorrelated signals;
on values two windows share they sum to √2 in the seam's middle: 41 % more of a latent both
windows agree on (for the demo codec's log amplitudes, a level bump of several dB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

MAX_OVERLAP_SHARE = 3  # an overlap of at most a third of the window keeps each seam inside two windows only


@dataclass(frozen=True)
class WindowPlan:
    """Where the windows of one recording lie, in samples and latent frames at the model's rate."""

    n_samples: int
    hop: int
    windows: tuple[tuple[int, int], ...]  # [start, stop) of each window, in samples
    crossfade: int  # frames of each seam
    seams: tuple[int, ...]  # the recording frame where each seam's crossfade begins; one per neighbour pair

    @property
    def frames(self) -> int:
        """Latent frames of the whole recording (a partial last hop counts)."""
        return math.ceil(self.n_samples / self.hop)

    def first_frame(self, index: int) -> int:
        """The recording frame of window ``index``'s first frame."""
        return self.windows[index][0] // self.hop

    def window_frames(self, index: int) -> int:
        start, stop = self.windows[index]
        return math.ceil((stop - start) / self.hop)


def plan_windows(n_samples: int, *, window: int, overlap: int, hop: int) -> WindowPlan:
    """The windows of a recording of ``n_samples``: ``window`` and ``overlap`` in samples, rounded
    down to whole hops; one window when the recording fits in it. Raises ValueError for an overlap
    over a third of the window (a seam would then reach a third window)."""
    frames, window_frames, overlap_frames = math.ceil(n_samples / hop), window // hop, overlap // hop
    if window_frames < 1 or overlap_frames < 1 or MAX_OVERLAP_SHARE * overlap_frames > window_frames:
        raise ValueError(
            f"windows need an overlap of at least one hop and at most a third of the window; got a window of "
            f"{window} and an overlap of {overlap} samples at a hop of {hop}"
        )
    if n_samples <= window_frames * hop:
        return WindowPlan(n_samples, hop, ((0, n_samples),), overlap_frames, ())
    last_start = math.ceil((n_samples - window_frames * hop) / hop)  # frames: the last window ends with the recording
    count = math.ceil((frames - overlap_frames) / (window_frames - overlap_frames))
    while True:  # rounding the starts to frames can shave a frame off an overlap: then one more window
        starts = [-(-k * last_start // (count - 1)) for k in range(count)]
        if all(b - a <= window_frames - overlap_frames for a, b in zip(starts, starts[1:])):
            break
        count += 1
    windows = tuple((s * hop, min(n_samples, (s + window_frames) * hop)) for s in starts)
    # Each seam sits in the middle of what its two windows share.
    seams = tuple((b + a + window_frames - overlap_frames) // 2 for a, b in zip(starts, starts[1:]))
    return WindowPlan(n_samples, hop, windows, overlap_frames, seams)


class LatentJoiner:
    """Joins the windows' latents, given in window order, into the recording's: :meth:`add` returns
    the recording's frames that no later window changes, and keeps only the next seam's frames."""

    def __init__(self, plan: WindowPlan):
        self.plan = plan
        self.added = 0
        self._tail: torch.Tensor | None = None  # the previous window's frames under the next seam

    def add(self, latents: torch.Tensor) -> torch.Tensor:
        """The next window's latents [frames, L] → the recording's next final frames [m, L]."""
        plan, index = self.plan, self.added
        if index >= len(plan.windows):
            raise ValueError(f"the plan has {len(plan.windows)} windows; all of them were added")
        if latents.shape[0] < plan.window_frames(index):
            raise ValueError(f"window {index} needs {plan.window_frames(index)} frames; got {latents.shape[0]}")
        first, fade = plan.first_frame(index), plan.crossfade
        pieces, begin = [], 0
        if index > 0:
            begin = plan.seams[index - 1] - first
            weight = ((torch.arange(fade, dtype=torch.float64) + 0.5) / fade).to(latents.dtype)[:, None]
            pieces.append(self._tail * (1 - weight) + latents[begin : begin + fade] * weight)
            begin += fade
        if index + 1 < len(plan.windows):
            end = plan.seams[index] - first
            self._tail = latents[end : end + fade].clone()
        else:
            end, self._tail = plan.frames - first, None
        pieces.append(latents[begin:end])
        self.added += 1
        return torch.cat(pieces)
