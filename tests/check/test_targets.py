"""The check reads an instruction through the recogniser, never on its own: on free wordings of every
task, in English and Chinese, the task the warnings name, the target the check measures and
whether a whole recording may run are one reading.

These wordings were written for this test, not taken from the recogniser's development cases or
its held-out bench: before the check took its targets from the recogniser, it agreed with it on
none of the noise removals said with "eliminate", "filter out" or "kill", nor on silence trims the
recogniser did not know; the recogniser read 43 of the 50 as written (docs/recogniser.md)."""

from __future__ import annotations

import pytest

from auk_app.catalog import capability_warnings
from auk_app.check import target_of
from auk_app.config import Limits
from auk_app.lengths import WHOLE_TASKS
from auk_app.recognise import language_of, recognise
from auk_app.service import Studio, StudioConfig
from auk_app.whole_file import whole_file_refusal

# (wording, the task the recogniser finds, what the check measures, the number it asks for)
WORDINGS = [
    ("Could you make this recording 4 dB louder?", "volume", "volume", 4.0),
    ("Lower the level by eight decibels.", "volume", "volume", -8.0),
    ("Turn it up by +4.5dB please", "volume", "volume", 4.5),
    ("Keep the pitch, make it 6 dB quieter", "volume", "volume", -6.0),
    ("Cut the gain by 3 dB", "volume", "volume", -3.0),
    ("把声音调大5分贝", "volume", "volume", 5.0),
    ("音量减小八分贝", "volume", "volume", -8.0),
    ("Make the voice deeper by 2 semitones", "pitch", "pitch", -2.0),
    ("Transpose it up three half steps", "pitch", "pitch", 3.0),
    ("Drop the pitch an octave", "pitch", "pitch", -12.0),
    ("Bring the key down by one semitone, keep the speed", "pitch", "pitch", -1.0),
    ("把音调升高三个半音", "pitch", "pitch", 3.0),
    ("音高降低一个八度", "pitch", "pitch", -12.0),
    ("Play it twice as fast", "speed", "speed", 2.0),
    ("Slow the speech down to 0.75x", "speed", "speed", 0.75),
    ("Make him talk 20% faster", "speed", "speed", 1.2),
    ("语速放慢到0.5倍", "speed", "speed", 0.5),
    ("把速度加快1.25倍", "speed", "speed", 1.25),
    ("Eliminate the background hiss.", "enhance", "denoise", None),
    ("Filter out the hiss, please.", "enhance", "denoise", None),
    ("Get rid of the traffic noise behind her", "enhance", "denoise", None),
    ("Kill the hum", "enhance", "denoise", None),
    ("Clean up the noisy recording", "enhance", "denoise", None),
    ("去掉背景里的嗡嗡声", "enhance", "denoise", None),
    ("消除录音中的杂音", "enhance", "denoise", None),
    ("Take the echo out of this room recording", "enhance", "enhance", None),
    ("Fix the clipping in this clip", "enhance", "enhance", None),
    ("去除混响", "enhance", "enhance", None),
    ("Cut the silence at the start.", "trim_silence", "trim", None),
    ("Strip the dead air from both ends", "trim_silence", "trim", None),
    ("删掉开头的静音", "trim_silence", "trim", None),
    ("Give me a 660 Hz beep", "sine_tone", "tone", 660.0),
    ("生成一个500赫兹的纯音", "sine_tone", "tone", 500.0),
    ("Read this aloud in the same voice: 'The train leaves at noon.'", "zero_shot_tts", "zero_shot_tts", None),
    ("Speak 'good evening everyone' in a cheerful young woman's voice", "instruct_tts", "instruct_tts", None),
    ("Swap 'Monday' for 'Friday'", "content_edit", "content_edit", None),
    ("把“苹果”换成“香蕉”", "content_edit", "content_edit", None),
    ("In the song, change the lyric 'blue sky' to 'grey sky'", "lyric_edit", "lyric_edit", None),
    ("Make her sound angrier", "emotion", "emotion", None),
    ("让语气变得更悲伤一些", "emotion", "emotion", None),
    ("Turn the voice into an old man's", "timbre", "timbre", None),
    ("Neutralise his accent", "de_accent", "de_accent", None),
    ("Delete every breath", "nonverbal", "nonverbal", None),
    ("Make it a whisper", "whisper", "whisper", None),
    ("把这段话改成耳语", "whisper", "whisper", None),
    ("Keep just the vocals and drop the backing track", "music_separation", "music_separation", None),
    ("Only keep the speaker who talks first", "speech_separation", "speech_separation", None),
    ("Isolate whoever says 'see you soon'", "target_speaker", "target_speaker", None),
    ("Make it sound warmer", None, "unknown", None),
    ("Add some noise", None, "unknown", None),
]
MEASURED_TASKS = {"volume", "pitch", "speed", "denoise", "trim", "tone"}


@pytest.fixture(scope="module")
def demo():
    return Studio(StudioConfig(device="cpu")).entry("demo")


def test_the_wordings_cover_every_task_in_both_languages():
    from auk_app.instructions import TASKS

    tasks = {task for _, task, _, _ in WORDINGS}
    assert {t.key for t in TASKS} | {"sine_tone", "trim_silence", None} == tasks
    assert len(WORDINGS) >= 40 and sum(language_of(w) == "zh" for w, *_ in WORDINGS) >= 12


@pytest.mark.parametrize(("wording", "task", "measured", "asked"), WORDINGS, ids=[w for w, *_ in WORDINGS])
def test_the_warnings_the_check_and_the_whole_recording_rule_read_a_wording_alike(demo, wording, task, measured, asked):
    found = recognise(wording)
    assert (None if found is None else found.task) == task, found
    target = target_of(found)
    assert (target.task, target.asked) == (measured, asked)
    assert target.measurable == (measured in MEASURED_TASKS), target.reason
    warned = capability_warnings(demo, found, language_of(wording), [])
    reads_as_none = any("reads as none of them" in w for w in warned)
    assert reads_as_none == (found is None) == (target.task == "unknown")
    whole = whole_file_refusal(found, 6, Limits()) is None
    assert whole == (found is not None and found.task in WHOLE_TASKS)
