"""Train AuK-Tiny, the embedded demo model: AuKTransformer on the harmonic-plus-noise codec.

    python -m training.train_dit --out runs/demo --export assets/AuK-Tiny   # 82.5 min on 2 CPU cores

Seeded and resumable: the run directory keeps the latest training state (``state.pt``, every
250 steps), each half's encoded examples and ``log.jsonl`` (one loss line per 25 steps).
``--minutes`` bounds an invocation from its start, encoding included, so on a slow machine the
run ends before ``--steps`` + ``--tail`` (on two CPU cores, 5,800 to 6,000 steps, at or near
the end of the cosine); rerunning the same command continues from the saved step, and a plan at
or below the saved step just exports the saved averaged weights.

The flow starts at the source: x_t = (1-t)·x0 + t·target with t uniform, where x0 is the source
clip's latents frame for frame (frames past its whole hops, past the clip and without a clip
are zeros) plus ``START_NOISE`` of Gaussian noise, and the model predicts target - x0. Every edit
is then a change within each frame, as speech-enhancement flows start from the noisy mix;
from noise, the DiT has to copy the source through attention, and its copy of the harmonics
is where noise removal loses most. The source's latents are also prepended as the reference
(as in AuK), and 10 % of batches drop text and reference together. Targets are the codec's
latents of the target audio; a pitch target is the source's latents with F0 moved by the
interval (speech has no other rendering), and a denoise target is the noisy source's latents
with the clean noise bands (see `encode_example`). The loss weighs log F0 and its circles
``EDITED_WEIGHT`` times, and by task the harmonics the source or the target has
(``PRESENT_HARMONIC_WEIGHTS``), the other harmonics (``ABSENT_HARMONIC_WEIGHTS``) and the
noise bands (``NOISE_WEIGHTS``).
An exponential moving average of the weights (decay 0.998) is what gets exported.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import multiprocessing
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from training.checkpoint_writer import write_auk_checkpoint
from auk_app.auk.conditioner import fuse_hidden_states
from auk_app.demo.harmonic_codec import HarmonicNoiseCodec
from auk_app.demo.minilm import MiniLMConditioner
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.sampler import source_origin
from training.codec import CODEC_CONFIG, DIT_DIM_HEAD, build_codec, fit_statistics
from auk_app.config import HOP
from training.data import Example, ProceduralDataset

DIT_CONFIG = {
    "dim": 256,
    "heads": 4,
    "dim_head": DIT_DIM_HEAD,
    "ff_mult": 2.0,
    "latent_dim": build_codec().latent_dim,
    "text_hidden_dim": 384,
    "num_layers": 1,
    "num_single_layers": 3,
    "attn_mask_enabled": True,
}
DEMO_NAME = "AuK-Tiny (demo)"
START_NOISE = 0.02  # of the flow's start in training, around the source's latents
# Guidance overshoots the parametric edits (speech volume +4..8 dB at cfg 1). Sampling starts
# nearer the source than training does: over 20 held-out sentences speech noise removal gains
# +5.8 dB at 0.005 and +5.6 at 0.02.
DEMO_DEFAULTS = {"nfe": 16, "cfg": 0.0, "sway": -1.0, "noise_scale": 0.005, "start": "source"}
TEXT_ENCODER = {"kind": "minilm", "name": "sentence-transformers/all-MiniLM-L6-v2"}
# Two halves: many short clips teach the edits and the alignment cheaply, then clips as long as
# held-out speech (up to 6 s) at half the batch, which keeps a step's cost about the same.
SHORT_SECONDS = (0.5, 3.0)
LONG_SECONDS = (0.5, 6.0)
# What the demo is trained for (its examples below): the app warns before any other task, or Chinese,
# and edits a recording longer than its longest training clip in windows of that length.
CAPABILITIES = {"tasks": ["volume", "pitch", "enhance:Remove noise", "sine_tone"], "languages": ["en"],
                "max_clip_seconds": LONG_SECONDS[1]}
DROP_BOTH = 0.1
# Volume, pitch and denoise get 3 shares in 10 each, text to tone one. Pitch at one share in 4
# moves tones by only 2/3 of the interval. One text-to-tone share is enough: the 4-semitone F0
# circle keeps it in tune (with the 1-semitone circle alone it comes out a semitone flat). With
# two shares and the 1-semitone circle alone, tone volume edits overshoot (±6 dB by 1.8, ±12 dB
# by 3.5), the fundamental loud as if pulled towards the -6 dBFS of the sines.
TRAIN_TASKS = ("volume", "volume", "volume", "pitch", "pitch", "pitch", "denoise", "denoise", "denoise", "tone")
EMA_DECAY = 0.998
EDITED_WEIGHT = 10.0  # on log F0 and its circles, and on the harmonics present in pitch and tone examples
# Noise removal's loss lies in the harmonics its target has (copied from the noisy clip): the
# model's copy costs speech 1.4 dB of the +6.4 dB its target decodes to, so they weigh 3× more there.
# Volume edits' harmonics weigh as much: at EDITED_WEIGHT, beside denoise's 30× copies, a flow from
# the source stops upward gains near +9 dB (+12 asked, +8.9 given).
PRESENT_HARMONIC_WEIGHTS = {"volume": 30.0, "denoise": 30.0}
# The edits that move the noise bands weigh them 10 times (1 elsewhere): at 1, beside the 30×
# harmonics, they are 4 % of a denoise example's loss and speech denoise stops at +5.8 dB.
# Volume edits move them too: left at 1 there beside denoise's 10 (in a run with a tail), -12 dB
# on tones comes out 3.4 to 6 dB short.
NOISE_WEIGHTS = {"volume": 10.0, "denoise": 10.0}
# Noise removal's absent harmonics weigh 3: made audible, they cost it 0.4 dB.
ABSENT_HARMONIC_WEIGHTS = {"denoise": 3.0}
PRESENT_MARGIN = 0.05  # log10 units above the codec's floor (1 dB): a harmonic there is present


def encode_example(codec, example: Example) -> dict:
    """Latents of one example as the pipeline will see them: the whole source encoded, with
    its ``n_samples // 480`` whole-hop frames valid, and a target of ceil(n_samples / 480) frames."""
    item = {"text": example.instruction, "task": example.task}
    if example.source is not None:
        item["ref"] = codec.encode(torch.from_numpy(example.source)[None])[0]
        item["ref_valid"] = example.n_samples // HOP
    if example.task == "pitch":
        item["target"] = codec.shift_pitch(item["ref"], example.params["semitones"])
    elif example.task == "denoise":
        # The noisy clip's latents with the clean clip's noise bands: denoising is then a
        # lowering of the noise bands only. Clean harmonics and F0 as targets (they differ
        # from the noisy analysis where noise hides a harmonic or moves YIN) teach the
        # model to make them up rather than copy them: F0 a semitone flat, the
        # fundamental 10..19 dB loud. Clean harmonics at the noisy F0 and voicing (a target
        # that decodes to +7.1 dB on held-out speech, this one to +6.4), 2,000 steps on from
        # the shipped state, make noise removal a loss: -4.3 dB on speech, -5.8 on tones.
        clean = codec.encode(torch.from_numpy(example.target)[None])[0]
        item["target"] = item["ref"].clone()
        item["target"][:, codec.noise_channels] = clean[:, codec.noise_channels]
    else:
        item["target"] = codec.encode(torch.from_numpy(example.target)[None])[0]
    return item


_worker_codec = None


def _start_worker(codec_state: dict) -> None:
    global _worker_codec
    # One thread per process, OpenBLAS's too: its threads (one per core in every process) spin
    # against each other and make two processes slower than one (0.08 s per analysis, not 0.035).
    threadpool_limits(1)
    torch.set_num_threads(1)
    _worker_codec = build_codec()
    _worker_codec.load_state_dict(codec_state)


def _encode_range(dataset: ProceduralDataset, start: int, stop: int) -> list[dict]:
    """The items with numpy arrays, which travel by value: tensors travel as shared-memory file
    descriptors, and 6,000 long clips' run out of them (the pool then hangs)."""
    with torch.inference_mode():
        items = [encode_example(_worker_codec, dataset[i]) for i in range(start, stop)]
    return [{key: value.numpy() if torch.is_tensor(value) else value for key, value in item.items()} for item in items]


def encode_examples(codec, dataset: ProceduralDataset, workers: int) -> list[dict]:
    """Every example encoded, in order, by ``workers`` processes: making and analysing a clip is
    single-threaded numpy and espeak-ng, so one process leaves the other core idle (long clips:
    10 to 12 minutes in one process, 5 in two). One worker is this process: spawning one costs
    seconds of imports."""
    if workers == 1:
        with torch.no_grad():  # not inference_mode: training saves these tensors for backward
            return [encode_example(codec, dataset[i]) for i in range(len(dataset))]
    bounds = np.linspace(0, len(dataset), 8 * workers + 1).astype(int)  # small shares: the processes end together
    with multiprocessing.get_context("spawn").Pool(workers, _start_worker, (codec.state_dict(),)) as pool:
        parts = pool.starmap(_encode_range, [(dataset, a, b) for a, b in zip(bounds[:-1], bounds[1:])])
    return [{key: torch.from_numpy(value) if isinstance(value, np.ndarray) else value for key, value in item.items()}
            for part in parts for item in part]


def collate(items: list[dict], text_cache) -> dict:
    """Pad a batch; masks are True where valid."""
    texts = [text_cache[item["text"]] for item in items]
    nt = max(t.shape[1] for t in texts)
    n = max(item["target"].shape[0] for item in items)
    n_ref = max((item["ref"].shape[0] for item in items if "ref" in item), default=0)
    latent_dim = items[0]["target"].shape[1]
    batch = len(items)
    out = {
        "text": torch.zeros(len(texts[0]), batch, nt, texts[0].shape[-1]),
        "c_mask": torch.zeros(batch, nt, dtype=torch.bool),
        "target": torch.zeros(batch, n, latent_dim),
        "mask": torch.zeros(batch, n, dtype=torch.bool),
        "ref": torch.zeros(batch, n_ref, latent_dim),
        "ref_mask": torch.zeros(batch, n_ref, dtype=torch.bool),
        "tasks": [item["task"] for item in items],
    }
    for i, (item, text) in enumerate(zip(items, texts)):
        out["text"][:, i, : text.shape[1]] = text
        out["c_mask"][i, : text.shape[1]] = True
        length = item["target"].shape[0]
        out["target"][i, :length] = item["target"]
        out["mask"][i, :length] = True
        if "ref" in item:
            out["ref"][i, : item["ref"].shape[0]] = item["ref"]
            out["ref_mask"][i, : item["ref_valid"]] = True
    return out


def present_harmonics(codec, latents: torch.Tensor) -> torch.Tensor:
    """Which harmonics of ``latents`` [b, n, L] sit above the codec's floor [b, n, harmonics]."""
    harmonic = codec.harmonic_channels
    log_amplitude = latents[..., harmonic] * codec.latent_std[harmonic] + codec.latent_mean[harmonic]
    return log_amplitude > math.log10(codec.floor) + PRESENT_MARGIN


def loss_weights(codec, batch: dict) -> torch.Tensor:
    """Per-element weights for the batch's target [b, n, L]: ``EDITED_WEIGHT`` on log F0 and its
    circles, and by each example's task its ``PRESENT_HARMONIC_WEIGHTS`` on the harmonics its
    source or its target has, its ``ABSENT_HARMONIC_WEIGHTS`` on the others (at the floor in both,
    they decode to silence however far off they are, unless the model lifts them) and its
    ``NOISE_WEIGHTS`` on the noise bands. The source's count too: with the target's alone, a
    harmonic that a lowered volume drops to the floor would weigh 1, and downward gains stop short
    (-12 dB asked, -8 given)."""
    target = batch["target"]

    def by_task(table: dict, default: float) -> torch.Tensor:
        return torch.tensor([table.get(task, default) for task in batch["tasks"]])[:, None, None]

    weights = torch.ones_like(target)
    weights[..., codec.pitch_channels] = EDITED_WEIGHT
    in_source = source_origin(present_harmonics(codec, batch["ref"]).float(), batch["ref_mask"], target.shape[1]) > 0
    present = present_harmonics(codec, target) | in_source
    weights[..., codec.harmonic_channels] = torch.where(
        present, by_task(PRESENT_HARMONIC_WEIGHTS, EDITED_WEIGHT), by_task(ABSENT_HARMONIC_WEIGHTS, 1.0))
    weights[..., codec.noise_channels] = by_task(NOISE_WEIGHTS, 1.0)
    return weights


def flow_loss(dit, fusion, batch, generator, drop: bool, weights: torch.Tensor) -> torch.Tensor:
    """Squared velocity error over valid target frames, a weighted mean with ``weights`` (per
    channel [L], or per element like the target)."""
    target, mask = batch["target"], batch["mask"]
    origin = source_origin(batch["ref"], batch["ref_mask"], target.shape[1])
    origin = origin + START_NOISE * torch.randn(target.shape, generator=generator)
    t = torch.rand(target.shape[0], generator=generator)
    x_t = (1 - t[:, None, None]) * origin + t[:, None, None] * target
    text = fuse_hidden_states(list(batch["text"]), fusion["layer_weights"], fusion["layer_scale"])
    velocity = dit(
        x_t, text, t, mask=mask, c_mask=batch["c_mask"], ref=batch["ref"], ref_mask=batch["ref_mask"],
        drop_audio_cond=drop, drop_text=drop,
    )
    error = ((velocity - (target - origin)).pow(2) * weights).sum(-1)
    return (error * mask).sum() / (weights.expand_as(target).sum(-1) * mask).sum()


def _at_least(minimum: int):
    """An argparse type for counts: a negative ``--tail`` would otherwise skip phases without a word."""

    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


def _parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/demo"))
    parser.add_argument("--export", type=Path, help="write the demo checkpoint here when done")
    parser.add_argument("--minutes", type=float, default=89.5,
                        help="wall-clock budget of one invocation from its start; the last step, the save and the export follow")
    parser.add_argument("--steps", type=_at_least(1), default=6000, help="planned steps (the LR schedule's length)")
    parser.add_argument("--tail", type=_at_least(0), default=0,
                        help="steps after the cosine at its final LR (a tenth of --lr), on the long clips; the shipped recipe has none")
    parser.add_argument("--examples", type=_at_least(1), default=6000, help="examples encoded for each half")
    parser.add_argument("--batch", type=_at_least(2), default=12, help="clips per step on short clips (half that on long ones)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=_at_least(1), default=2, help="torch threads, and processes encoding the examples")
    parser.add_argument("--stat-clips", type=_at_least(2), default=300,
                        help="clips the codec's statistics are fitted on")
    args = parser.parse_args(argv)
    if args.examples < args.batch:  # a step draws a run of --batch neighbours from them
        parser.error(f"--examples ({args.examples}) must be at least --batch ({args.batch})")
    return args


@dataclass
class Training:
    """Everything a run keeps in ``state.pt``: the live and averaged weights, the optimiser, the
    random streams, the step reached and the codec whose statistics the weights are trained with."""

    codec: HarmonicNoiseCodec
    dit: AuKTransformer
    fusion: torch.nn.ParameterDict
    ema: dict[str, torch.nn.Module]
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    generator: torch.Generator
    order: np.random.Generator
    step: int = 0

    @property
    def parameters(self) -> list[torch.nn.Parameter]:
        return list(self.dit.parameters()) + list(self.fusion.parameters())


def new_training(args: argparse.Namespace) -> Training:
    """A fresh run seeded by ``--seed``: AdamW under 200 warm-up steps and a cosine to a tenth of
    ``--lr`` over ``--steps``, and averaged weights starting as copies of the live ones."""
    codec = build_codec()
    dit = AuKTransformer(**DIT_CONFIG)
    fusion = torch.nn.ParameterDict(
        {"layer_weights": torch.nn.Parameter(torch.zeros(6)), "layer_scale": torch.nn.Parameter(torch.ones(1))}
    )
    params = list(dit.parameters()) + list(fusion.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.99), weight_decay=0.01)
    schedule = lambda step: min(1.0, step / 200) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step, args.steps) / args.steps)))  # noqa: E731
    ema = {"dit": copy.deepcopy(dit).requires_grad_(False), "fusion": copy.deepcopy(fusion).requires_grad_(False)}
    return Training(
        codec=codec, dit=dit, fusion=fusion, ema=ema, optimizer=optimizer,
        scheduler=torch.optim.lr_scheduler.LambdaLR(optimizer, schedule),
        generator=torch.Generator().manual_seed(args.seed), order=np.random.default_rng(args.seed),
    )


def resume(training: Training, state_file: Path) -> None:
    """Continue from the saved state: the weights, the optimiser, the random streams, the step and
    the codec's statistics."""
    state = torch.load(state_file, weights_only=False)
    training.dit.load_state_dict(state["dit"])
    training.fusion.load_state_dict(state["fusion"])
    training.ema["dit"].load_state_dict(state["ema_dit"])
    training.ema["fusion"].load_state_dict(state["ema_fusion"])
    training.optimizer.load_state_dict(state["optimizer"])
    training.scheduler.load_state_dict(state["scheduler"])
    training.generator.set_state(state["generator"])
    training.order.bit_generator.state = state["order"]
    training.step = state["step"]
    print(f"resumed at step {training.step}", flush=True)
    training.codec.load_state_dict(state["codec"])


def save_state(training: Training, state_file: Path) -> None:
    """Written beside the file and moved over it, so that a run stopped mid-write keeps the last state."""
    torch.save(
        {
            "dit": training.dit.state_dict(), "fusion": training.fusion.state_dict(),
            "ema_dit": training.ema["dit"].state_dict(), "ema_fusion": training.ema["fusion"].state_dict(),
            "optimizer": training.optimizer.state_dict(), "scheduler": training.scheduler.state_dict(),
            "generator": training.generator.get_state(), "order": training.order.bit_generator.state,
            "step": training.step, "codec": training.codec.state_dict(),
        },
        state_file.with_suffix(".tmp"),
    )
    state_file.with_suffix(".tmp").replace(state_file)


class EncodedExamples:
    """Each half's examples and the instructions' MiniLM states, kept in the run directory: a resumed
    run would otherwise spend about 5 minutes encoding the long clips again."""

    def __init__(self, args: argparse.Namespace, codec, started: float):
        self.args, self.codec, self.started = args, codec, started
        self.text: dict[str, torch.Tensor] = {}  # instruction: its hidden states [6, nt, 384]
        self._conditioner = None

    def half(self, long: bool) -> list[dict]:
        """The half's examples, sorted by length: loaded when kept, else encoded and kept."""
        seconds, seed = (LONG_SECONDS, self.args.seed + 2) if long else (SHORT_SECONDS, self.args.seed)
        kept = self.args.out / f"{'long' if long else 'short'}-examples-{self.args.examples}-seed{seed}.pt"
        if kept.exists():
            return self._load(kept, seconds)
        dataset = ProceduralDataset(seed, self.args.examples, TRAIN_TASKS, seconds)
        encoded = encode_examples(self.codec, dataset, self.args.threads)
        self._encode_instructions({item["text"] for item in encoded})
        # Sorted by length, so that a batch (a run of neighbours) pads little: a step takes about
        # half the time of one on random batches of uniformly drawn lengths (0.47 s against 0.85).
        encoded.sort(key=lambda item: item["target"].shape[0])
        torch.save({"items": encoded, "text": self.text}, kept.with_suffix(".tmp"))
        kept.with_suffix(".tmp").replace(kept)
        print(f"encoded {len(encoded)} examples of {seconds} s, {len(self.text)} instructions "
              f"at {(time.perf_counter() - self.started) / 60:.1f} min", flush=True)
        return encoded

    def _load(self, kept: Path, seconds: tuple[float, float]) -> list[dict]:
        saved = torch.load(kept, weights_only=False)
        if "task" not in saved["items"][0]:  # examples that store loss weights instead of their task
            raise SystemExit(f"{kept} was encoded by an older train_dit (its examples name no task): "
                             "delete it, or train into a new --out.")
        self.text.update(saved["text"])
        print(f"loaded {len(saved['items'])} encoded examples of {seconds} s from {kept}", flush=True)
        return saved["items"]

    def _encode_instructions(self, texts: set[str]) -> None:
        self._conditioner = self._conditioner or MiniLMConditioner.from_pretrained()
        with torch.inference_mode():
            for text in sorted(texts - self.text.keys()):
                layers, _ = self._conditioner.hidden_states(text)
                self.text[text] = torch.stack([h[0] for h in layers])  # [6, nt, 384]


def train_step(training: Training, items: list[dict], text_cache: dict, size: int) -> float:
    """One optimiser step on a run of ``size`` neighbouring examples, then the averaged weights
    move towards the live ones; returns the step's loss."""
    start = int(training.order.integers(len(items) - size + 1))
    batch = collate(items[start : start + size], text_cache)
    drop = bool(torch.rand(1, generator=training.generator) < DROP_BOTH)
    weights = loss_weights(training.codec, batch)
    loss = flow_loss(training.dit, training.fusion, batch, training.generator, drop, weights)
    training.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(training.parameters, 1.0)
    training.optimizer.step()
    training.scheduler.step()
    training.step += 1
    with torch.no_grad():
        for live, avg in ((training.dit, training.ema["dit"]), (training.fusion, training.ema["fusion"])):
            for p, q in zip(live.parameters(), avg.parameters()):
                q.lerp_(p, 1 - EMA_DECAY)
    return loss.item()


def train(training: Training, examples: EncodedExamples, args: argparse.Namespace, started: float) -> None:
    """Steps until ``--steps`` + ``--tail`` or ``--minutes``, short clips in the first half of
    ``--steps`` and long ones after; the mean loss goes to ``log.jsonl`` every 25 steps and the
    state to ``state.pt`` every 250 and at the end."""
    state_file, running, items, items_are_long = args.out / "state.pt", [], [], None
    with (args.out / "log.jsonl").open("a") as log:
        while training.step < args.steps + args.tail and time.perf_counter() - started < args.minutes * 60:
            long = training.step >= args.steps // 2
            if long != items_are_long:
                items, items_are_long = examples.half(long), long
            running.append(train_step(training, items, examples.text, args.batch // 2 if long else args.batch))
            if training.step % 25 == 0:
                entry = {"step": training.step, "loss": float(np.mean(running)),
                         "lr": training.scheduler.get_last_lr()[0], "minutes": (time.perf_counter() - started) / 60}
                log.write(json.dumps(entry) + "\n")
                log.flush()
                print(entry, flush=True)
                running.clear()
            if training.step % 250 == 0:
                save_state(training, state_file)
    save_state(training, state_file)
    print(f"stopped at step {training.step} after {(time.perf_counter() - started) / 60:.1f} min", flush=True)


def export(training: Training, directory: Path) -> None:
    """The averaged weights as the demo checkpoint, in the assembled layout the app reads."""
    ema = training.ema
    write_auk_checkpoint(
        directory, layout="assembled", dit=ema["dit"], dit_config=DIT_CONFIG, vae=training.codec,
        vae_config=CODEC_CONFIG, layer_weights=ema["fusion"]["layer_weights"].detach(),
        layer_scale=ema["fusion"]["layer_scale"].detach(), name=DEMO_NAME, variant="base",
        text_encoder=TEXT_ENCODER, defaults=DEMO_DEFAULTS, capabilities=CAPABILITIES,
    )
    print(f"exported {directory}", flush=True)


def main(argv=None) -> None:
    args = _parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    training = new_training(args)
    if (args.out / "state.pt").exists():
        resume(training, args.out / "state.pt")
    else:
        fit_statistics(training.codec, [ex.source if ex.source is not None else ex.target
                                        for ex in ProceduralDataset(args.seed + 1, args.stat_clips)])
    train(training, EncodedExamples(args, training.codec, started), args, started)
    if args.export:
        export(training, args.export)


if __name__ == "__main__":
    main()
