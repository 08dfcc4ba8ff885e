"""``/edit_batch`` through gradio_client: clips with one instruction, a CSV beside its clips with a
bad row, and the page's limits, refused before anything runs."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from auk_app.ui.batch_tab import KNOBS as BATCH_KNOBS

pytestmark = pytest.mark.slow
RATE = 24_000


def _tone(path, hz: float, seconds: float = 1.0):
    t = np.arange(round(seconds * RATE)) / RATE
    sf.write(str(path), (0.2 * np.sin(2 * np.pi * hz * t)).astype(np.float32), RATE)
    return path


def test_edit_batch_runs_clips_and_returns_one_zip_and_the_report(client, tmp_path):
    from gradio_client import handle_file

    clips = [_tone(tmp_path / f"tone{k}.wav", 200 + 50 * k) for k in range(3)]
    archive, report, table, figures = client.predict(
        files=[handle_file(str(p)) for p in clips], instruction="Decrease the volume by 6 dB.", submission=True,
        seed=3, nfe=8, api_name="/edit_batch")[:4]
    assert report["counts"] == {"items": 3, "done": 3, "skipped": 0, "failed": 0, "stopped": 0}
    assert report["tasks"]["volume"]["count"] == 3 and all(r["seed"] == 3 for r in report["rows"])
    names = set(zipfile.ZipFile(archive).namelist())
    assert {"tone0.wav", "tone0.json", "submission/tone2.wav", "report.csv", "report.md", "figures/volume.png"} <= names
    assert [row[0] for row in table["data"]] == ["tone0", "tone1", "tone2"] and len(figures) == 1


def test_a_csv_beside_its_clips_fails_its_bad_row_alone(client, tmp_path):
    from gradio_client import handle_file

    _tone(tmp_path / "a.wav", 300)
    manifest = tmp_path / "set.csv"
    manifest.write_text("id,audio,instruction,nfe\nquiet,a.wav,Decrease the volume by 6 dB.,8\n"
                        "bad,a.wav,Decrease the volume by 6 dB.,999\n")
    archive, report = client.predict(files=[handle_file(str(manifest)), handle_file(str(tmp_path / "a.wav"))],
                                     api_name="/edit_batch")[:2]
    assert report["counts"]["done"] == 1 and report["failed"] == [
        "Row 2 (bad): nfe (Euler steps) must be a whole number from 1 to 64; got 999."]
    with zipfile.ZipFile(archive) as opened:
        rows = list(csv.DictReader(io.StringIO(opened.read("report.csv").decode())))
    assert [(r["id"], r["status"]) for r in rows] == [("quiet", "done"), ("bad", "failed")]


def test_a_batch_over_the_page_limits_is_refused_before_it_runs(client, tmp_path):
    from gradio_client import handle_file
    from gradio_client.exceptions import ValidationError as ClientError

    from auk_app.ui.batch_tab import MAX_ITEMS

    clip = _tone(tmp_path / "a.wav", 300, 0.2)
    with zipfile.ZipFile(tmp_path / "many.zip", "w") as archive:
        for k in range(MAX_ITEMS + 1):
            archive.write(clip, f"clips/c{k}.wav")
    with pytest.raises(ClientError, match=f"has {MAX_ITEMS + 1} items; a batch here takes at most {MAX_ITEMS}"):
        client.predict(files=[handle_file(str(tmp_path / "many.zip"))], instruction="Decrease the volume by 6 dB.",
                       api_name="/edit_batch")
    with pytest.raises(ClientError, match="nfe"):
        client.predict(files=[handle_file(str(clip))], instruction="Decrease the volume by 6 dB.", nfe=999,
                       api_name="/edit_batch")


def test_a_queued_batch_counts_as_the_runs_its_items_are(app, tmp_path):
    """The model queue's cap counts a waiting batch by its items (a zip's clips, a CSV's rows), not as
    one, reading only Gradio's own uploads (a path elsewhere is Gradio's to refuse, and counts one)."""
    from gradio.utils import get_upload_folder

    info = next(fn for fn in app.demo.fns.values() if fn.api_name == "model_info")
    admission = info.fn.__self__.admission
    uploads = Path(get_upload_folder()) / f"batch-count-{tmp_path.name}"
    uploads.mkdir(parents=True, exist_ok=True)
    clip = _tone(uploads / "a.wav", 300, 0.2)
    with zipfile.ZipFile(uploads / "three.zip", "w") as archive:
        for k in range(3):
            archive.write(clip, f"c{k}.wav")
    (uploads / "rows.csv").write_text("id,audio,instruction\n" + "".join(f"r{k},a.wav,Louder.\n" for k in range(5)))
    runs_of = admission.weights["edit_batch"]
    inputs: list = [None] * 16  # as Gradio holds a queued event's inputs: the files as records
    at = runs_of.__self__.files_at

    def counted(*paths) -> int:
        inputs[at] = [{"path": str(p)} for p in paths]
        return runs_of(inputs)

    assert counted(uploads / "three.zip", clip) == 4 and "edit_batch" in admission.api_names
    assert counted(uploads / "rows.csv", clip) == 5
    (tmp_path / "elsewhere.zip").write_bytes((uploads / "three.zip").read_bytes())
    assert counted(tmp_path / "elsewhere.zip") == 1


def _wrong(knob):
    return [1, 2] if knob.name == "model" else ("yes" if knob.widget == "checkbox" else "abc")


@pytest.mark.parametrize(("name", "value", "says"), [
    ("files", 7, "files is a list of files"),
    ("files", ["a.wav"], "files is a list of files"),
    ("instruction", [1, 2], "The instruction must be text"),
    ("submission", "yes", "submission is true or false"),
    *[(knob.name, _wrong(knob), knob.name) for knob in BATCH_KNOBS],
])
def test_a_raw_batch_call_with_a_wrong_value_is_refused_before_the_queue(app, name, value, says):
    """A raw value of the wrong type is refused at the gate, in a sentence naming it, as the edit's are."""
    import httpx

    info = httpx.get(f"{app.url}gradio_api/info").json()["named_endpoints"]["/edit_batch"]["parameters"]
    data = [value if p["parameter_name"] == name else p.get("parameter_default") for p in info]
    reply = httpx.post(f"{app.url}gradio_api/call/edit_batch", json={"data": data}, timeout=30)
    assert reply.status_code == 422, reply.text[:300]
    refused = [entry for entry in reply.json()["detail"] if entry.get("is_valid") is False]
    assert [entry["parameter_name"] for entry in refused] == [name] and says in refused[0]["message"]
