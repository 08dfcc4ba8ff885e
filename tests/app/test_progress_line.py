"""An edit's progress as one line in a person's units (auk_app.ui.progress_line): a whole recording
counts its windows from the first step to the last, with the time left, and never shows the
pipeline's own counters (samples decoded, a phase's fraction)."""

from __future__ import annotations

from auk_app.ui.progress_line import EditProgress, time_left


class Shown:
    """What a gr.Progress would show: each call's fraction and line."""

    def __init__(self) -> None:
        self.lines: list[tuple[tuple[int, int], str, str]] = []

    def __call__(self, fraction, desc: str, unit: str) -> None:
        self.lines.append((fraction, desc, unit))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_whole_recording_reads_windows_done_of_n_with_the_time_left():
    shown, clock = Shown(), Clock()
    report = EditProgress(shown, clock=clock)
    report("windows", 0, 4)
    for step in range(1, 33):  # four windows of eight steps, a second each
        clock.now = float(step)
        report("sample", step, 32)
        if step % 8 == 0:
            report("windows", step // 8, 4)
    report("decode", 1_100_000, 2_900_000)
    report("decode", 2_900_000, 2_900_000)
    descs = [desc for _, desc, _ in shown.lines]
    assert descs[0] == "Editing the recording: 0 of 4 windows done"
    assert "Editing the recording: 2 of 4 windows done · about 15 s left" in descs
    assert descs[-1] == "Editing the recording: all 4 windows done · writing the result"
    assert all(unit == "windows" and desc.startswith("Editing the recording: ") for _, desc, unit in shown.lines)
    assert not any("M" in desc.split(":")[1] or "%" in desc for desc in descs)
    assert [fraction for fraction, _, _ in shown.lines][-1] == (4, 4)
    report("check", 0, 1)  # the edit check of the recording's pieces, after the decode
    assert shown.lines[-1][1:] == ("Editing the recording: all 4 windows done · checking the result", "windows")


def test_a_clip_reads_its_steps_and_no_estimate_before_it_can_tell():
    shown, clock = Shown(), Clock()
    report = EditProgress(shown, candidates=2, clock=clock)
    report("condition", 0, 1)
    clock.now = 0.5
    report("sample", 1, 16)
    clock.now = 10.5
    report("sample", 8, 16)
    descs = [desc for _, desc, _ in shown.lines]
    assert descs == ["Encoding the instruction and the clip", "Sampling 2 candidates together: step 1 of 16",
                     "Sampling 2 candidates together: step 8 of 16 · about 10 s left"]


def test_the_time_left_is_rounded_as_a_person_says_it():
    assert [time_left(s) for s in (4, 42, 60, 83, 600)] == [
        "a few seconds", "about 40 s", "about 1 min", "about 1 min 20 s", "about 10 min"]
