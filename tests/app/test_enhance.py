"""The prompt enhancer: a request in a person's own words rewritten into the cookbook's wording, by
the demo's recogniser end to end, and by the released model's thinker (mechanics on the tiny random
snapshot: its answers are nonsense, so only the prompt, the bound and the fallback are held)."""

from __future__ import annotations

import pytest
from gradio_client import handle_file
from gradio_client.exceptions import ValidationError

from auk_app import enhance, instructions
from tests.conftest import REPO

pytestmark = pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")
FREE_FORM = "could you make it five decibels quieter please"
SPEECH = REPO / "assets" / "examples" / "speech.flac"


def test_the_demo_rewrites_a_number_word_request_and_the_result_measures_it(client):
    speech = handle_file(str(SPEECH))  # espeak-ng speech, the page's first example clip
    suggestion = client.predict(audio=speech, instruction=FREE_FORM, api_name="/suggest_instruction")
    assert suggestion == {"asked": FREE_FORM, "used": "Decrease the volume by 5 dB.", "by": "recogniser",
                          "warning": None}
    _, _, manifest, line, *_ = client.predict(audio=speech, instruction=FREE_FORM, enhance=True, seed=3,
                                              randomize_seed=False, nfe=8, api_name="/edit_audio")
    assert manifest["instruction"] == "Decrease the volume by 5 dB." and manifest["enhance"] == suggestion
    assert manifest["requested"]["instruction"] == FREE_FORM
    assert manifest["check"]["asked"] == -5.0 and manifest["check"]["pass"] is True, line


def test_words_no_rewrite_is_sure_of_stay_with_a_warning(client, clips):
    asked = "add reverb like a cathedral"
    suggestion = client.predict(audio=handle_file(str(clips.voice)), instruction=asked, api_name="/suggest_instruction")
    assert suggestion["used"] == asked and suggestion["by"] is None and "left in your words" in suggestion["warning"]
    _, _, manifest, *_ = client.predict(audio=handle_file(str(clips.voice)), instruction=asked, enhance=True, nfe=2,
                                        api_name="/edit_audio")
    assert manifest["instruction"] == asked and any("left in your words" in w for w in manifest["warnings"])


def test_a_suggestion_is_checked_before_the_queue(client):
    with pytest.raises(ValidationError, match="The instruction is empty"):
        client.predict(instruction="  ", api_name="/suggest_instruction")


@pytest.fixture(scope="module")
def thinker(qwen_conditioner, qwen_snapshot):
    from auk_app.check.transcribe import attach_lm_head

    attach_lm_head(qwen_conditioner.model, qwen_snapshot)
    return qwen_conditioner


def test_the_thinker_is_asked_with_every_template_and_the_source_s_words(thinker):
    turn = enhance.prompt(FREE_FORM, transcript="the cat sat on the mat")
    for english, _ in instructions.TEMPLATES.values():
        assert f"- {english}\n" in turn or f"- {english}<|im_end|>" in turn
    assert f"user\n{FREE_FORM}\nThe source clip says: \"the cat sat on the mat\"<|im_end|>" in turn
    assert turn.endswith("<|im_start|>assistant\n")


def test_the_thinker_s_answer_is_bounded_and_a_non_cookbook_one_keeps_the_words(thinker, monkeypatch):
    asked, bounds = FREE_FORM, []
    generate = thinker.model.generate

    def counted(*args, **kwargs):
        bounds.append(kwargs["max_new_tokens"])
        output = generate(*args, **kwargs)
        bounds.append(output.shape[1] - kwargs["input_ids"].shape[1])
        return output

    monkeypatch.setattr(thinker.model, "generate", counted)
    suggestion = enhance.by_thinker(thinker.model, thinker.processor.tokenizer, asked)
    assert bounds[0] == enhance.MAX_NEW_TOKENS and bounds[1] <= enhance.MAX_NEW_TOKENS
    assert suggestion.instruction == asked and not suggestion.rewritten  # random weights answer nonsense
    assert "the thinker's answer was not one of the cookbook's instructions" in suggestion.warning


@pytest.mark.parametrize(("answer", "used"), [
    ("Decrease the volume by 5 dB.\nSure!", "Decrease the volume by 5 dB."),
    ('"Raise the pitch by 2 semitones."', "Raise the pitch by 2 semitones."),
    ('Say the following with the same voice: "Good morning."', 'Say the following with the same voice: "Good morning."'),
    ("Make it quieter, maybe 5 dB.", FREE_FORM),
])
def test_only_a_cookbook_instruction_is_taken_from_the_thinker(answer, used):
    assert enhance.accept(FREE_FORM, answer).instruction == used
