"""A free-form request rewritten into the cookbook instruction the model was trained on.

AuK follows the cookbook's wordings (``auk_app.instructions.TEMPLATES``) and is unstable on others,
so a request in a person's own words is offered back in a cookbook wording before the run, for the
person to accept or change, and the manifest records both.

* With the released weights the rewriter is the Qwen2.5-Omni thinker already resident for
  conditioning (its output head read from the snapshot, as the transcriber reads it): one greedy
  answer of at most ``MAX_NEW_TOKENS`` tokens to a turn that lists the cookbook's English templates,
  the request and, for a word edit, what the source clip says (the thinker's own transcript).
* The demo model has no language model: the rule-based recogniser (``auk_app.recognise``) rewrites.

Either way an answer is taken only when it reads as a cookbook instruction (``recognise.cookbook_key``);
otherwise the person's words stay, with a warning saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import torch

from auk_app import dsp, instructions, pace, recognise
from auk_app.audio_io import MonoClip
from auk_app.check.transcribe import WORD_EDIT_TASKS
from auk_app.config import QWEN_SAMPLE_RATE, Limits

if TYPE_CHECKING:
    from auk_app.engine import Thinker

MAX_NEW_TOKENS = 96  # a cookbook instruction with a sentence to speak fits well within this
SYSTEM = ("You rewrite a request for an audio editing model into exactly one of the instructions listed below, "
          "with its blanks filled from the request. Answer with that one instruction and nothing else.")


@dataclass(frozen=True)
class Suggestion:
    """What the rewriter made of ``asked``: ``instruction`` (the rewrite, or ``asked`` unchanged when
    no rewrite is sure), who made it (``by``: "thinker", "recogniser", or "" for none) and why the
    words were kept (``warning``)."""

    asked: str
    instruction: str
    by: str = ""
    warning: str = ""
    seconds: float | None = None  # for new words: their duration, at the source speaker's pace where known
    pace: dict[str, Any] | None = None  # that pace (syllables, voiced seconds), as the builder records it
    found: recognise.Recognised | None = field(default=None, compare=False)  # what the recogniser found in it

    @property
    def rewritten(self) -> bool:
        return self.instruction != self.asked

    def to_manifest(self) -> dict[str, Any]:
        return {"asked": self.asked, "used": self.instruction, "by": self.by or None,
                "warning": self.warning or None, "seconds": self.seconds, "pace": self.pace}


def kept(asked: str, why: str) -> Suggestion:
    """The person's own words, and the warning that says why nothing rewrote them."""
    return Suggestion(asked, asked, warning=f"The instruction was left in your words: {why}. The model follows the "
                                            "cookbook's wordings best; the instruction builder writes them.")


def by_recogniser(asked: str, found: recognise.Recognised | None) -> Suggestion:
    """The demo's rewrite: the cookbook instruction of what the recogniser found in ``asked``, when it
    found the task and every field its wording needs."""
    rewritten = None if found is None else found.instruction()
    if rewritten is None:
        return kept(asked, "no task and its numbers were recognised in it for sure")
    return Suggestion(asked, rewritten, by="recogniser")


def prompt(asked: str, transcript: str | None = None) -> str:
    """The thinker's turn: the templates, what the source says (for a word edit) and the request."""
    templates = "\n".join(f"- {english}" for english, _ in instructions.TEMPLATES.values())
    heard = "" if not transcript else f'\nThe source clip says: "{transcript}"'
    return (f"<|im_start|>system\n{SYSTEM}\n{templates}<|im_end|>\n"
            f"<|im_start|>user\n{asked}{heard}<|im_end|>\n<|im_start|>assistant\n")


def accept(asked: str, answer: str) -> Suggestion:
    """The thinker's ``answer`` as the instruction when it is a cookbook instruction; else the words kept."""
    line = answer.strip().splitlines()[0].strip() if answer.strip() else ""
    for candidate in (line[1:-1] if line[:1] in "\"“" and line[-1:] in "\"”" else "", line):  # quotes off first
        if candidate and recognise.cookbook_key(candidate) is not None:
            return Suggestion(asked, candidate, by="thinker")
    return kept(asked, "the thinker's answer was not one of the cookbook's instructions")


@torch.no_grad()
def by_thinker(thinker: torch.nn.Module, tokenizer, asked: str, transcript: str | None = None) -> Suggestion:
    """The released model's rewrite: one greedy answer of the thinker (with its output head)."""
    inputs = tokenizer([prompt(asked, transcript)], return_tensors="pt").to(next(thinker.parameters()).device)
    output = thinker.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS, do_sample=False, num_beams=1,
                              eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                              pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"), use_cache=True)
    answer = tokenizer.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
    return accept(asked, answer)


def suggest(asked: str, found: recognise.Recognised | None, *, clip: MonoClip | None, thinker: Thinker | None,
            limits: Limits) -> Suggestion:
    """``asked`` (in which the recogniser ``found`` a task, or None) rewritten into the cookbook's
    wording: by the model's ``thinker`` where the engine lends one, else by the recogniser. For a
    word edit the thinker hears what the source ``clip`` says first; new words get the duration
    they take at the clip's speaker's pace, as the builder times them."""
    transcript = None
    if thinker is None:
        suggestion = by_recogniser(asked, found)
    else:
        if clip is not None and _paced(found):
            transcript = thinker.transcriber.transcribe(dsp.resample(clip.mono, clip.sample_rate, QWEN_SAMPLE_RATE))
        heard = transcript if found is not None and found.task in WORD_EDIT_TASKS else None
        suggestion = by_thinker(thinker.model, thinker.tokenizer, asked, heard)
    used = recognise.recognise(suggestion.instruction) if suggestion.by == "thinker" else found  # the thinker's own words
    return _timed(replace(suggestion, found=used), used, clip, transcript, limits)


def _paced(found: recognise.Recognised | None) -> bool:
    """A request for new words, whose length follows the speaker's pace."""
    return found is not None and found.task in instructions.TASKS_BY_KEY and instructions.task(found.task).paced


def _timed(suggestion: Suggestion, found: recognise.Recognised | None, clip: MonoClip | None,
           transcript: str | None, limits: Limits) -> Suggestion:
    """``suggestion`` (in which the recogniser ``found`` its task) with the duration its new words
    take, at the source speaker's pace where the clip and what it says are known."""
    if not _paced(found):
        return suggestion
    voiced = None if clip is None else pace.voiced_seconds(clip.mono, clip.sample_rate)
    built = instructions.build(found.task, found.fields, source_seconds=None if clip is None else clip.seconds,
                               limits=limits, voiced_seconds=voiced, transcript=transcript)
    return replace(suggestion, seconds=built.duration.seconds or None,
                   pace=None if built.pace is None else built.pace.to_manifest())
