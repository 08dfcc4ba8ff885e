"""Content checks with the released weights: the resident Qwen2.5-Omni thinker as a transcriber.

The thinker AuK conditions on is an audio LLM, and the conditioner has its audio tower and text
decoder resident already (``auk_app.auk.qwen``). What it lacks for speech recognition is the
output head: the conditioner drops ``lm_head`` before loading, so its 151936 × 2048 weight
(0.31 B parameters, ~0.6 GB in bf16) stays on disk. ``Transcriber.from_conditioner`` reads that
one tensor (``thinker.lm_head.weight``, from the shard the snapshot's index names; the embedding
matrix where the config ties them) and attaches it as a ``Linear`` to the same thinker module, so
it moves with the thinker between devices. Conditioning is unchanged: it calls the inner model,
which ends at the final norm, and never reaches the head.

Transcription is transformers' own ``generate`` (greedy, no sampling) on Qwen2.5-Omni's ASR turn:
system "You are a speech recognition model.", the audio, then "Transcribe the English audio into
text without any punctuation marks." (Qwen's cookbook wording; the Chinese turn asks the same in
Chinese), rendered as the snapshot's chat template renders it.

``content_check`` scores the transcript against a target text by word error rate (Chinese:
character error rate; ``auk_app.check.wer``) and returns an ``EditCheck`` (task "content", asked
0, got the rate, unit "WER" or "CER", tolerance 0.2). ``content_target`` finds the target text in
an instruction: the text to speak for zero-shot and instruct TTS, and for word edits (the
cookbook's content- and lyric-edit templates) the source's transcript with the edit applied.

Only the mechanics are tested here, on a tiny random snapshot (tests/check/test_transcribe.py). How
well the 3B thinker transcribes AuK's output, and so how often this check is right, is not
measured in this project.

Tolerance 0.2, and why: Qwen reports Qwen2.5-Omni's own WER at a few per cent on read English
and Mandarin (LibriSpeech, Common Voice, Fleurs: roughly 2-9 % for the 7B, the 3B a little
higher), and TTS evaluations (Seed-TTS-eval) find good systems at 1-3 %. One word in five wrong
is well beyond the transcriber's own errors, so a ✗ is the audio's fault, not the ear's; a
stricter bar would fail correct results on the transcriber's slips. A word edit changes few
words of a sentence, so an edit that did nothing can sit under 0.2 as well: for word edits the
check also needs the result nearer the edited text than the unedited source transcript.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open

from auk_app.check.result import AT_MOST, EditCheck, unmeasured
from auk_app.check.wer import error_rate, is_cjk, normalize
from auk_app.errors import CheckpointError
from auk_app.recognise import Recognised

CONTENT = "content"
WER_TOLERANCE = 0.2
TRANSCRIBE_RATE = 16000
LM_HEAD_KEY = "thinker.lm_head.weight"
EMBED_KEY = "thinker.model.embed_tokens.weight"
ASR_SYSTEM = "You are a speech recognition model."
ASR_PROMPTS = {
    "en": "Transcribe the English audio into text without any punctuation marks.",
    "zh": "请将这段中文语音转换为纯文本，去掉标点符号。",
}
TOKENS_PER_SECOND = 8  # a generous cap on speech: ~3 words a second, ~1.3 tokens a word
MIN_NEW_TOKENS_CAP = 32

# The tasks whose result has a target text, and the templates' fields that give it.
TTS_TASKS = ("zero_shot_tts", "instruct_tts")
WORD_EDIT_TASKS = ("content_edit", "lyric_edit")


# ----------------------------------------------------------------------------- the output head


def _shard_for(directory: Path, key: str) -> Path | None:
    """The safetensors file of a snapshot that holds ``key``; None if none does."""
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        shard = json.loads(index.read_text())["weight_map"].get(key)
        return None if shard is None else directory / shard
    single = directory / "model.safetensors"
    if single.is_file():
        with safe_open(str(single), framework="pt") as handle:
            return single if key in handle.keys() else None
    return None


def load_lm_head(snapshot_dir: str | Path, *, tied: bool = False) -> torch.Tensor:
    """The thinker's output-head weight [vocab, D], read alone from its shard (safetensors reads
    one tensor without the rest of the file): ``thinker.lm_head.weight``, or with ``tied`` (the
    text config ties them) the token embeddings."""
    directory = Path(snapshot_dir)
    for key in (LM_HEAD_KEY, EMBED_KEY) if tied else (LM_HEAD_KEY,):
        shard = _shard_for(directory, key)
        if shard is not None:
            with safe_open(str(shard), framework="pt") as handle:
                return handle.get_tensor(key)
    raise CheckpointError(
        f"The Qwen2.5-Omni snapshot in {directory} has no {LM_HEAD_KEY}, which the transcriber needs; "
        "download the complete snapshot again."
    )


# ----------------------------------------------------------------------------- the transcriber


class Transcriber:
    """Greedy speech-to-text with a Qwen2.5-Omni thinker that has its output head.

    ``thinker`` is a ``Qwen2_5OmniThinkerForConditionalGeneration`` (the conditioner's, with
    ``attach_lm_head`` called, or a complete one), ``processor`` the conditioner's processor
    (Whisper features and the tokenizer)."""

    def __init__(self, thinker: torch.nn.Module, processor, *, max_new_tokens: int | None = None):
        if not isinstance(getattr(thinker, "lm_head", None), torch.nn.Linear):
            raise CheckpointError("The thinker has no output head; load it with Transcriber.from_conditioner.")
        self.model = thinker
        self.processor = processor
        self.max_new_tokens = max_new_tokens
        tokenizer = processor.tokenizer
        self.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.pad_token_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")

    @classmethod
    def from_conditioner(cls, conditioner, snapshot_dir: str | Path, **kwargs) -> Transcriber:
        """The transcriber on a loaded ``QwenConditioner``: its thinker gains the output head
        (read from ``snapshot_dir``, the conditioner's snapshot); nothing else is loaded."""
        attach_lm_head(conditioner.model, snapshot_dir)
        return cls(conditioner.model, conditioner.processor, **kwargs)

    def render_prompt(self, language: str = "en") -> str:
        """Qwen2.5-Omni's ASR turn, as its chat template renders a system text, an audio and a text."""
        from auk_app.auk.qwen import AUDIO_PART

        return (
            f"<|im_start|>system\n{ASR_SYSTEM}<|im_end|>\n"
            f"<|im_start|>user\n{AUDIO_PART}{ASR_PROMPTS[language]}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )

    @torch.no_grad()
    def transcribe(self, audio_16k: np.ndarray, language: str = "en") -> str:
        """What is said in a mono 16 kHz clip, greedy-decoded; ``language`` "en" or "zh" picks the
        prompt. At most ``max_new_tokens`` tokens (default: 8 a second of audio, at least 32)."""
        audio = np.asarray(audio_16k, dtype=np.float32).reshape(-1)
        if audio.size < 321:  # 3 mel frames: the fewest that leave one audio token
            return ""
        with torch.autocast("cpu", enabled=False):
            inputs = self.processor(text=[self.render_prompt(language)], audio=[audio], return_tensors="pt")
        device = next(self.model.parameters()).device
        inputs = inputs.to(device)
        cap = self.max_new_tokens or max(MIN_NEW_TOKENS_CAP, round(TOKENS_PER_SECOND * audio.size / TRANSCRIBE_RATE))
        output = self.model.generate(
            **inputs, max_new_tokens=cap, do_sample=False, num_beams=1, eos_token_id=self.eos_token_id,
            pad_token_id=self.pad_token_id, use_cache=True,
        )
        new_tokens = output[0, inputs["input_ids"].shape[1]:]
        return self.processor.tokenizer.decode(new_tokens, skip_special_tokens=True).strip()


def attach_lm_head(thinker: torch.nn.Module, snapshot_dir: str | Path) -> torch.nn.Linear:
    """Give ``thinker`` its output head from ``snapshot_dir`` (idempotent), in the thinker's dtype
    and on its device; the conditioner's inner-model forward does not use it."""
    if isinstance(getattr(thinker, "lm_head", None), torch.nn.Linear):
        return thinker.lm_head
    text_config = thinker.config.get_text_config()
    weight = load_lm_head(snapshot_dir, tied=bool(getattr(text_config, "tie_word_embeddings", False)))
    reference = thinker.get_input_embeddings().weight
    if tuple(weight.shape) != (text_config.vocab_size, text_config.hidden_size):
        raise CheckpointError(
            f"{LM_HEAD_KEY} in {snapshot_dir} is {tuple(weight.shape)}, but the thinker needs "
            f"({text_config.vocab_size}, {text_config.hidden_size})."
        )
    head = torch.nn.Linear(text_config.hidden_size, text_config.vocab_size, bias=False,
                           device=reference.device, dtype=reference.dtype)
    with torch.no_grad():
        head.weight.copy_(weight.to(reference.dtype))
    head.requires_grad_(False)
    thinker.lm_head = head
    return head


# ----------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class ContentTarget:
    """What the result should say: ``text`` for TTS; for a word edit the edit to apply to the
    source's transcript (``mode`` as the builder names it, ``original`` anchor, ``text`` words)."""

    task: str
    text: str
    original: str = ""
    mode: str = ""

    @property
    def needs_source(self) -> bool:
        return self.task in WORD_EDIT_TASKS

    @property
    def language(self) -> str:
        return "zh" if is_cjk(self.text + self.original) else "en"

    def expected(self, source_transcript: str | None = None) -> str | None:
        """The target text: the text to speak, or the source transcript with the edit applied
        (normalised); None where the anchor or the words to remove are not in the transcript."""
        if not self.needs_source:
            return self.text
        if source_transcript is None:
            return None
        return apply_word_edit(source_transcript, self.mode or "Replace", self.original, self.text)


def content_target(found: Recognised | None) -> ContentTarget | None:
    """The content target of a recognised request for zero-shot or instruct TTS (the text to speak) or
    a word edit (the words replaced, added or removed, and where); None for any other request, or
    one whose words were not found."""
    if found is None or not found.fields.get("text"):
        return None
    fields = found.fields
    if found.task in TTS_TASKS:
        return ContentTarget(found.task, fields["text"].strip())
    if found.task == "content_edit" and fields.get("mode"):
        return ContentTarget(found.task, fields["text"].strip(), (fields.get("original") or "").strip(), fields["mode"])
    if found.task == "lyric_edit" and fields.get("original"):
        return ContentTarget(found.task, fields["text"].strip(), fields["original"].strip(), "Replace")
    return None


def apply_word_edit(transcript: str, mode: str, original: str, text: str) -> str | None:
    """``transcript`` (normalised) with a content edit applied at the first place it fits; None
    when the anchor (or the words to remove) is not there. Words match whole, case and
    punctuation aside; Chinese matches by characters."""
    sep = "" if is_cjk(transcript + original + text) else " "
    src, orig, new = (normalize(t) for t in (transcript, original, text))
    if sep == "":
        src, orig, new = (t.replace(" ", "") for t in (src, orig, new))

    def sub(old: str, replacement: str) -> str | None:
        padded, needle = f"{sep}{src}{sep}", f"{sep}{old}{sep}"
        if not old or needle not in padded:
            return None
        out = padded.replace(needle, f"{sep}{replacement}{sep}" if replacement else sep, 1)
        return " ".join(out.split()) if sep else out

    edits = {
        "Replace": lambda: sub(orig, new),
        "Add before": lambda: sub(orig, f"{new}{sep}{orig}"),
        "Add after": lambda: sub(orig, f"{orig}{sep}{new}"),
        "Remove": lambda: sub(new, ""),
        "Remove before": lambda: sub(f"{new}{sep}{orig}", orig),
        "Remove after": lambda: sub(f"{orig}{sep}{new}", orig),
    }
    if mode not in edits:
        raise ValueError(f"unknown content edit {mode!r}; known: {', '.join(edits)}")
    return edits[mode]()


# ----------------------------------------------------------------------------- the check


def content_check(transcriber: Transcriber, target_text: str, result_16k: np.ndarray, *,
                  language: str | None = None, unedited_text: str | None = None) -> EditCheck:
    """Transcribe ``result_16k`` (mono, 16 kHz) and score it against ``target_text``: task
    "content", asked 0, got the WER (CER for Chinese), passed at ≤ 0.2. With ``unedited_text``
    (a word edit's source transcript) it also has to be nearer the target than that."""
    language = language or ("zh" if is_cjk(target_text) else "en")
    heard = transcriber.transcribe(result_16k, language)
    return score_transcript(target_text, heard, unedited_text=unedited_text)


def score_transcript(target_text: str, heard: str, *, unedited_text: str | None = None) -> EditCheck:
    """The content check of a transcript already made (``content_check`` without the transcriber)."""
    try:
        rate, unit = error_rate(target_text, heard)
    except ValueError as exc:
        return unmeasured(CONTENT, str(exc))
    note = f'heard "{heard}" for "{target_text}" (Qwen2.5-Omni thinker as transcriber, greedy)'
    passed = rate <= WER_TOLERANCE
    if unedited_text is not None:
        try:
            unchanged, _ = error_rate(unedited_text, heard)
        except ValueError:  # the source said nothing: any words are nearer the target
            unchanged = float("inf")
        passed = passed and rate < unchanged
        note += f'; {unit} {unchanged:.2f} against the unedited "{unedited_text}"'
    return EditCheck(CONTENT, 0.0, rate, unit, WER_TOLERANCE, passed, note, AT_MOST)


def check_content(transcriber: Transcriber, found: Recognised | None, result_16k: np.ndarray,
                  source_16k: np.ndarray | None = None) -> EditCheck:
    """The content check of a recognised request: TTS against its text; a word edit against the
    source's transcript with the edit applied (the source is transcribed too). Unmeasured, with
    the reason, where the request has no target text or the edit does not fit the source."""
    target = content_target(found)
    if target is None:
        return unmeasured(CONTENT, "the instruction asks for no speech or word edit whose words were found, so it "
                                   "gives no target text")
    if not target.needs_source:
        return content_check(transcriber, target.text, result_16k, language=target.language)
    if source_16k is None:
        return unmeasured(CONTENT, "a word edit is scored against the source's transcript, and no source was given")
    heard_source = transcriber.transcribe(source_16k, target.language)
    expected = target.expected(heard_source)
    if expected is None:
        anchor = target.original if target.mode != "Remove" else target.text
        return unmeasured(CONTENT, f'the source\'s transcript "{heard_source}" does not contain "{anchor}"')
    return content_check(transcriber, expected, result_16k, language=target.language,
                         unedited_text=normalize(heard_source))


__all__ = [
    "CONTENT", "WER_TOLERANCE", "ContentTarget", "Transcriber", "apply_word_edit", "attach_lm_head",
    "check_content", "content_check", "content_target", "load_lm_head", "score_transcript",
]
