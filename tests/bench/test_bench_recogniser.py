"""bench_recogniser's scoring on a small file of its own (the held-out file is only parsed here, never
scored, so that no test is written from its wordings)."""

from pathlib import Path

from auk_app.auk.checkpoint import Capabilities
from bench.bench_recogniser import HELDOUT, load, misses, score, summarize, table

DEMO = Capabilities(("volume", "pitch", "enhance:Remove noise", "sine_tone"), ("en",))
OWN = """# a comment line
expected\tfields\twording
volume\tmode=Decrease;amount=4\tfour dB quieter, please
volume\tmode=Increase;amount=4\tfour dB quieter, please
emotion\toption=*\tmake it sound gloomy
enhance:Remove reverberation\t\tkill the reverb
none\t\tadd a flanger
none\t\tmake it louder by 2 dB
"""


def test_scores_tasks_fields_and_warnings(tmp_path: Path):
    path = tmp_path / "own.tsv"
    path.write_text(OWN, encoding="utf-8")
    cases = load(path)
    assert [c.expected for c in cases][:2] == ["volume", "volume"] and cases[2].fields == {"option": "*"}
    scored = [score(case, DEMO) for case in cases]
    assert [s.task_right for s in scored] == [True, True, True, True, True, False]
    assert [s.fields_right for s in scored] == [True, False, True, True, True, False]  # the second asks the wrong way
    assert [s.warned for s in scored] == [False, False, True, True, True, False]  # the demo has no emotion, reverb
    assert all(s.warning_right for s in scored[:5]) and not scored[5].warning_right
    summary = summarize(scored)
    assert summary["volume"] == {"wordings": 2, "task_right": 1.0, "fields_right": 0.5, "warning_right": 1.0}
    assert summary["all"]["wordings"] == 6 and summary["none"]["task_right"] == 0.5
    assert [m["wording"] for m in misses(scored)] == ["four dB quieter, please", "make it louder by 2 dB"]
    assert "| `volume` | 2 | 100% | 50% | 100% |" in table(summary)


def test_the_held_out_file_parses():
    cases = load(HELDOUT)
    assert len(cases) > 150 and all(case.expected and case.wording for case in cases)
