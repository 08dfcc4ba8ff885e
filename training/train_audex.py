"""Train Audex-Tiny: a small Audex thinker (``ArceeForCausalLM``, the release's class and layout)
over the event codec, on captioned procedural sounds.

    python -m training.train_audex --out runs/audex --export assets/Audex-Tiny

Seeded and resumable: ``--out`` keeps ``state.pt`` (weights, averaged weights, optimizer, step);
the batch of step ``s`` is drawn from a generator seeded with ``(seed, s)``, so a resumed run sees
the batches an uninterrupted one would. An invocation stops after ``--minutes`` of wall clock (or
at ``--steps``, or ``--pause-after`` steps) and, with ``--export``, writes the averaged weights in
the Audex snapshot layout.

Each example is the app's own prompt (``build_tta_cond_prompt``; 15 % the length-matched null
prompt, for CFG) followed by the scene's codec tokens, frame-major, and ``<audiogen_end>``. The
loss is over the generated tokens only, and each position's softmax is over the 1,024 codes of its
RVQ phase and ``<audiogen_end>`` — what the phase mask allows at sampling, less the end at phases
1–3, where it is only ever a wrong answer — which
costs a quarter of a full-vocabulary head. The price, deliberately kept visible: the head never
learns to avoid other phases' codes, so sampling without the mask gives invalid streams. A
segment's first frame (copied from the caption) and the end weigh ``HEADER_WEIGHT`` times a
later frame (a copy of the frame before), which would otherwise drown them.

The codec tokens' embedding and head rows are trained as sums of digit rows (:class:`DigitRows`:
one row per codebook, digit place and digit), because a code is three digits of the event codec
(``auk_app.demo.event_codec``): a code training never drew (a held-out frequency's digits in one
code) still gets the sum of rows that were trained. The export writes the sums into the plain
``embed_tokens`` and ``lm_head`` of the release's layout.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers
from transformers import ArceeForCausalLM, PreTrainedTokenizerFast

from auk_app.audex.prompt import AUDEX_SYSTEM_PROMPT, build_tta_cond_prompt, build_tta_null_prompt
from auk_app.audex.thinker import arcee_config
from auk_app.audex.tta import AUDEX_AUDIOCODEC_VOCAB_SIZE
from auk_app.demo.audex_snapshot import PUNCTUATION, snapshot_paths, thinker_config
from auk_app.demo.event_codec import (
    CODEBOOK_SIZE, DIGIT_CODES, DIGITS_PER_CODE, HOP, NUM_CODEBOOKS, SAMPLE_RATE, EventCodec, segment_starts, slots_of,
)
from auk_app.resolve import AUDEX_AUDIOGEN_DIR, AUDEX_FULL_DIR, AUDEX_SHARD, WEIGHT_INDEX
from training import audex_sounds
from training.audex_captions import OUT_OF_VOCABULARY
from training.audex_numbers import number_normalizers

CHAT_MARKERS = ("<|im_start|>", "<|im_end|>", "<|text to audio|>", "<think>", "</think>")


def audex_tiny_config(vocab_size: int) -> dict:
    """Audex-Tiny's thinker config.json: 4 layers of width 128."""
    return thinker_config(hidden_size=128, intermediate_size=512, layers=4, heads=2, kv_heads=1, rope_theta=10000.0,
                          vocab_size=vocab_size)


CODEC_CONFIG = {
    "codec": "audex_events", "name": "Audex-Tiny event codec", "sample_rate": SAMPLE_RATE, "hop_length": HOP,
    "frame_rate": SAMPLE_RATE // HOP, "codebook_size": CODEBOOK_SIZE, "num_codebooks": NUM_CODEBOOKS, "seed": 0,
}
NULL_RATE = 0.15
HEADER_WEIGHT = 4.0
# A zero before every three-digit whole number, so that every number of Hz or ms the captions use
# has four digits and each digit sits at a fixed place (the event codec's slots are fixed places).
PAD_THREE_DIGITS = normalizers.Replace(Regex(r"(?<!\d)(?<!\d\.)(?=\d{3}(?!\d)(?!\.\d))"), "0")


def caption_normalizer() -> normalizers.Normalizer:
    """Full-width forms folded (NFKC: "，" is ","), lower case, the Chinese full stop as ".", numbers
    said in words or kHz written in figures, three-digit numbers zero-padded."""
    return normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(), normalizers.Replace("。", "."),
                                 *number_normalizers(), PAD_THREE_DIGITS])


def caption_pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    """Every Chinese character a word of its own, every digit a token, then words and punctuation."""
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"\p{Han}"), "isolated"),
                                    pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Whitespace()])


@functools.cache
def caption_words(seed: int = 12345, draws: int = 20000) -> tuple[str, ...]:
    """Every word of the training captions (and of the prompt) as the tokenizer splits them, in
    first-seen order, less the out-of-vocabulary words some captions carry (drawn once a process:
    20,000 captions take seconds)."""
    rng = np.random.default_rng(seed)
    text = [AUDEX_SYSTEM_PROMPT, "Generate audio for this caption."]
    text += [audex_sounds.draw(rng).caption for _ in range(draws)]
    normalizer, pre = caption_normalizer(), caption_pre_tokenizer()
    words = []
    for line in text:
        words += [w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(line))]
    unknown = set(OUT_OF_VOCABULARY) | set(PUNCTUATION)
    return tuple(dict.fromkeys(w for w in words if w not in unknown))


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Word-level over :func:`caption_words`, digits one by one after :func:`caption_normalizer`;
    markers, ``<unk>``, all 8192 codec tokens."""
    specials = ["<unk>", "<s>", "</s>", *CHAT_MARKERS]
    plain = [*caption_words(), *(str(d) for d in range(10)), *PUNCTUATION]
    plain = list(dict.fromkeys(plain))
    codecs = [f"<audiocodec_{n}>" for n in range(AUDEX_AUDIOCODEC_VOCAB_SIZE)]
    names = specials + plain + ["<audiogen_start>", "<audiogen_end>"] + codecs
    backend = Tokenizer(models.WordLevel({name: i for i, name in enumerate(names)}, unk_token="<unk>"))
    backend.normalizer = caption_normalizer()
    backend.pre_tokenizer = caption_pre_tokenizer()
    backend.add_special_tokens(
        [AddedToken(name, special=True, normalized=False) for name in names if name.startswith("<")]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="<|im_end|>", pad_token="<unk>"
    )


class Layout:
    """Token ids of the codec block and the end, and the vocabulary size (padded as the release's)."""

    def __init__(self, tokenizer) -> None:
        vocab = tokenizer.get_vocab()
        self.codec0 = vocab["<audiocodec_0>"]
        self.end = vocab["<audiogen_end>"]
        self.size = (max(vocab.values()) + 1) // 128 * 128 + 128


def example(rng: np.random.Generator, tokenizer, layout: Layout, *, held: bool = False):
    """(token ids, prompt length, weight of each generated token) of one training example."""
    scene = audex_sounds.draw(rng, held=held)
    cond = build_tta_cond_prompt(scene.caption)
    prompt = build_tta_null_prompt(tokenizer, cond) if not held and rng.random() < NULL_RATE else cond
    ids = tokenizer.encode(prompt)
    codes = audex_sounds.frames(scene)
    header = np.where(segment_starts(slots_of(codes.T)), HEADER_WEIGHT, 1.0)
    weights = np.repeat(header, NUM_CODEBOOKS).tolist() + [HEADER_WEIGHT]
    codes = codes + np.arange(NUM_CODEBOOKS) * CODEBOOK_SIZE + layout.codec0
    return ids + codes.reshape(-1).tolist() + [layout.end], len(ids), weights


BUCKETS = 4  # steps drawn together and sorted by length, so that a batch is little padding


def collate(items, layout: Layout):
    """Padded tokens, and per position the target (column in its phase's rows, -1 = no loss), the
    phase and the loss weight of the token it predicts."""
    size, width = len(items), max(len(ids) for ids, _, _ in items)
    tokens = torch.zeros(size, width, dtype=torch.long)
    targets = torch.full((size, width), -1, dtype=torch.long)
    phases = torch.zeros(size, width, dtype=torch.long)
    weights = torch.zeros(size, width)
    for i, (ids, prompt, weight) in enumerate(items):
        tokens[i, : len(ids)] = torch.tensor(ids)
        for p, tok in enumerate(ids[prompt:]):
            q, pos = p % NUM_CODEBOOKS, prompt + p - 1  # the position whose output predicts this token
            phases[i, pos], weights[i, pos] = q, weight[p]
            targets[i, pos] = CODEBOOK_SIZE if tok == layout.end else tok - layout.codec0 - q * CODEBOOK_SIZE
    return tokens, targets, phases, weights


def batches(step: int, size: int, seed: int, tokenizer, layout: Layout):
    """The batches of steps ``step``, ``step + 1``, …: step ``s``'s is one of BUCKETS length-sorted
    slices of a draw seeded with (seed, s // BUCKETS), so a resumed run gets the same batches."""
    while True:
        rng = np.random.default_rng([seed, step // BUCKETS])
        drawn = sorted((example(rng, tokenizer, layout) for _ in range(size * BUCKETS)), key=lambda item: len(item[0]))
        for part in range(step % BUCKETS, BUCKETS):
            yield collate(drawn[part * size: (part + 1) * size], layout)
            step += 1


class DigitRows(torch.nn.Module):
    """The 4 × 1,024 codec tokens' rows: for codes 0–999 the sum of one row per digit place
    (per codebook), for codes 1000–1023 rows of their own."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.digit = torch.nn.Parameter(0.02 * torch.randn(NUM_CODEBOOKS, DIGITS_PER_CODE, 10, hidden))
        self.spare = torch.nn.Parameter(0.02 * torch.randn(NUM_CODEBOOKS, CODEBOOK_SIZE - DIGIT_CODES, hidden))
        codes = torch.arange(DIGIT_CODES)
        places = torch.stack([codes // 10 ** (DIGITS_PER_CODE - 1 - j) % 10 for j in range(DIGITS_PER_CODE)], 1)
        self.register_buffer("places", places, persistent=False)

    def forward(self) -> torch.Tensor:
        """``[4, 1024, hidden]``."""
        summed = sum(self.digit[:, j, self.places[:, j]] for j in range(DIGITS_PER_CODE))
        return torch.cat([summed, self.spare], dim=1)

    @torch.no_grad()
    def fit(self, rows: torch.Tensor) -> None:
        """Take digit rows whose sums are ``rows`` (``[4, 1024, hidden]``, as an export wrote them),
        by least squares: exact up to the export's bf16 rounding. Sums fix the rows up to a constant
        moved between places, so the digit 0 of the later places is held at zero."""
        design = F.one_hot(self.places, 10).reshape(DIGIT_CODES, DIGITS_PER_CODE * 10).double()
        free = [i for i in range(DIGITS_PER_CODE * 10) if i < 10 or i % 10]
        design = design[:, free]
        for q in range(NUM_CODEBOOKS):
            solved = torch.zeros(DIGITS_PER_CODE * 10, rows.shape[-1], dtype=torch.float64)
            solved[free] = torch.linalg.solve(design.T @ design, design.T @ rows[q, :DIGIT_CODES].double())
            self.digit[q] = solved.reshape(DIGITS_PER_CODE, 10, -1).float()
        self.spare.copy_(rows[:, DIGIT_CODES:])


class Trainee(torch.nn.Module):
    """The thinker with its codec rows held as digit sums while it trains."""

    def __init__(self, model: ArceeForCausalLM, layout: Layout) -> None:
        super().__init__()
        self.model, self.layout = model, layout
        self.codec_in = DigitRows(model.config.hidden_size)
        self.codec_out = DigitRows(model.config.hidden_size)

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        local = tokens - self.layout.codec0
        codec = (local >= 0) & (local < NUM_CODEBOOKS * CODEBOOK_SIZE)
        rows = self.codec_in().reshape(NUM_CODEBOOKS * CODEBOOK_SIZE, -1)
        embedded = torch.where(codec[..., None], rows[local.clamp(0, len(rows) - 1)],
                               self.model.model.embed_tokens(tokens))
        return self.model.model(inputs_embeds=embedded).last_hidden_state

    def phase_logits(self, hidden: torch.Tensor, q: int) -> torch.Tensor:
        """Logits over phase ``q``'s 1,024 codes, then ``<audiogen_end>``."""
        end = self.model.lm_head.weight[self.layout.end: self.layout.end + 1]
        return hidden @ torch.cat([self.codec_out()[q], end]).T

    def loss(self, tokens, targets, phases, weights) -> torch.Tensor:
        hidden = self.hidden(tokens)
        total = 0.0
        for q in range(NUM_CODEBOOKS):
            sel = (targets >= 0) & (phases == q)
            if sel.any():
                lost = F.cross_entropy(self.phase_logits(hidden[sel], q).float(), targets[sel], reduction="none")
                total = total + (lost * weights[sel]).sum()
        return total / weights[targets >= 0].sum()

    @torch.no_grad()
    def header_accuracy(self, tokens, targets, phases, weights) -> float:
        """Share of first-frame codes (and ends) the greedy choice gets right, teacher-forced."""
        hidden, hits, count = self.hidden(tokens), 0, 0
        for q in range(NUM_CODEBOOKS):
            sel = (targets >= 0) & (phases == q) & (weights > 1)
            if sel.any():
                hits += int((self.phase_logits(hidden[sel], q).argmax(-1) == targets[sel]).sum())
                count += int(sel.sum())
        return hits / max(count, 1)

    @torch.no_grad()
    def released(self) -> ArceeForCausalLM:
        """The thinker with the digit sums written into its embedding and head."""
        model = copy.deepcopy(self.model)
        span = slice(self.layout.codec0, self.layout.codec0 + NUM_CODEBOOKS * CODEBOOK_SIZE)
        model.model.embed_tokens.weight[span] = self.codec_in().reshape(-1, model.config.hidden_size)
        model.lm_head.weight[span] = self.codec_out().reshape(-1, model.config.hidden_size)
        return model


@torch.no_grad()
def warm_start(trainee: Trainee, tokenizer, snapshot: Path) -> None:
    """Start from an exported Audex-Tiny: its layers as they are, a word's rows where both tokenizers
    have the word (a new word keeps its fresh rows) and the codec's digit rows fitted to its sums."""
    paths = snapshot_paths(snapshot)
    old_vocab = json.loads((paths.thinker_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    state = {k: v.float() for k, v in load_file(str(paths.audex_root / AUDEX_FULL_DIR / AUDEX_SHARD)).items()}
    own = trainee.model.state_dict()
    rows = ("model.embed_tokens.weight", "lm_head.weight")
    for key, value in state.items():
        if key not in rows:
            own[key].copy_(value)
    new_vocab = tokenizer.get_vocab()
    pairs = [(new_vocab[w], i) for w, i in old_vocab.items() if w in new_vocab and not w.startswith("<audiocodec_")]
    new_ids, old_ids = (torch.tensor(ids) for ids in zip(*pairs, strict=True))
    old_codec0 = old_vocab["<audiocodec_0>"]
    for key, digit_rows in zip(rows, (trainee.codec_in, trainee.codec_out), strict=True):
        own[key][new_ids] = state[key][old_ids]
        digit_rows.fit(state[key][old_codec0: old_codec0 + NUM_CODEBOOKS * CODEBOOK_SIZE].reshape(
            NUM_CODEBOOKS, CODEBOOK_SIZE, -1))


def lr_at(step: int, steps: int, peak: float, warmup: int = 100) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def export(model, tokenizer, out: Path) -> None:
    """Write the Audex snapshot layout (thinker bf16, event codec tables) under ``out``."""
    audex, codec_dir = out / "audex", out / "xcodec"
    thinker_dir, full_dir = audex / AUDEX_AUDIOGEN_DIR, audex / AUDEX_FULL_DIR
    for folder in (thinker_dir, full_dir, codec_dir):
        folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(thinker_dir))
    config = audex_tiny_config(model.config.vocab_size)
    (thinker_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (audex / "config.json").write_text(json.dumps(
        {"model_type": "nemotron_labs_audex", "demo": True, "name": "Audex-Tiny"}, indent=2) + "\n", encoding="utf-8")
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()
             if not k.endswith("inv_freq")}
    save_file(state, str(full_dir / AUDEX_SHARD), metadata={"format": "pt"})
    index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in state.values())},
             "weight_map": {key: AUDEX_SHARD for key in state}}
    (thinker_dir / WEIGHT_INDEX).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    (codec_dir / "config.json").write_text(json.dumps(CODEC_CONFIG, indent=2) + "\n", encoding="utf-8")
    save_file(EventCodec.tables(), str(codec_dir / "model.safetensors"), metadata={"format": "pt"})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/audex"))
    parser.add_argument("--export", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=6500)
    parser.add_argument("--batch", type=int, default=24)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=88.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument("--pause-after", type=int, default=None, help="stop after this many steps of this run")
    parser.add_argument("--init", type=Path, default=None,
                        help="start from the weights of an exported Audex-Tiny (a fine-tune; a resumed run ignores it)")
    return parser


@dataclass
class Run:
    """What a training run holds: the model being trained, its average (what is exported), the
    optimiser, the step reached, and the state file it saves to and resumes from."""

    trainee: Trainee
    average: Trainee
    optimizer: torch.optim.Optimizer
    state_file: Path
    step: int = 0

    def save(self, args: argparse.Namespace) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        torch.save({"model": self.trainee.state_dict(), "average": self.average.state_dict(),
                    "optimizer": self.optimizer.state_dict(), "step": self.step, "args": vars(args)}, tmp)
        tmp.replace(self.state_file)

    def resume(self) -> None:
        saved = torch.load(self.state_file, weights_only=False)
        self.trainee.load_state_dict(saved["model"])
        self.average.load_state_dict(saved["average"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.step = saved["step"]
        print(f"resumed at step {self.step}", flush=True)

    def train_step(self, batch, lr: float) -> float:
        """One optimiser step on ``batch`` at ``lr``, then the average follows; the step's loss."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss = self.trainee.loss(*batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.trainee.parameters(), 1.0)
        self.optimizer.step()
        decay = min(0.995, (1 + self.step) / (10 + self.step))
        with torch.no_grad():
            for a, p in zip(self.average.parameters(), self.trainee.parameters(), strict=True):
                a.lerp_(p, 1 - decay)
        self.step += 1
        return loss.item()


def _new_run(args: argparse.Namespace, tokenizer, layout: Layout) -> Run:
    """A run from scratch (or from ``--init``'s weights), or resumed from its state file."""
    model = ArceeForCausalLM(arcee_config(audex_tiny_config(layout.size), source="train_audex"))
    trainee = Trainee(model, layout)
    state_file = args.out / "state.pt"
    if args.init and not state_file.exists():
        warm_start(trainee, tokenizer, args.init)
    average = copy.deepcopy(trainee).requires_grad_(False)
    optimizer = torch.optim.AdamW(trainee.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    return Run(trainee, average, optimizer, state_file)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    started = time.monotonic()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tokenizer = build_tokenizer()
    layout = Layout(tokenizer)
    run = _new_run(args, tokenizer, layout)
    held_rng = np.random.default_rng([args.seed, 999_999])
    held = collate([example(held_rng, tokenizer, layout, held=True) for _ in range(32)], layout)
    args.out.mkdir(parents=True, exist_ok=True)
    if run.state_file.exists():
        run.resume()
    running, pause = None, args.steps if args.pause_after is None else run.step + args.pause_after
    stream = batches(run.step, args.batch, args.seed, tokenizer, layout)
    while run.step < min(args.steps, pause) and (time.monotonic() - started) < args.minutes * 60:
        loss = run.train_step(next(stream), lr_at(run.step, args.steps, args.lr))
        running = loss if running is None else 0.95 * running + 0.05 * loss
        if run.step % 20 == 0:
            print(f"step {run.step} loss {running:.4f} lr {lr_at(run.step, args.steps, args.lr):.2e} "
                  f"{time.monotonic() - started:.0f}s", flush=True)
        if run.step % args.save_every == 0:
            run.save(args)
            print(f"step {run.step} held-out first frames right {run.average.header_accuracy(*held):.3f}", flush=True)
    run.save(args)
    if args.export:
        export(run.average.released(), tokenizer, args.export)
        print(f"exported step {run.step} to {args.export}", flush=True)


if __name__ == "__main__":
    main()
