"""The task recogniser (``auk_app.recognise``): every cookbook template read back exactly, the same
requests in other punctuation, quotes, number words and word order, and requests of no task.

These wordings are the rules' own development cases; the recogniser's accuracy is measured on a
held-out set written after them (``bench/bench_recogniser.py``)."""

from __future__ import annotations

import pytest

from auk_app import instructions
from auk_app.recognise import Recognised, language_of, recognise, rewrite, unmatched, untrained
from auk_app.wording import digits, normalise, quoted_spans


def _cookbook_cases():
    """Every template in both languages with every value of its choice fields."""
    for key in instructions.TEMPLATES:
        chosen = instructions.task(key.partition(":")[0])
        base = {name: slot.default or "some words" for name, slot in chosen.slots.items()}
        if chosen.variant:
            base[chosen.variant] = key.partition(":")[2]
        variations = [base] + [{**base, name: value} for name, slot in chosen.slots.items()
                               if slot.choices and name != chosen.variant for value in slot.choices]
        for language in instructions.LANGUAGES:
            for fields in variations:
                yield pytest.param(key, fields, language, id=f"{key}-{language}-{'-'.join(map(str, fields.values()))}")


@pytest.mark.parametrize(("key", "fields", "language"), list(_cookbook_cases()))
def test_every_cookbook_instruction_is_read_back_exactly(key, fields, language):
    chosen = instructions.task(key.partition(":")[0])
    text = chosen.render(fields, language)
    found = recognise(text)
    assert found is not None and found.key == key, (text, found)
    used = {name for name in fields if f"{{{name}}}" in chosen.templates(fields)[0]}
    assert {name: found.fields[name] for name in used} == {name: fields[name] for name in used}
    assert found.instruction(language) == text


@pytest.mark.parametrize(("text", "key", "fields"), [
    # a full stop inside the quotes, curly quotes, a missing final stop, no capitals
    ('Generate speech based on the following description: "A calm, low male voice." The content to speak is: '
     '"Welcome to the studio."', "instruct_tts",
     {"original": "A calm, low male voice", "text": "Welcome to the studio."}),
    ("Replace “seven” with “eight”", "content_edit:Replace", {"original": "seven", "text": "eight"}),
    ("replace 'seven' with 'eight'", "content_edit:Replace", {"original": "seven", "text": "eight"}),
    ("Keep only the speaker who says 「see you tomorrow」.", "target_speaker", {"text": "see you tomorrow"}),
    ("请只保留说『明天见』的人，去掉其他说话人", "target_speaker", {"text": "明天见"}),
    ("将音量降低６分贝", "volume", {"mode": "Decrease", "amount": "6"}),  # full-width digit, no full stop
    ("删掉‘at seven’", "content_edit:Remove", {"text": "at seven"}),  # a quote opened after a Chinese character
    ("请基于下面的描述：“温柔的女声。”，生成语音内容“你好世界”。", "instruct_tts", {"original": "温柔的女声", "text": "你好世界"}),
    ("  Raise   the pitch by 2 semitones  ", "pitch", {"mode": "Raise", "amount": "2"}),
])
def test_punctuation_and_quotes_do_not_matter(text, key, fields):
    found = recognise(text)
    assert found is not None and found.key == key and {k: found.fields.get(k) for k in fields} == fields, found


@pytest.mark.parametrize(("text", "key", "fields"), [
    ("make it five decibels quieter please", "volume", {"mode": "Decrease", "amount": "5"}),
    ("Turn it up by 3 dB", "volume", {"mode": "Increase", "amount": "3"}),
    ("by ten dB, make it louder", "volume", {"mode": "Increase", "amount": "10"}),
    ("gain -4.5 dB", "volume", {"mode": "Decrease", "amount": "4.5"}),
    ("把音量调大5分贝", "volume", {"mode": "Increase", "amount": "5"}),
    ("Lower the pitch two semitones", "pitch", {"mode": "Lower", "amount": "2"}),
    ("Shift it up an octave", "pitch", {"mode": "Raise", "amount": "12"}),
    ("transpose down a whole step", "pitch", {"mode": "Lower", "amount": "2"}),
    ("-300 cents of pitch", "pitch", {"mode": "Lower", "amount": "3"}),
    ("升高两个半音", "pitch", {"mode": "Raise", "amount": "2"}),
    ("Speed it up by 50%", "speed", {"amount": "1.5"}),
    ("Slow it down to half speed", "speed", {"amount": "0.5"}),
    ("play it at 0.75x", "speed", {"amount": "0.75"}),
    ("make it one and a half times as fast", "speed", {"amount": "1.5"}),
    ("slow down 2x", "speed", {"amount": "0.5"}),
    ("把语速加快到一点五倍", "speed", {"amount": "1.5"}),
    ("Generate a 440 Hz tone", "sine_tone", {"amount": "440"}),
    ("A beep at 1 kHz", "sine_tone", {"amount": "1000"}),
    ("Remove the background noise please", "enhance:Remove noise", {}),
    ("Get rid of the echo", "enhance:Remove reverberation", {}),
    ("Clean up the hiss and the room echo", "enhance:Remove noise and reverberation", {}),
    ("Fix the clipping", "enhance:Repair", {"option": "clipping"}),
    ("it sounds like a phone call, repair it", "enhance:Repair", {"option": "telephone effect"}),
    ("去掉背景噪音", "enhance:Remove noise", {}),
    ("Make it sound angrier", "emotion", {"option": "angry"}),
    ("Say it sadly", "emotion", {"option": "sad"}),
    ("用开心的语气说", "emotion", {"option": "happy"}),
    ("Remove all the coughs", "nonverbal:Remove all", {"option": "cough"}),
    ("Add a laugh at the start", "nonverbal:Add at the beginning", {"option": "laugh"}),
    ("end it with a sigh", "nonverbal:Add at the end", {"option": "breath"}),
    ("Whisper it", "whisper:Speech → whisper", {}),
    ("Turn this whisper into a normal voice", "whisper:Whisper → speech", {}),
    ("Get rid of his accent", "de_accent", {}),
    ("Keep only the vocals", "music_separation:the singing voice", {}),
    ("Remove the music from my podcast", "music_separation:all human voices", {}),
    ("Keep only the speaker who starts talking first", "speech_separation", {"option": "first"}),
    ("Isolate the second speaker", "speech_separation", {"option": "second"}),
    ("Keep only the person who says 'see you tomorrow'", "target_speaker", {"text": "see you tomorrow"}),
    ("Say 'nine' instead of 'seven'", "content_edit:Replace", {"original": "seven", "text": "nine"}),
    ("substitute 'nine' for 'seven'", "content_edit:Replace", {"original": "seven", "text": "nine"}),
    ("Delete the word 'um'", "content_edit:Remove", {"text": "um"}),
    ("Insert \"really\" before \"good\"", "content_edit:Add before", {"text": "really", "original": "good"}),
    ("把“七点”改成“八点”", "content_edit:Replace", {"original": "七点", "text": "八点"}),
    ('Change the lyric "moonlight" to "streetlight"', "lyric_edit", {"original": "moonlight", "text": "streetlight"}),
    ('Say "hello there" in the same voice', "zero_shot_tts", {"text": "hello there"}),
    ("Read this in my voice: The meeting starts at noon.", "zero_shot_tts", {"text": "The meeting starts at noon."}),
    ("用同样的声音说：“你好世界”", "zero_shot_tts", {"text": "你好世界"}),
    ('In a warm, low female voice, say "The library opens at nine."', "instruct_tts",
     {"original": "a warm, low female voice", "text": "The library opens at nine."}),
    ("Make him sound like an old man", "timbre", {"original": "an old man"}),
    ("把音色换成低沉的男声", "timbre", {"original": "低沉的男声"}),
])
def test_paraphrases_numbers_and_word_order(text, key, fields):
    found = recognise(text)
    assert found is not None and found.key == key and {k: found.fields.get(k) for k in fields} == fields, found


@pytest.mark.parametrize(("text", "key", "fields"), [
    # a Chinese cue inside a longer word: 声音调大 holds 音调 (pitch), 音高 holds 高 (up), 换气声 holds 气声 (breathy)
    ("把声音调大十分贝", "volume", {"mode": "Increase", "amount": "10"}),
    ("音高往下调两个半音", "pitch", {"mode": "Lower", "amount": "2"}),
    ("删掉所有换气声", "nonverbal:Remove all", {"option": "breath"}),
    ("请生成300Hz正弦波", "sine_tone", {"amount": "300"}),  # no \b between "Hz" and a Chinese character
    ("remove 'uh' which appears after 'then'", "content_edit:Remove after", {"text": "uh", "original": "then"}),
    ("Remove 'it's'.", "content_edit:Remove", {"text": "it's"}),  # an apostrophe inside quotes
    ("Say this in my voice: Meet me at nine.", "zero_shot_tts", {"text": "Meet me at nine."}),  # words as typed
    ("把正常说话变成耳语", "whisper:Speech → whisper", {}),  # 把X变成Y names a task here, not a word edit
])
def test_words_inside_words_quotes_inside_quotes_and_numbers_in_the_words_to_say(text, key, fields):
    found = recognise(text)
    assert found is not None and found.key == key and {k: found.fields.get(k) for k in fields} == fields, found


@pytest.mark.parametrize("text", [
    "Add reverb like a cathedral.", "add some echo", "Make it sound like it's underwater", "Translate this into French",
    "Add background music", "Remove the vocals", "Make it sound like a phone call", "", "   ", "加点混响",
])
def test_requests_of_no_task_are_not_recognised(text):
    assert recognise(text) is None


def test_the_language_is_the_requests_own_not_its_quoted_words():
    assert recognise("将音量升高6分贝").language == "zh"
    assert recognise('Say "你好" in the same voice').language == "en"


def test_rewrite_gives_the_cookbook_instruction_or_none_when_unsure():
    assert rewrite("make it five decibels quieter please") == "Decrease the volume by 5 dB."
    assert rewrite("make it five decibels quieter please", language="zh") == "将音量降低5分贝。"
    assert rewrite("Speed it up by 50%") == "Adjust the speech speed to 1.5x."
    assert rewrite("make it quieter") is None  # by how much is not said
    assert rewrite("Add reverb like a cathedral.") is None
    quieter = recognise("make it quieter")
    assert quieter == Recognised("volume", {"mode": "Decrease"}, "en") and quieter.instruction() is None
    assert recognise("Generate a 440 Hz tone").instruction("zh") == "Generate a 440 Hz sine tone."  # trained in English


@pytest.mark.parametrize(("text", "expected"), [
    ("make it five decibels quieter", "make it 5 decibels quieter"),
    ("raise it by two", "raise it by 2"),
    ("speed it up to one and a half times", "speed it up to 1.5 times"),
    ("one point two five x", "1.25 x"),
    ("twenty-one dB", "21 dB"),
    ("three hundred and forty hertz", "340 hertz"),
    ("the one who speaks first", "the one who speaks first"),  # a pronoun, not an amount
    ("将音调降低两个半音", "将音调降低2个半音"),
    ("语速调整为一点五倍", "语速调整为1.5倍"),
    ("一百零五赫兹", "105赫兹"),
    ("快百分之二十", "快20%"),
    ("第二个开始说话的人", "第二个开始说话的人"),  # an ordinal
    ("声音大一点", "声音大一点"),  # "a little"
])
def test_number_words_become_digits_only_as_amounts(text, expected):
    assert digits(text) == expected


def test_quotes_of_every_kind_become_one_and_apostrophes_open_none():
    text = normalise("把“七点”改成「八点」， ‘it’s’ and 'don't'。")
    assert text == "把\"七点\"改成\"八点\", 'it's' and 'don't'."
    assert [m.group(1) or m.group(2) for m in quoted_spans(text)] == ["七点", "八点", "it's", "don't"]
    assert quoted_spans(normalise("the speaker's voice")) == []


DEMO_TASKS = ("volume", "pitch", "enhance:Remove noise", "sine_tone")


def _untrained(text, tasks, languages):
    return untrained(recognise(text), language_of(text), tasks, languages)


def test_what_a_model_was_not_trained_for_is_named_in_any_wording():
    assert _untrained("Raise the pitch by 2 semitones.", DEMO_TASKS, ("en",)) == []
    assert _untrained("Make it louder by 6 dB, please.", DEMO_TASKS, ("en",)) == []
    assert _untrained("Change the emotion to sad.", DEMO_TASKS, ("en",)) == ["Emotion"]
    assert _untrained("Could you make it sound a bit sadder?", DEMO_TASKS, ("en",)) == ["Emotion"]
    reverb = "Remove only the room reverberation, preserve everything else, and output audio of the same length."
    assert _untrained(reverb, DEMO_TASKS, ("en",)) == ["Speech enhancement (Remove reverberation)"]
    assert _untrained("get rid of the echo", DEMO_TASKS, ("en",)) == ["Speech enhancement (Remove reverberation)"]
    # the page's own example, with its full stop inside the quotes as people write it
    described = ('Generate speech based on the following description: "A calm, low male voice." '
                 'The content to speak is: "Welcome to the studio."')
    assert _untrained(described, DEMO_TASKS, ("en",)) == ["Instruct TTS (voice from a description, no clip)"]
    assert _untrained("将音量升高6分贝。", DEMO_TASKS, ("en",)) == ["Chinese instructions (it reads English only)"]
    assert _untrained('Say "你好" in the same voice', DEMO_TASKS, ("en",)) == [
        "Zero-shot TTS (clone the clip's voice)"]  # Chinese only inside the quotes: the words to say
    assert _untrained("将情感转变为开心。", None, ("en", "zh")) == []


def test_a_request_of_no_task_is_named_with_what_the_model_knows_and_the_fix():
    assert _untrained("Add reverb like a cathedral.", DEMO_TASKS, ("en",)) == []
    assert unmatched(recognise("Add reverb like a cathedral."), DEMO_TASKS, "AuK-Tiny (demo)") == [
        "AuK-Tiny (demo) was trained only for Volume, Pitch, Speech enhancement (Remove noise) and Sine tone (text to "
        "tone), and this request reads as none of them, so expect a result that does not follow it; word it as one "
        "of those, as the instruction builder does."]
    assert unmatched(recognise("Add reverb like a cathedral."), None, "AuK") == [
        "AuK was trained for the 16 tasks of the instruction builder, and this request reads as none of them, so "
        "expect a result that does not follow it; word it as one of those, as the instruction builder does."]
    for known in ("Generate a 450 Hz sine tone.", "make it five decibels quieter please", "Change the emotion to sad."):
        assert unmatched(recognise(known), DEMO_TASKS, "AuK-Tiny (demo)") == []
