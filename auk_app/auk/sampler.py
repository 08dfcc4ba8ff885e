"""Explicit Euler integration of AuK's rectified flow, from noise (t=0) to data (t=1).

The batch dimension carries the CFG branches [conditional; unconditional], so one call
serves one request. The velocity is ``v_c + cfg·(v_c − v_u)`` (the F5-TTS form), blended here
from the two rows the DiT step returns; below ``cfg = 1e-5`` the unconditional branch is not run
at all. The request's conditioning is prepared once, so each Euler step is one DiT step; with the
serving pipeline's :class:`~auk_app.auk.step_graphs.StepGraphs` it is replayed from a CUDA graph
on CUDA.

A request's solve (:class:`Solve`: grid, state, blend, Euler update, progress) is separate from
what runs its DiT steps, so :class:`auk_app.auk.batching.StepBatcher` can step several requests
in one DiT call and still give each request this module's arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from auk_app.auk.configs import Recipe
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.step_graphs import StepGraphs
from auk_app.auk.step_reuse import StepCache, StepTally

CFG_OFF_BELOW = 1e-5


def build_time_grid(
    *,
    nfe: int,
    sway_sampling_coef: float | None,
    t_grid: Sequence[float] | torch.Tensor | None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The float32 time grid the sampler walks.

    An explicit ``t_grid`` wins over ``nfe`` and sway. Otherwise ``linspace(0, 1, nfe+1)``,
    reshaped by sway as ``t + s·(cos(π/2·t) − 1 + t)`` (s = −1 gives ``1 − cos(π t / 2)``,
    crowding steps near the noise end). Raises ValueError unless the grid is 1-D, finite,
    strictly increasing and has at least two points.
    """
    if t_grid is not None:
        grid = torch.as_tensor(t_grid, dtype=torch.float32, device=device)
    else:
        if isinstance(nfe, bool) or not isinstance(nfe, int) or nfe < 0:
            raise ValueError(f"AuK sampling needs a whole number of steps (nfe) of at least 1; got {nfe!r}")
        grid = torch.linspace(0, 1, nfe + 1, device=device, dtype=torch.float32)
        if sway_sampling_coef is not None:
            grid = grid + sway_sampling_coef * (torch.cos(torch.pi / 2 * grid) - 1 + grid)
    if grid.ndim != 1:
        raise ValueError(f"AuK sampling needs a 1-D time grid; got a tensor of shape {tuple(grid.shape)}")
    if not torch.isfinite(grid).all():
        raise ValueError(f"AuK sampling needs a finite time grid; got {grid.tolist()}")
    if grid.numel() < 2 or not bool((grid[1:] > grid[:-1]).all()):
        raise ValueError(
            f"AuK sampling needs a strictly increasing time grid with at least two points; got {grid.tolist()}"
        )
    return grid


def draw_noise(
    gen_frames: int,
    latent_dim: int,
    *,
    seed: int | None,
    generator: torch.Generator | None,
    device: torch.device,
    dtype: torch.dtype,
) -> torch.Tensor:
    """Initial noise [1, n, L] from the request's own generator; the global RNG is never seeded.

    A generator seeded with ``seed`` on the noise device draws exactly what
    ``torch.manual_seed(seed); torch.randn(...)`` draws there.
    """
    if generator is None and seed is not None:
        generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(gen_frames, latent_dim, generator=generator, device=device, dtype=dtype)[None]


def source_origin(ref: torch.Tensor, ref_mask: torch.Tensor | None, frames: int) -> torch.Tensor:
    """Where a flow trained from the source starts [b, frames, L]: the reference's valid frames
    (target frame i is source frame i), zeros past them and without a source."""
    if ref_mask is not None:
        ref = ref * ref_mask[..., None]
    origin = ref.new_zeros(ref.shape[0], frames, ref.shape[2])
    shared = min(frames, ref.shape[1])
    origin[:, :shared] = ref[:, :shared]
    return origin


@dataclass
class Solve:
    """One request's Euler solve, advanced one step at a time by whoever runs its DiT steps:
    :func:`sample_latents` alone, or :class:`auk_app.auk.batching.StepBatcher` beside other
    requests. Both apply the same blend and update here, so a request's arithmetic outside the
    DiT is the same whichever runs it.

    ``conditioning`` holds the :meth:`StepGraphs.stepper` arguments (text and reference
    already in the model's dtype); ``x`` [1, n, L] is the Euler state in the state dtype.
    ``guidance`` says, step by step, whether it runs both CFG branches; ``cache`` (a step cache,
    :mod:`~auk_app.auk.step_reuse`) lets a step take the previous one's velocity; ``tally``
    counts what the steps did.
    """

    conditioning: dict
    x: torch.Tensor
    grid: torch.Tensor
    cfg_strength: float
    guidance: tuple[bool, ...]
    model_dtype: torch.dtype
    on_step: Callable[[int, int], None] | None
    cache: StepCache | None = None
    tally: StepTally = field(default_factory=StepTally)
    index: int = 0
    _reusing: bool = False

    @property
    def guided(self) -> bool:
        """Whether the next step runs both CFG branches (rows [conditional; unconditional])."""
        return not self.finished and self.guidance[self.index]

    @property
    def steps(self) -> int:
        return self.grid.numel() - 1

    @property
    def finished(self) -> bool:
        return self.index >= self.steps

    def model_x(self) -> torch.Tensor:
        """The DiT input for the next step: the state in the model's dtype."""
        return self.x.to(self.model_dtype)

    def time(self) -> torch.Tensor:
        """The next step's flow time, 0-d in the state dtype."""
        return self.grid[self.index].to(self.x.dtype)

    def reused(self) -> torch.Tensor | None:
        """The velocity the next step takes from the previous one without running the DiT (the step
        cache's verdict), or None: the step runs the DiT, and its rows go to :meth:`advance`."""
        v = None if self.cache is None else self.cache.reuse(self.index, self.steps, self.model_x(), self.time())
        self._reusing = v is not None
        return v

    def advance(self, v: torch.Tensor) -> None:
        """Blend the step's velocity [branches, n, L] (or take what :meth:`reused` gave) and take the
        Euler step, then report it; raising in ``on_step`` stops the solve (the state has moved, the
        caller drops it)."""
        if self._reusing:
            self.tally.reused_steps += 1
        else:
            self.tally.dit_steps += 1
            if self.guided:
                self.tally.guided_steps += 1
                v_c, v_u = v.chunk(2)
                v = v_c + self.cfg_strength * (v_c - v_u)
            if self.cache is not None:
                self.cache.keep(v)
        self._reusing = False
        i = self.index
        self.x = self.x + (self.grid[i + 1] - self.grid[i]).to(self.x.dtype) * v
        self.index = i + 1
        if self.on_step is not None:
            self.on_step(self.index, self.steps)

    def result(self) -> torch.Tensor:
        if not math.isfinite(float(self.x.abs().max())):
            raise FloatingPointError("AuK sampling produced non-finite latents")
        return self.x


@dataclass(frozen=True)
class SolveSpec:
    """What one request's solve needs: :func:`sample_latents`' arguments, checked and held as one
    value, so the pipeline, the step batcher and :func:`start_solve` pass it on whole."""

    text: torch.Tensor
    c_mask: torch.Tensor | None
    ref: torch.Tensor
    ref_mask: torch.Tensor | None
    gen_frames: int
    nfe: int = 32
    cfg_strength: float = 1.0
    sway_sampling_coef: float | None = None
    t_grid: Sequence[float] | None = None
    seed: int | None = None
    generator: torch.Generator | None = None
    noise_scale: float = 1.0
    origin: torch.Tensor | None = None
    latent_dim: int | None = None
    device: torch.device | str | None = None
    dtype: torch.dtype | None = None
    on_step: Callable[[int, int], None] | None = None
    step_cache: float = 0.0  # the step cache's threshold; 0: every step runs the DiT
    cfg_interval: tuple[float, float] | None = None  # guidance only at steps whose t lies within; None: all
    tally: StepTally | None = None  # filled with what the steps did

    @classmethod
    def of(cls, recipe: Recipe, **conditioning) -> SolveSpec:
        """A run's spec: its sampling ``recipe`` (nfe, cfg, sway, grid, noise scale, step cache, guidance
        interval) and ``conditioning`` (the text, reference, frames, seed, device and progress of the run)."""
        return cls(nfe=recipe.nfe, cfg_strength=recipe.cfg, sway_sampling_coef=recipe.sway, t_grid=recipe.t_grid,
                   noise_scale=recipe.noise_scale, step_cache=recipe.step_cache, cfg_interval=recipe.cfg_interval,
                   **conditioning)


def start_solve(dit: AuKTransformer, spec: SolveSpec) -> Solve:
    """A request's solve at t=0: time grid, initial noise, inputs in the model's dtype; every
    argument error is raised here, before any step."""
    param = next(dit.parameters())
    device = torch.device(spec.device) if spec.device is not None else param.device
    latent_dim = spec.latent_dim or dit.latent_dim
    state_dtype = spec.dtype or torch.float32
    if spec.gen_frames < 1:
        raise ValueError(f"AuK sampling needs at least one target frame; got gen_frames={spec.gen_frames}")

    grid = build_time_grid(nfe=spec.nfe, sway_sampling_coef=spec.sway_sampling_coef, t_grid=spec.t_grid, device=device)
    noise = draw_noise(spec.gen_frames, latent_dim, seed=spec.seed, generator=spec.generator, device=device,
                       dtype=state_dtype)
    x = spec.noise_scale * noise
    if spec.origin is not None:
        x = x + spec.origin.to(device=device, dtype=state_dtype)
    model_dtype = param.dtype
    conditioning = dict(
        text=spec.text.to(device=device, dtype=model_dtype), c_mask=spec.c_mask,
        ref=spec.ref.to(device=device, dtype=model_dtype), ref_mask=spec.ref_mask, target_frames=spec.gen_frames,
    )  # fmt: skip
    low, high = spec.cfg_interval or (-math.inf, math.inf)
    guidance = tuple(spec.cfg_strength >= CFG_OFF_BELOW and low <= t <= high for t in grid[:-1].tolist())
    cache = StepCache(dit.modulated_input, spec.step_cache) if spec.step_cache > 0 else None
    return Solve(conditioning=conditioning, x=x, grid=grid, cfg_strength=spec.cfg_strength, guidance=guidance,
                 model_dtype=model_dtype, on_step=spec.on_step, cache=cache, tally=spec.tally or StepTally())


def sample_latents(dit: AuKTransformer, *, graphs: StepGraphs | None = None, **spec: Any) -> torch.Tensor:
    """Integrate the flow and return the target latents at t=1, [1, gen_frames, L]: the seed
    contract's entry, taking :class:`SolveSpec`'s fields as keywords (``text``, ``c_mask``, ``ref``,
    ``ref_mask``, ``gen_frames``, ``nfe``, ``cfg_strength``, ``sway_sampling_coef``, ``t_grid``,
    ``seed``, ``generator``, ``latent_dim``, ``device``, ``dtype``, and ``noise_scale``, ``origin``,
    ``on_step``, ``step_cache``, ``cfg_interval``, ``tally``); an unknown one is a TypeError.

    ``text`` [1, nt, T] and ``ref`` [1, np, L] are cast to the DiT's parameter dtype; the noise and
    the Euler state stay in ``dtype`` (float32 by default: bf16 noise moves a 32-step CFG trajectory
    by 0.025 relative MSE, ~17× what bf16 weights cost). The velocity keeps the model's dtype until
    it is added to the state, as in the reference. ``noise_scale`` multiplies the initial noise: a
    sampling temperature (1 is the reference's; below 1 the draws gather towards the conditional
    mean, as Matcha-TTS's temperature does). ``origin`` [1, gen_frames, L], when given, is added to
    it: the flow starts there, not at pure noise (see ``source_origin``). ``on_step(done, total)``
    runs after every Euler step; raising there stops the solve. The module's text cache is neither
    used nor touched: the request's state is its step context. ``graphs`` (the serving pipeline's,
    for this DiT) runs the steps as CUDA graphs on CUDA, at its compute dtype; without it each step
    is a plain ``prepare``/``step`` under the caller's autocast.
    """
    return solve(dit, SolveSpec(**spec), graphs)


def solve(dit: AuKTransformer, spec: SolveSpec, graphs: StepGraphs | None = None) -> torch.Tensor:
    """:func:`sample_latents` of a spec: one request's steps, alone on ``dit``."""
    run = start_solve(dit, spec)
    steppers = {}  # by guidance: a guidance interval switches between the two
    with torch.inference_mode():
        while not run.finished:
            v = run.reused()
            if v is None:
                guided = run.guided
                if guided not in steppers:
                    steppers[guided] = (graphs.stepper(**run.conditioning, cfg_infer=guided) if graphs is not None
                                        else _plain_step(dit, run.conditioning, guided))
                v = steppers[guided](run.model_x(), run.time())
            run.advance(v)
    return run.result()


def _plain_step(dit: AuKTransformer, c: dict, guided: bool) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    ctx = dit.prepare(c["text"], target_frames=c["target_frames"], c_mask=c["c_mask"], ref=c["ref"],
                      ref_mask=c["ref_mask"], cfg_infer=guided)
    return lambda x, time: dit.step(x, time, ctx)
