"""The session history's entries, their checks and the zip, and the panel's HTML, without a browser
(the panel in Chromium is in test_browser.py)."""

from __future__ import annotations

import json
import zipfile

import pytest

from auk_app.knobs import AUDEX, EDIT
from auk_app.ui import history, history_view


def _edit_manifest(**requested) -> dict:
    """The fields of an edit's manifest an entry reads, as manifest.edit_manifest writes them."""
    asked = {k.name: k.default for k in EDIT if k.name != "audio"}
    asked.update({"instruction": "Decrease the volume by 10 dB.", "seed": 5, **requested})
    return {"requested": asked, "model_label": "AuK-Tiny (demo)", "created": "2026-12-06T20:31:05+00:00",
            "check": {"display": "asked −10 dB · got −9.8 dB ✓"}, "seed": 1234}


def _audex_manifest(**fields) -> dict:
    return {"caption": "A 440 Hz beep", "cfg": 3.0, "max_seconds": 0.5, "temperature": 0.9, "top_k": 40, "seed": 77,
            "randomized_seed": True, "model": "Audex-Tiny (demo)", "created": "2026-12-06T20:32:00+00:00",
            "report": {"phase_valid": True, "mismatch_count": 0}, "unmasked": None, **fields}


@pytest.fixture
def root(tmp_path):
    """A stand-in for Gradio's temp folder, with one result's WAV and manifest in it."""
    folder = tmp_path / "gradio" / "auk_studio" / "req_1"
    folder.mkdir(parents=True)
    (folder / "out.wav").write_bytes(b"RIFF wav")
    (folder / "out.json").write_text("{}")
    (folder / "in.wav").write_bytes(b"RIFF source")
    return tmp_path / "gradio"


def _edit(root, **files) -> dict:
    folder = root / "auk_studio" / "req_1"
    paths = {"audio": str(folder / "out.wav"), "manifest_file": str(folder / "out.json"),
             "source": str(folder / "in.wav"), **files}
    return history.edit_entry(_edit_manifest(), seed=1234, **paths)


def test_an_edits_entry_replays_what_it_sent_with_the_seed_it_used(root):
    entry = _edit(root, source=None)
    assert entry["kind"] == "edit" and entry["text"] == "Decrease the volume by 10 dB."
    assert entry["model"] == "AuK-Tiny (demo)" and entry["verdict"] == "asked −10 dB · got −9.8 dB ✓"
    settings = entry["settings"]
    assert set(settings) == set(EDIT.names) - {"audio"}  # every knob but the clip, which the entry keeps apart
    assert settings["seed"] == 1234 and settings["randomize_seed"] is False
    assert settings["instruction"] == "Decrease the volume by 10 dB." and settings["nfe"] is None
    assert entry["source"] is None and history.entries([entry]) == [entry]  # what it writes, it reads back


def test_a_sounds_entry_replays_its_knobs_and_says_whether_the_stream_is_valid():
    entry = history.audex_entry(_audex_manifest(), audio="/x/a.wav", manifest_file="/x/a.json")
    assert entry["settings"] == {"caption": "A 440 Hz beep", "cfg": 3.0, "max_seconds": 0.5, "temperature": 0.9,
                                 "top_k": 40, "seed": 77, "randomize_seed": False, "compare_unmasked": False}
    assert set(entry["settings"]) == set(AUDEX.names)
    assert entry["verdict"] == "RVQ phase valid ✓" and entry["model"] == "Audex-Tiny (demo)"
    compared = history.audex_entry(_audex_manifest(report={"phase_valid": False, "mismatch_count": 3},
                                                   unmasked={"report": {}}), audio=None, manifest_file="/x/a.json")
    assert compared["settings"]["compare_unmasked"] is True
    assert compared["verdict"] == "3 RVQ phase mismatches ✗ · nothing decodable"


def test_the_newest_comes_first_and_only_the_last_fifty_are_kept(root):
    made = []
    for _ in range(history.MAX_ENTRIES + 3):
        made = history.added(made, _edit(root))
    newest = _edit(root)
    made = history.added(made, newest)
    assert len(made) == history.MAX_ENTRIES and made[0] is newest and history.find(made, newest["id"]) is newest


@pytest.mark.parametrize("value", [
    None, "a list, once", {"id": "x"},
    [{"kind": "edit"}],  # a field missing
    [{**history.audex_entry(_audex_manifest(), audio=None, manifest_file="/m"), "kind": "video"}],
    [{**history.audex_entry(_audex_manifest(), audio=None, manifest_file="/m"), "audio": ["/etc/passwd"]}],
    [{**history.audex_entry(_audex_manifest(), audio=None, manifest_file="/m"), "settings": "caption"}],
])
def test_what_the_browser_sends_is_checked_and_anything_malformed_dropped(value):
    assert history.entries(value) == []


def test_only_files_still_inside_the_temp_folder_are_used(root, tmp_path):
    inside = root / "auk_studio" / "req_1" / "out.wav"
    (tmp_path / "secret.wav").write_bytes(b"not yours")
    assert history.kept(str(inside), root) == inside.resolve()
    for path in (str(tmp_path / "secret.wav"), str(root / ".." / "secret.wav"), str(root / "gone.wav"), "", None, 3):
        assert history.kept(path, root) is None, path
    entry = _edit(root)
    assert not history.gone(entry, root)
    inside.unlink()
    assert history.gone(entry, root)


def test_the_zip_holds_every_kept_file_numbered_oldest_first_and_the_settings(root, tmp_path):
    (tmp_path / "secret.wav").write_bytes(b"not yours")
    older = _edit(root)
    forged = {**_edit(root), "audio": str(tmp_path / "secret.wav")}  # a path a client made up
    newest = history.audex_entry(_audex_manifest(), audio=None, manifest_file=older["manifest"])
    bundle = history.bundle([newest, forged, older], tmp_path / "all.zip", root)
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        listed = json.loads(archive.read("history.json"))
        assert archive.read("01_out.wav") == b"RIFF wav"
    assert names == ["01_out.wav", "01_out.json", "02_out.json", "03_out.json", "history.json"]
    assert [e["number"] for e in listed] == [1, 2, 3] and [e["kind"] for e in listed] == ["edit", "edit", "audex"]
    assert listed[0]["files"] == ["01_out.wav", "01_out.json"] and listed[1]["files"] == ["02_out.json"]
    assert listed[0]["settings"]["seed"] == 1234 and "id" not in listed[0]
    assert str(tmp_path) not in json.dumps(listed)  # the list names files, not where the server keeps them


def test_the_panel_escapes_what_was_typed_and_offers_only_what_is_kept(root):
    typed = history.edit_entry(_edit_manifest(instruction='<img src=x onerror="alert(1)"> louder'), seed=1,
                               audio=str(root / "auk_studio" / "req_1" / "out.wav"),
                               manifest_file=str(root / "auk_studio" / "req_1" / "out.json"),
                               source=str(root / "auk_studio" / "req_1" / "in.wav"))
    page = history_view.panel_html([typed], root)
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; louder" in page
    assert page.count("<audio") == 2 and 'data-action="ab"' in page and 'data-action="source"' in page
    assert f'src="gradio_api/file={root}/auk_studio/req_1/out.wav"' in page
    assert "seed 1 · asked −10 dB · got −9.8 dB ✓ · 20:31:05 UTC" in page
    (root / "auk_studio" / "req_1" / "in.wav").unlink()  # the source gone: no A/B, the result still plays
    page = history_view.panel_html([typed], root)
    assert page.count("<audio") == 1 and 'data-action="ab"' not in page and 'data-action="source"' in page
    (root / "auk_studio" / "req_1" / "out.wav").unlink()  # the result gone: said so, the title still restores
    page = history_view.panel_html([typed], root)
    assert "<audio" not in page and "no longer kept" in page and 'data-action="restore"' in page
    assert history_view.EMPTY in history_view.panel_html([], root)
