"""The instruction builder: the cookbook's wording in English and Chinese, and the duration rules."""

from __future__ import annotations

import pytest

from auk_app import instructions
from auk_app.config import Limits, frames_for_seconds
from auk_app.instructions import build, speech_seconds
from auk_app.recognise import cookbook_key

LIMITS = Limits()


def test_catalogue_covers_the_sixteen_tasks_of_the_spec():
    assert len(instructions.TASKS) == 16
    assert len({t.key for t in instructions.TASKS}) == 16
    assert {t.category for t in instructions.TASKS} == {
        "Speech generation", "Content editing", "Acoustic editing", "Paralinguistic", "Enhancement & separation",
    }


@pytest.mark.parametrize("language", instructions.LANGUAGES)
@pytest.mark.parametrize("task", instructions.TASKS, ids=lambda t: t.key)
def test_every_task_renders_a_complete_sentence(task, language):
    fields = {name: slot.default or "some words" for name, slot in task.slots.items()}
    built = build(task.key, fields, source_seconds=4.0 if task.needs_audio else None, limits=LIMITS, language=language)
    assert built.instruction and "{" not in built.instruction
    assert built.instruction.rstrip()[-1] in '."’。”'
    assert set(task.slots) <= set(instructions.FIELD_NAMES)
    assert all(bool(slot.choices) == (name in instructions.CHOICE_FIELDS) for name, slot in task.slots.items())
    assert built.problem == ""


@pytest.mark.parametrize(
    ("key", "fields", "expected"),
    [
        ("pitch", {"mode": "Lower", "amount": "3"}, "Lower the pitch by 3 semitones."),
        ("speed", {"amount": "0.75"}, "Adjust the speech speed to 0.75x."),
        ("volume", {"mode": "Increase", "amount": "15"}, "Increase the volume by 15 dB."),
        ("emotion", {"option": "sad"}, "Change the emotion to sad."),
        ("content_edit", {"mode": "Replace", "original": "seven", "text": "eight"}, "Replace 'seven' with 'eight'."),
        ("content_edit", {"mode": "Add after", "original": "hello", "text": "there"}, "Add 'there' after 'hello'."),
        ("content_edit", {"mode": "Remove", "text": "um"}, "Remove 'um'."),
        ("zero_shot_tts", {"text": "Hi there."}, 'Say the following with the same voice: "Hi there."'),
        ("instruct_tts", {"original": "A deep voice", "text": "Hello."},
         'Generate speech based on the following description: "A deep voice". The content to speak is: "Hello.".'),
        ("nonverbal", {"mode": "Remove all", "option": "cough"}, "Remove all coughs from the audio."),
        ("nonverbal", {"mode": "Add at the end", "option": "laugh"}, "Add a laugh at the end of the speech."),
        ("speech_separation", {"option": "second"},
         "Keep only the second speaker to start talking and remove all other speakers."),
        ("target_speaker", {"text": "see you"}, 'Keep only the speaker who says "see you" and remove all other speakers.'),
        ("enhance", {"mode": "Repair", "option": "muffling"}, "Repair the muffling and restore natural, clear speech."),
    ],
)
def test_templates_match_the_cookbook(key, fields, expected):
    assert build(key, fields, source_seconds=3.0, limits=LIMITS).instruction == expected


@pytest.mark.parametrize(
    ("key", "fields", "expected"),
    [  # three sentences held word for word to upstream's docs/COOKBOOK.md
        ("enhance", {"mode": "Remove reverberation"},
         "Remove only the room reverberation, preserve everything else, and output audio of the same length."),
        ("whisper", {"mode": "Whisper → speech"},
         "Convert this whispered speech into a normal speaking voice while preserving the speaker and content."),
        ("music_separation", {"option": "all human voices"},
         "Keep all human voices, including speech and singing, and remove everything else."),
        ("content_edit", {"mode": "Remove before", "original": "today", "text": "um"}, "Remove 'um' before 'today'."),
    ],
)
def test_cookbook_wording(key, fields, expected):
    assert build(key, fields, source_seconds=3.0, limits=LIMITS).instruction == expected


@pytest.mark.parametrize(
    ("key", "fields", "expected"),
    [
        ("instruct_tts", {"original": "温柔的女声", "text": "你好世界"}, '请基于下面的描述: "温柔的女声",生成语音内容"你好世界".'),
        ("content_edit", {"mode": "Replace", "original": "七点", "text": "八点"}, "把‘七点’改成‘八点’"),
        ("content_edit", {"mode": "Add after", "original": "你好", "text": "朋友"}, "在‘你好’后面加上‘朋友’"),
        ("content_edit", {"mode": "Remove after", "original": "今天", "text": "嗯"}, "删掉‘今天’后面的‘嗯’"),
        ("lyric_edit", {"original": "月光", "text": "星光"}, "把这段歌词中的“月光”改成“星光”。"),
        ("pitch", {"mode": "Lower", "amount": "3"}, "将音调降低3个半音。"),
        ("speed", {"amount": "0.75"}, "将语速调整为0.75倍。"),
        ("volume", {"mode": "Increase", "amount": "15"}, "将音量升高15分贝。"),
        ("emotion", {"option": "disgusted"}, "将情感转变为厌恶。"),
        ("timbre", {"original": "低沉的男声"}, "请将这段音频的音色修改为符合以下描述的声音：“低沉的男声”。"),
        ("de_accent", {}, "请去掉这段语音里的方言口音，保持说话人音色一致。"),
        ("nonverbal", {"mode": "Remove all", "option": "cough"}, "删除音频中所有的咳嗽声。"),
        ("nonverbal", {"mode": "Add at the end", "option": "laugh"}, "在语音结尾增加笑声。"),
        ("whisper", {"mode": "Speech → whisper"}, "用小声耳语的方式把这段话说出来。"),
        ("whisper", {"mode": "Whisper → speech"}, "把这段耳语转换成正常说话的声音。"),
        ("enhance", {"mode": "Remove noise"}, "请只去除背景噪声，保留其他内容，输出等长结果。"),
        ("enhance", {"mode": "Remove reverberation"}, "请只去除房间混响，保留其他内容，输出等长结果。"),
        ("enhance", {"mode": "Remove noise and reverberation"}, "请保留所有说话人，去除噪声和混响，输出等长的纯净语音。"),
        ("enhance", {"mode": "Repair", "option": "telephone effect"}, "请修复这段音频的电话感，恢复自然清晰的人声。"),
        ("speech_separation", {"option": "second"}, "只保留第二个开始说话的人，去掉其余说话人。"),
        ("music_separation", {"option": "the singing voice"}, "请只保留歌声，其余声音都去掉。"),
        ("music_separation", {"option": "all human voices"}, "请保留所有人声，包括说话和歌唱，其余声音都去掉。"),
        ("target_speaker", {"text": "明天见"}, "请只保留说“明天见”的人，去掉其他说话人。"),
    ],
)
def test_chinese_templates_match_the_cookbook(key, fields, expected):
    built = build(key, fields, source_seconds=None if key == "instruct_tts" else 3.0, limits=LIMITS, language="zh")
    assert built.instruction == expected and built.problem == ""


def test_zero_shot_tts_has_one_template_for_both_languages_and_says_so():
    english = build("zero_shot_tts", {"text": "你好"}, source_seconds=2.0, limits=LIMITS)
    chinese = build("zero_shot_tts", {"text": "你好"}, source_seconds=2.0, limits=LIMITS, language="zh")
    assert english.instruction == chinese.instruction == 'Say the following with the same voice: "你好"'
    assert "one template for both languages" in chinese.note and "both languages" not in english.note


def test_the_language_is_the_builders_choice_not_a_guess_from_the_text():
    built = build("instruct_tts", {"original": "温柔的女声", "text": "你好世界"}, source_seconds=None, limits=LIMITS)
    assert built.instruction.startswith("Generate speech based on the following description")
    with pytest.raises(ValueError, match="unknown instruction language 'fr'"):
        build("volume", {}, source_seconds=2.0, limits=LIMITS, language="fr")


def test_chinese_text_is_timed_at_the_chinese_rate():
    assert speech_seconds("你好世界") == pytest.approx(12 * 0.0803)  # 4 characters, 3 UTF-8 bytes each


def test_same_length_tasks_ask_for_automatic_duration():
    built = build("volume", {}, source_seconds=3.456, limits=LIMITS)
    assert built.duration.seconds == 0
    assert "3.46 s" in built.duration.reason


def test_speed_divides_the_source_and_quantises_to_the_nearest_frame():
    built = build("speed", {"amount": "1.5"}, source_seconds=3.0, limits=LIMITS)
    assert built.duration.seconds == 2.0
    assert build("speed", {"amount": "0.75"}, source_seconds=3.01, limits=LIMITS).duration.seconds == 4.02  # 4.0133 s


def test_a_proposed_duration_gives_exactly_its_frames_through_the_pipelines_rounding():
    # 3.36 s ÷ 1.5 is 112 frames; 2.24 s would give 113 through ceil(s · 24000 / 480), so 2.23 s
    built = build("speed", {"amount": "1.5"}, source_seconds=3.36, limits=LIMITS)
    assert built.duration.seconds == 2.23 and frames_for_seconds(built.duration.seconds) == 112
    assert "112 frames = 2.24 s of audio" in built.duration.reason


def test_tts_estimate_is_0_0656_s_per_byte():
    text = "x" * 100
    built = build("zero_shot_tts", {"text": text}, source_seconds=2.0, limits=LIMITS)
    assert built.duration.seconds == 6.56 and "328 frames" in built.duration.reason
    assert speech_seconds("Hi") == pytest.approx(2 * 0.0656 / 0.3)  # very short texts are spoken slowly


def test_emotion_uses_the_enhancers_stretch():
    assert build("emotion", {"option": "sad"}, source_seconds=5.0, limits=LIMITS).duration.seconds == 6.1
    # 5 × 1.06 is 5.300000000000001: the nearest frame is 265, where ceil would give 266
    assert build("emotion", {"option": "happy"}, source_seconds=5.0, limits=LIMITS).duration.seconds == 5.3


def test_estimates_are_capped_at_the_target_limit():
    built = build("instruct_tts", {"original": "calm", "text": "word " * 200}, source_seconds=None,
                  limits=Limits(max_target_seconds=30.0))
    assert built.duration.seconds == 30.0
    assert "capped" in built.duration.reason


def test_content_edit_adds_the_length_of_the_changed_words():
    built = build("content_edit", {"mode": "Replace", "original": "one", "text": "one hundred"}, source_seconds=2.0, limits=LIMITS)
    assert built.duration.seconds == 2.52  # 2.5248 s to the nearest frame


def test_problems_name_what_is_missing():
    assert build("timbre", {}, source_seconds=2.0, limits=LIMITS).problem == "Fill in: New timbre."
    assert build("content_edit", {"mode": "Remove", "text": "um"}, source_seconds=2.0, limits=LIMITS).problem == ""  # no anchor used
    assert "Fill in: Words to replace" in build("content_edit", {"mode": "Add after", "text": "um"}, source_seconds=2.0, limits=LIMITS).problem
    assert "upload or record" in build("volume", {}, source_seconds=None, limits=LIMITS).problem
    assert "remove the clip" in build("instruct_tts", {"original": "a", "text": "b"}, source_seconds=2.0, limits=LIMITS).problem


@pytest.mark.parametrize("language", instructions.LANGUAGES)
@pytest.mark.parametrize("key", list(instructions.TEMPLATES))
def test_every_cookbook_template_is_recognised_as_its_own_task(key, language):
    chosen = instructions.task(key.split(":")[0])
    fields = {name: slot.default or "some words" for name, slot in chosen.slots.items()}
    if chosen.variant:
        fields[chosen.variant] = key.split(":", 1)[1]
    recognised = cookbook_key(chosen.render(fields, language))
    # The most literal template wins: "Remove 'a' before 'b'." is Remove before, not a plain Remove.
    assert recognised == key


def test_coverage_marks_the_tasks_a_model_has_all_some_or_none_of():
    demo = ("volume", "pitch", "enhance:Remove noise", "sine_tone")
    assert [instructions.coverage(demo, k) for k in ("volume", "enhance", "emotion")] == ["all", "some", "none"]


def test_community_verdicts_say_they_are_about_the_released_model():
    assert build("volume", {}, source_seconds=2.0, limits=LIMITS).reliability.startswith("Community tests of the released AuK:")


def test_a_clip_longer_than_a_region_is_a_problem_only_for_edits_that_cannot_run_whole():
    assert build("volume", {}, source_seconds=45.0, limits=LIMITS).problem == ""  # runs whole, in windows
    assert build("speed", {"amount": "1.5"}, source_seconds=45.0, limits=LIMITS).problem == (
        "The clip lasts 45.00 s: to change the speed, the words or the voice with this task, choose a region of at "
        "most 30 s; edits that keep the timing and the words (volume, pitch, noise removal and other clean-ups) run "
        "on the whole of it.")
    assert build("speed", {"amount": "1.5"}, source_seconds=30.0, limits=LIMITS).problem == ""
