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
from noise, the DiT had to copy the source through attention, and its copy of the harmonics
was where noise removal lost most. The source's latents are also prepended as the reference
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
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from training.checkpoint_writer import write_auk_checkpoint
from auk_app.auk.conditioner import fuse_hidden_states
from auk_app.demo.minilm import MiniLMConditioner
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.sampler import source_origin
from training.codec import CODEC_CONFIG, DIT_DIM_HEAD, build_codec, fit_statistics
from auk_app.auk.configs import HOP
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
# nearer the source than training did: over 20 held-out sentences speech noise removal gained
# +5.8 dB at 0.005 and +5.6 at 0.02 (an earlier source-start model: +6.0 and +5.9).
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
# Volume, pitch and denoise get 3 shares in 10 each, text to tone one. With pitch at one in 4, an
# earlier model moved tones by only 2/3 of the interval; its extra shares came from text to tone,
# which the 4-semitone F0 circle keeps in tune with one share (it came out a semitone flat
# before). A second text-to-tone share was tried with the 1-semitone circle alone and not shipped:
# tone volume edits overshot (±6 dB by 1.8, ±12 dB by 3.5), the fundamental loud as if pulled
# towards the -6 dBFS of the sines.
TRAIN_TASKS = ("volume", "volume", "volume", "pitch", "pitch", "pitch", "denoise", "denoise", "denoise", "tone")
EMA_DECAY = 0.998
EDITED_WEIGHT = 10.0  # on log F0 and its circles, and on the harmonics present in pitch and tone examples
# Noise removal's loss lies in the harmonics its target has (copied from the noisy clip): the
# model's copy cost speech 1.4 dB of the +6.4 dB its target decodes to, so they weigh 3× more there.
# Volume edits' harmonics weigh as much: at EDITED_WEIGHT, beside denoise's 30× copies, a flow from
# the source stopped upward gains near +9 dB (+12 asked, +8.9 given).
PRESENT_HARMONIC_WEIGHTS = {"volume": 30.0, "denoise": 30.0}
# The edits that move the noise bands weigh them 10 times (1 elsewhere): at 1, beside the 30×
# harmonics, they were 4 % of a denoise example's loss and speech denoise stopped at +5.8 dB.
# Volume edits move them too: left at 1 there beside denoise's 10 (in a run with a tail), -12 dB
# on tones came out 3.4 to 6 dB short.
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
        # from the noisy analysis where noise hides a harmonic or moves YIN) taught the
        # model to make them up rather than copy them: F0 a semitone flat, the
        # fundamental 10..19 dB loud. Clean harmonics at the noisy F0 and voicing (a target
        # that decodes to +7.1 dB on held-out speech, this one to +6.4), 2,000 steps on from
        # the shipped state, made noise removal a loss: -4.3 dB on speech, -5.8 on tones.
        clean = codec.encode(torch.from_numpy(example.target)[None])[0]
        item["target"] = item["ref"].clone()
        item["target"][:, codec.noise_channels] = clean[:, codec.noise_channels]
    else:
        item["target"] = codec.encode(torch.from_numpy(example.target)[None])[0]
    return item


_worker_codec = None


def _start_worker(codec_state: dict) -> None:
    global _worker_codec
    # One thread per process, OpenBLAS's too: its threads (one per core in every process) spun
    # against each other and made two processes slower than one (0.08 s per analysis, not 0.035).
    threadpool_limits(1)
    torch.set_num_threads(1)
    _worker_codec = build_codec()
    _worker_codec.load_state_dict(codec_state)


def _encode_range(dataset: ProceduralDataset, start: int, stop: int) -> list[dict]:
    """The items with numpy arrays, which travel by value: tensors travel as shared-memory file
    descriptors, and 6,000 long clips' ran out of them (the pool then hung)."""
    with torch.inference_mode():
        items = [encode_example(_worker_codec, dataset[i]) for i in range(start, stop)]
    return [{key: value.numpy() if torch.is_tensor(value) else value for key, value in item.items()} for item in items]


def encode_examples(codec, dataset: ProceduralDataset, workers: int) -> list[dict]:
    """Every example encoded, in order, by ``workers`` processes: making and analysing a clip is
    single-threaded numpy and espeak-ng, so one process left the other core idle (long clips:
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
    ``NOISE_WEIGHTS`` on the noise bands. The
    source's count too: with the target's alone, a harmonic that a lowered volume drops to the
    floor weighed 1, and downward gains stopped short (-12 dB asked, -8 given)."""
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


def main(argv=None) -> None:
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
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    codec = build_codec()
    dit = AuKTransformer(**DIT_CONFIG)
    fusion = torch.nn.ParameterDict(
        {"layer_weights": torch.nn.Parameter(torch.zeros(6)), "layer_scale": torch.nn.Parameter(torch.ones(1))}
    )
    params = list(dit.parameters()) + list(fusion.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.99), weight_decay=0.01)
    schedule = lambda step: min(1.0, step / 200) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step, args.steps) / args.steps)))  # noqa: E731
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    ema = {"dit": copy.deepcopy(dit).requires_grad_(False), "fusion": copy.deepcopy(fusion).requires_grad_(False)}
    generator = torch.Generator().manual_seed(args.seed)
    order = np.random.default_rng(args.seed)
    step = 0

    state_file = args.out / "state.pt"
    if state_file.exists():
        state = torch.load(state_file, weights_only=False)
        dit.load_state_dict(state["dit"])
        fusion.load_state_dict(state["fusion"])
        ema["dit"].load_state_dict(state["ema_dit"])
        ema["fusion"].load_state_dict(state["ema_fusion"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        generator.set_state(state["generator"])
        order.bit_generator.state = state["order"]
        step = state["step"]
        print(f"resumed at step {step}", flush=True)

    def save_state():
        torch.save(
            {
                "dit": dit.state_dict(), "fusion": fusion.state_dict(), "ema_dit": ema["dit"].state_dict(),
                "ema_fusion": ema["fusion"].state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "generator": generator.get_state(),
                "order": order.bit_generator.state, "step": step, "codec": codec.state_dict(),
            },
            state_file.with_suffix(".tmp"),
        )
        state_file.with_suffix(".tmp").replace(state_file)

    if state_file.exists():
        codec.load_state_dict(state["codec"])  # the statistics the weights were trained with
    else:
        fit_statistics(codec, [ex.source if ex.source is not None else ex.target
                               for ex in ProceduralDataset(args.seed + 1, args.stat_clips)])
    conditioner, text_cache, items, items_are_long = None, {}, [], None

    def encode_phase(long: bool) -> list[dict]:
        """The phase's examples, kept in the run directory: a resumed run would otherwise spend
        about 5 minutes encoding the long clips again."""
        nonlocal conditioner
        seconds, seed = (LONG_SECONDS, args.seed + 2) if long else (SHORT_SECONDS, args.seed)
        kept = args.out / f"{'long' if long else 'short'}-examples-{args.examples}-seed{seed}.pt"
        if kept.exists():
            saved = torch.load(kept, weights_only=False)
            if "task" not in saved["items"][0]:  # kept by an older train_dit, which stored loss weights
                raise SystemExit(f"{kept} was encoded by an older train_dit (its examples name no task): "
                                 "delete it, or train into a new --out.")
            text_cache.update(saved["text"])
            print(f"loaded {len(saved['items'])} encoded examples of {seconds} s from {kept}", flush=True)
            return saved["items"]
        encoded = encode_examples(codec, ProceduralDataset(seed, args.examples, TRAIN_TASKS, seconds), args.threads)
        conditioner = conditioner or MiniLMConditioner.from_pretrained()
        with torch.inference_mode():
            for text in sorted({item["text"] for item in encoded} - text_cache.keys()):
                layers, _ = conditioner.hidden_states(text)
                text_cache[text] = torch.stack([h[0] for h in layers])  # [6, nt, 384]
        # Sorted by length, so that a batch (a run of neighbours) pads little: a step takes about
        # half the time of one on random batches of uniformly drawn lengths (0.47 s, was 0.85).
        encoded.sort(key=lambda item: item["target"].shape[0])
        torch.save({"items": encoded, "text": text_cache}, kept.with_suffix(".tmp"))
        kept.with_suffix(".tmp").replace(kept)
        print(f"encoded {len(encoded)} examples of {seconds} s, {len(text_cache)} instructions "
              f"at {(time.perf_counter() - started) / 60:.1f} min", flush=True)
        return encoded

    running = []
    with (args.out / "log.jsonl").open("a") as log:
        while step < args.steps + args.tail and time.perf_counter() - started < args.minutes * 60:
            long = step >= args.steps // 2
            if long != items_are_long:
                items, items_are_long = encode_phase(long), long
            size = args.batch // 2 if long else args.batch
            start = int(order.integers(len(items) - size + 1))
            batch = collate(items[start : start + size], text_cache)
            drop = bool(torch.rand(1, generator=generator) < DROP_BOTH)
            loss = flow_loss(dit, fusion, batch, generator, drop, loss_weights(codec, batch))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            with torch.no_grad():
                for live, avg in ((dit, ema["dit"]), (fusion, ema["fusion"])):
                    for p, q in zip(live.parameters(), avg.parameters()):
                        q.lerp_(p, 1 - EMA_DECAY)
            running.append(loss.item())
            if step % 25 == 0:
                entry = {"step": step, "loss": float(np.mean(running)), "lr": scheduler.get_last_lr()[0],
                         "minutes": (time.perf_counter() - started) / 60}
                log.write(json.dumps(entry) + "\n")
                log.flush()
                print(entry, flush=True)
                running.clear()
            if step % 250 == 0:
                save_state()
    save_state()
    print(f"stopped at step {step} after {(time.perf_counter() - started) / 60:.1f} min", flush=True)

    if args.export:
        write_auk_checkpoint(
            args.export, layout="assembled", dit=ema["dit"], dit_config=DIT_CONFIG, vae=codec, vae_config=CODEC_CONFIG,
            layer_weights=ema["fusion"]["layer_weights"].detach(), layer_scale=ema["fusion"]["layer_scale"].detach(),
            name=DEMO_NAME, variant="base", text_encoder=TEXT_ENCODER, defaults=DEMO_DEFAULTS,
            capabilities=CAPABILITIES,
        )
        print(f"exported {args.export}", flush=True)


if __name__ == "__main__":
    main()
