"""An edit is one job: its upload decoded once and its instruction recognised once, whatever reads them."""

from __future__ import annotations

import pytest
import soundfile as sf

from auk_app import recognise as recogniser
from auk_app import uploads
from auk_app.job import EditJob, edit_problems
from auk_app.results import EditOrder
from auk_app.service import Studio, StudioConfig
from training.long_recordings import slow_tones


def count_readings(monkeypatch) -> dict[str, int]:
    """How often the edit decodes a file and recognises an instruction, counted on the real functions
    (every recognition tries the cookbook's templates once)."""
    counts = {"decodes": 0, "recognitions": 0}

    def counted(name, real):
        def call(*args, **kwargs):
            counts[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(uploads, "read_mono", counted("decodes", uploads.read_mono))
    monkeypatch.setattr(recogniser, "_template", counted("recognitions", recogniser._template))
    return counts


@pytest.mark.parametrize("where", ["whole", "region"])
def test_the_page_the_validator_and_the_job_decode_an_upload_once(clips, monkeypatch, where):
    from auk_app.ui.handlers import Handlers

    studio = Studio(StudioConfig(device="cpu"))
    handlers = Handlers(studio)
    region = {"region_start": 0.1, "region_end": 0.5} if where == "region" else {}
    values = {"audio": str(clips.voice), "instruction": "Make it 6 dB quieter.", "model": "demo", "nfe": 2, "seed": 3,
              "randomize_seed": False, **region}
    counts = count_readings(monkeypatch)
    handlers.on_audio_change(values["audio"], region.get("region_start"), region.get("region_end"))  # the verdict
    assert edit_problems(studio, values) == {}  # the validator, before the queue
    before = counts["recognitions"]
    (delivered,), _ = EditJob(studio, EditOrder.from_knobs(values, studio.config.limits)).run()
    assert counts["decodes"] == 1
    assert counts["recognitions"] - before == 1  # the job's own reading; the check measures what it found
    assert delivered.record["check"]["task"] == "volume" and delivered.record["check"]["asked"] == -6.0


def test_a_whole_recording_is_decoded_once_and_its_windows_share_one_reading(tmp_path, monkeypatch):
    studio = Studio(StudioConfig(device="cpu"))
    path = tmp_path / "tones.wav"
    sf.write(path, slow_tones(8, seed=2), 24_000, subtype="FLOAT")  # past the demo's 6 s window
    values = {"audio": str(path), "instruction": "Make it 6 dB quieter.", "model": "demo", "nfe": 2, "seed": 3,
              "randomize_seed": False}
    counts = count_readings(monkeypatch)
    assert edit_problems(studio, values) == {}
    (delivered,), _ = EditJob(studio, EditOrder.from_knobs(values, studio.config.limits)).run()
    assert delivered.record["windows"]["count"] == 2
    assert counts == {"decodes": 1, "recognitions": 2}  # the validator reads it to refuse what cannot run whole
