"""Step caching: a step of a long solve may reuse the previous step's velocity instead of running
the DiT, where the DiT's input has hardly moved since.

The measure is the caching literature's (TeaCache, SeaCache): the relative L1 change, between two
steps, of the first block's modulated input (:meth:`AuKTransformer.modulated_input`: the target
latents' embedding under the time's shift and scale). It depends on the latents and the time alone,
so it is the same in both CFG rows and whatever else shares the step. A step reuses when that change
is below the run's threshold, and never twice in a row, never the first step (nothing to reuse) or
the last (it lands on the result). What is reused is the blended velocity, so a guided step may
reuse an unguided one and the other way round.

:class:`StepTally` counts what a solve did (DiT steps computed, reused, guided, shared with other
requests), for the run's record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

import torch

Probe = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x, t) -> the first block's modulated input


@dataclass
class StepTally:
    """What one solve's steps did; ``dit_steps + reused_steps`` is the step count."""

    dit_steps: int = 0  # steps that ran the DiT
    reused_steps: int = 0  # steps that took the previous step's velocity
    guided_steps: int = 0  # DiT steps that ran both CFG branches
    shared_steps: int = 0  # DiT steps shared with other requests (StepBatcher)

    def add(self, counts: Mapping[str, int]) -> None:
        """Count another solve's steps in (a whole recording's windows sum theirs); a count it does
        not keep is left out."""
        for name in (f.name for f in fields(self)):
            setattr(self, name, getattr(self, name) + counts.get(name, 0))


def relative_change(now: torch.Tensor, before: torch.Tensor) -> float:
    """mean |now − before| / mean |before|, in float32."""
    before = before.float()
    return float((now.float() - before).abs().mean() / before.abs().mean().clamp_min(1e-12))


class StepCache:
    """One solve's step cache: :meth:`reuse` before each step says whether it may take the previous
    velocity, :meth:`keep` after a computed step stores it. ``threshold`` 0 never reuses."""

    def __init__(self, probe: Probe, threshold: float):
        self.probe = probe
        self.threshold = threshold
        self._seen: torch.Tensor | None = None  # the modulated input of the last computed step
        self._velocity: torch.Tensor | None = None  # that step's blended velocity
        self._reused_last = False

    def reuse(self, index: int, steps: int, x: torch.Tensor, time: torch.Tensor) -> torch.Tensor | None:
        """The velocity step ``index`` of ``steps`` takes from the previous step, or None: run the DiT."""
        if self.threshold <= 0:
            return None
        if self._reused_last or index == steps - 1:
            self._reused_last, self._seen = False, None if index == steps - 1 else self.probe(x, time)
            return None
        seen = self.probe(x, time)
        close = self._seen is not None and relative_change(seen, self._seen) < self.threshold
        self._reused_last = close and self._velocity is not None
        if self._reused_last:
            return self._velocity
        self._seen = seen
        return None

    def keep(self, velocity: torch.Tensor) -> None:
        """The blended velocity of a step that ran the DiT."""
        self._velocity = velocity
