"""The content check's mechanics: the resident Qwen2.5-Omni thinker as a transcriber,
on the tiny random snapshot (tests/qwen_snapshot.py), and WER/CER on known strings.

Random weights transcribe nonsense: these tests prove the pipeline (the output head read alone
from its shard, the ASR turn, transformers' greedy generate, the score and the EditCheck), not
the transcriber's quality, which is unmeasured here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors import safe_open

from auk_app import instructions
from auk_app.auk.qwen import QwenConditioner
from auk_app.check import EditCheck
from auk_app.check.transcribe import (
    LM_HEAD_KEY, WER_TOLERANCE, Transcriber, apply_word_edit, check_content, content_check, content_target,
    load_lm_head, score_transcript,
)
from auk_app.check.wer import error_rate, normalize
from auk_app.config import Limits
from auk_app.errors import CheckpointError
from auk_app.recognise import recognise

MAX_TOKENS = 10


@pytest.fixture(scope="module")
def transcriber(qwen_conditioner, qwen_snapshot):
    return Transcriber.from_conditioner(qwen_conditioner, qwen_snapshot, max_new_tokens=MAX_TOKENS)


def clip(seed: int, seconds: float = 1.0) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(round(16000 * seconds))).astype(np.float32)


# ----------------------------------------------------------------------------- the output head


def test_the_conditioner_leaves_the_head_on_disk_and_the_transcriber_reads_only_it(qwen_snapshot):
    fresh = QwenConditioner.from_pretrained(qwen_snapshot)
    assert isinstance(fresh.model.lm_head, torch.nn.Identity)  # the loader skips it
    before = fresh.hidden_states("Raise the pitch by 2 semitones.", clip(0))[0][-1]
    Transcriber.from_conditioner(fresh, qwen_snapshot)
    shard = json.loads((qwen_snapshot / "model.safetensors.index.json").read_text())["weight_map"][LM_HEAD_KEY]
    with safe_open(str(qwen_snapshot / shard), framework="pt") as handle:
        assert torch.equal(fresh.model.lm_head.weight, handle.get_tensor(LM_HEAD_KEY))
    after = fresh.hidden_states("Raise the pitch by 2 semitones.", clip(0))[0][-1]
    assert torch.equal(before, after)  # conditioning never reaches the head


def test_a_snapshot_without_the_head_is_refused(tmp_path, qwen_snapshot):
    index = json.loads((qwen_snapshot / "model.safetensors.index.json").read_text())
    del index["weight_map"][LM_HEAD_KEY]
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match="lm_head"):
        load_lm_head(tmp_path)


# ----------------------------------------------------------------------------- transcription


def test_greedy_transcription_is_transformers_generate_and_deterministic(transcriber, qwen_conditioner):
    audio = clip(1)
    text = transcriber.transcribe(audio)
    assert isinstance(text, str) and text == transcriber.transcribe(audio)
    # The same tokens by hand: full forward passes (no cache), argmax each step.
    inputs = transcriber.processor(text=[transcriber.render_prompt()], audio=[audio], return_tensors="pt")
    ids, prompt_length = inputs["input_ids"], inputs["input_ids"].shape[1]
    with torch.no_grad():
        for _ in range(MAX_TOKENS):
            step = dict(inputs, input_ids=ids, attention_mask=torch.ones_like(ids))
            token = qwen_conditioner.model(**step, use_cache=False).logits[0, -1].argmax()
            ids = torch.cat([ids, token.view(1, 1)], dim=1)
            if token.item() == transcriber.eos_token_id:
                break
    by_hand = transcriber.processor.tokenizer.decode(ids[0, prompt_length:], skip_special_tokens=True).strip()
    assert text == by_hand


def test_the_prompt_is_qwens_asr_turn_with_the_audio(transcriber):
    prompt = transcriber.render_prompt("en")
    assert prompt.startswith("<|im_start|>system\nYou are a speech recognition model.<|im_end|>\n")
    assert "<|audio_bos|><|AUDIO|><|audio_eos|>Transcribe the English audio" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    assert "中文" in transcriber.render_prompt("zh")


# ----------------------------------------------------------------------------- scores


@pytest.mark.parametrize(("reference", "hypothesis", "rate", "unit"), [
    ("Hello, World!", "hello world", 0.0, "WER"),
    ("The cat sat on the mat.", "the cat sat on mat", 1 / 6, "WER"),
    ("The cat sat on the mat.", "the dog sat on the mat", 1 / 6, "WER"),
    ("The cat sat.", "the cat sat down today", 2 / 3, "WER"),
    ("I don't know", "i dont know", 1 / 3, "WER"),
    ("Ladies and gentlemen", "", 1.0, "WER"),
    ("今天天气很好。", "今天天汽很好", 1 / 6, "CER"),
    ("今天天气很好", "今 天 天 气 很 好", 0.0, "CER"),
    ("把七点改成八点", "把七点改成", 2 / 7, "CER"),
])
def test_error_rates_on_known_strings(reference, hypothesis, rate, unit):
    got, got_unit = error_rate(reference, hypothesis)
    assert got == pytest.approx(rate) and got_unit == unit


def test_normalisation_drops_case_and_punctuation_but_keeps_words():
    assert normalize("  “Hello,”  she said — 'it's 8 o'clock!' ") == "hello she said it's 8 o'clock"
    assert normalize("你好，世界！") == "你好 世界"


def test_the_check_passes_within_tolerance_and_fails_beyond_it():
    good = score_transcript("the library opens at nine today", "The library opens at nine today.")
    assert isinstance(good, EditCheck) and good.passed and good.got == 0.0
    assert good.task == "content" and good.unit == "WER" and good.tolerance == WER_TOLERANCE
    assert good.display() == "asked ≤ 0 WER · got 0 WER ✓"
    bad = score_transcript("the library opens at nine today", "the library closes at ten")
    assert not bad.passed and bad.got == pytest.approx(3 / 6) and bad.display().endswith("✗")
    assert bad.to_manifest()["pass"] is False and "heard" in bad.to_manifest()["note"]
    assert score_transcript("今天天气很好", "今天天气很好").unit == "CER"
    assert not score_transcript("...", "anything").measured


def test_a_word_edit_that_did_nothing_fails_even_under_the_tolerance():
    source = "we meet at seven o'clock in the main hall tomorrow morning"
    expected = apply_word_edit(source, "Replace", "seven", "eight")
    assert expected == "we meet at eight o'clock in the main hall tomorrow morning"
    unchanged = score_transcript(expected, source, unedited_text=source)
    assert unchanged.got == pytest.approx(1 / 11) and not unchanged.passed  # under 0.2
    assert score_transcript(expected, expected, unedited_text=source).passed


# ----------------------------------------------------------------------------- targets


@pytest.mark.parametrize("language", instructions.LANGUAGES)
def test_target_text_comes_from_what_the_recogniser_finds_in_tts_and_word_edits(language):
    def built(key, **fields):
        return instructions.build(key, fields, source_seconds=3.0, limits=Limits(), language=language).instruction

    tts = content_target(recognise(built("zero_shot_tts", text="Ladies and gentlemen, it's an honor.")))
    assert (tts.task, tts.expected()) == ("zero_shot_tts", "Ladies and gentlemen, it's an honor.")
    described = content_target(recognise(built("instruct_tts", original="A warm low voice",
                                               text="The library opens at nine.")))
    assert described.expected() == "The library opens at nine."
    source = "the meeting is at seven o'clock"
    cases = {
        "Replace": "the meeting is at eight o'clock",
        "Add before": "the meeting is at eight seven o'clock",
        "Add after": "the meeting is at seven eight o'clock",
    }
    for mode, expected in cases.items():
        target = content_target(recognise(built("content_edit", mode=mode, original="seven", text="eight")))
        assert target.needs_source and target.expected(source) == expected, mode
    removed = content_target(recognise(built("content_edit", mode="Remove", text="at seven")))
    assert removed.expected(source) == "the meeting is o'clock"
    before = content_target(recognise(built("content_edit", mode="Remove before", original="o'clock", text="seven")))
    assert before.expected(source) == "the meeting is at o'clock"
    lyric = content_target(recognise(built("lyric_edit", original="moonlight", text="streetlight")))
    assert lyric.expected("under the moonlight") == "under the streetlight"
    noon = content_target(recognise(built("content_edit", mode="Replace", original="noon", text="eight")))
    assert noon.expected(source) is None
    assert content_target(recognise(built("volume", mode="Decrease", amount="6"))) is None
    assert content_target(recognise("Say it again but happier")) is None


def test_chinese_word_edits_apply_by_characters():
    target = content_target(recognise("把‘七点’改成‘八点’"))
    assert target.language == "zh" and target.expected("我们七点见。") == "我们八点见"


# ----------------------------------------------------------------------------- end to end


def test_content_checks_run_end_to_end_on_the_tiny_thinker(transcriber):
    result = content_check(transcriber, "Ladies and gentlemen", clip(2))
    assert result.task == "content" and result.measured and result.got is not None
    assert result == content_check(transcriber, "Ladies and gentlemen", clip(2))  # greedy: the same twice
    tts = check_content(transcriber, recognise('Say the following with the same voice: "Hello there"'), clip(3))
    assert tts.measured and tts.unit == "WER"
    edit = check_content(transcriber, recognise("Replace 'seven' with 'eight'."), clip(4), source_16k=clip(5))
    assert not edit.measured and "does not contain" in edit.note  # nonsense has no "seven" in it
    assert not check_content(transcriber, recognise("Make it 6 dB quieter"), clip(4)).measured
