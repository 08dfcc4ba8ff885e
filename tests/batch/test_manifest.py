"""Reading a batch's manifest: our rows as JSONL and CSV, a folder of clips, SpeechEditBench's and
Ming-Freeform-Audio-Edit's own layouts, bad rows that fail alone, and manifests refused whole."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from auk_app.batch import ManifestError, read_manifest


def _clip(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), (0.1 * np.sin(np.arange(4800) / 10)).astype(np.float32), 24_000)
    return path


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_jsonl_rows_take_knobs_and_score_fields_and_paths_relative_to_the_manifest(tmp_path):
    _clip(tmp_path / "clips" / "a.wav")
    manifest = read_manifest(_jsonl(tmp_path / "set.jsonl", [
        {"id": "a", "audio": "clips/a.wav", "instruction": "Raise the pitch by 2 semitones.", "seed": 7, "nfe": 8,
         "expected_text": "hello", "task": "pitch"},
        {"id": "gen", "instruction": "Generate a 450 Hz sine tone.", "seconds": 2},
    ]))
    a, gen = manifest.items
    assert manifest.layout == "rows" and a.problem is None and gen.problem is None
    assert a.knobs == {"audio": str(tmp_path / "clips" / "a.wav"), "instruction": "Raise the pitch by 2 semitones.",
                       "seed": 7, "nfe": 8}
    assert a.meta == {"expected_text": "hello", "task": "pitch"} and "audio" not in gen.knobs


def test_csv_cells_become_the_knobs_types_and_empty_cells_the_defaults(tmp_path):
    _clip(tmp_path / "a.wav")
    (tmp_path / "set.csv").write_text("id,audio,instruction,seconds,headroom,nfe\n"
                                      "a,a.wav,Decrease the volume by 6 dB.,1.5,true,\n"
                                      "b,a.wav,Decrease the volume by 6 dB.,,no,eight\n")
    a, b = read_manifest(tmp_path / "set.csv").items
    assert a.knobs["seconds"] == 1.5 and a.knobs["headroom"] is True and "nfe" not in a.knobs
    assert b.knobs["headroom"] is False and b.knobs["nfe"] == "eight"  # the knob's check refuses it in the run


def test_bad_rows_carry_one_sentence_each_and_the_others_stay_good(tmp_path):
    _clip(tmp_path / "a.wav")
    items = read_manifest(_jsonl(tmp_path / "set.jsonl", [
        {"id": "ok", "audio": "a.wav", "instruction": "Decrease the volume by 6 dB."},
        {"id": "gone", "audio": "missing.wav", "instruction": "Decrease the volume by 6 dB."},
        {"id": "odd", "audio": "a.wav", "instruction": "x", "colour": "red"},
        {"id": "../up", "audio": "a.wav", "instruction": "x"},
        {"id": "ok", "audio": "a.wav", "instruction": "x"},
        "{not json",
    ])).items
    problems = [item.problem for item in items]
    assert problems[0] is None
    assert problems[1] == "Row 2 (gone): the audio file missing.wav does not exist beside the manifest."
    assert problems[2].startswith("Row 3 (odd): the column 'colour' is no knob")
    assert "is not a file name" in problems[3] and "used by a row above it" in problems[4]
    assert problems[5].startswith("Row 6 is not a record with the manifest's columns")


@pytest.mark.parametrize("content, words", [
    ("", "has no rows"),
    ("{nope\n[also not\n", "is not JSON Lines"),
])
def test_a_manifest_that_cannot_be_read_is_refused_in_one_sentence(tmp_path, content, words):
    path = tmp_path / "set.jsonl"
    path.write_text(content)
    with pytest.raises(ManifestError, match=words):
        read_manifest(path)


def test_missing_and_headerless_manifests_and_folders_without_an_instruction_are_refused(tmp_path):
    with pytest.raises(ManifestError, match="does not exist"):
        read_manifest(tmp_path / "nope.jsonl")
    (tmp_path / "plain.csv").write_text("a.wav,Decrease the volume\n")
    with pytest.raises(ManifestError, match="no header row"):
        read_manifest(tmp_path / "plain.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage\x81")
    with pytest.raises(ManifestError, match="cannot be read as UTF-8"):
        read_manifest(tmp_path / "bin.csv")
    _clip(tmp_path / "clips" / "b.flac")
    with pytest.raises(ManifestError, match="--instruction"):
        read_manifest(tmp_path / "clips")


def test_a_folder_of_clips_is_one_item_a_clip_with_one_instruction(tmp_path):
    for name in ("b.flac", "a.wav"):
        _clip(tmp_path / "clips" / name)
    (tmp_path / "clips" / "notes.txt").write_text("not a clip")
    manifest = read_manifest(tmp_path / "clips", instruction="Decrease the volume by 6 dB.")
    assert manifest.layout == "folder" and [i.id for i in manifest.items] == ["a", "b"]
    assert all(i.knobs["instruction"] == "Decrease the volume by 6 dB." and i.problem is None for i in manifest.items)


def test_speech_edit_benchs_samples_map_onto_our_fields_with_paths_from_the_release_root(tmp_path):
    _clip(tmp_path / "data" / "prosody_editing" / "audio" / "x.wav")
    _clip(tmp_path / "data" / "acoustic_editing" / "audio" / "target_reference" / "y.wav")
    _clip(tmp_path / "data" / "acoustic_editing" / "audio" / "source" / "y.wav")
    speed = _jsonl(tmp_path / "data" / "prosody_editing" / "samples.jsonl", [{
        "sample_id": "x", "task": "prosody_editing", "audio_path": "data/prosody_editing/audio/x.wav",
        "instruction": "Speak faster.", "transcript": "Once held by Hobson.", "language": "en",
        "anchor": {"type": "prosody", "prosody_type": "speed", "direction": "faster"}, "source_duration_sec": 6.1}])
    (item,) = read_manifest(speed).items
    assert read_manifest(speed).layout == "SpeechEditBench" and item.problem is None and item.id == "x"
    assert item.knobs["audio"] == str(tmp_path / "data/prosody_editing/audio/x.wav")
    assert item.meta == {"transcript": "Once held by Hobson.", "language": "en", "task": "speed", "direction": "faster"}
    noisy = _jsonl(tmp_path / "data" / "acoustic_editing" / "samples.jsonl", [{
        "sample_id": "y", "task": "acoustic_editing", "audio_path": "data/acoustic_editing/audio/source/y.wav",
        "instruction": "Remove background noise from the speech.", "anchor": {
            "subtask": "enhancement", "target_reference_path": "data/acoustic_editing/audio/target_reference/y.wav"}}])
    (item,) = read_manifest(noisy).items
    assert item.meta["task"] == "enhancement" and item.meta["clean"].endswith("target_reference/y.wav")


def test_ming_freeform_meta_csvs_map_onto_our_fields_with_or_without_their_header(tmp_path):
    _clip(tmp_path / "wavs" / "u1.wav")
    _clip(tmp_path / "wavs" / "u2.wav")
    (tmp_path / "meta" / "del").mkdir(parents=True)
    (tmp_path / "meta" / "del" / "meta_en_deletion.csv").write_text(
        "file_name|path|instruction|original_text|edited_text\n"
        "u1|/their/machine/u1.wav|Delete 'very'.|a very good day|a good day\n")
    (item,) = read_manifest(tmp_path / "meta" / "del" / "meta_en_deletion.csv").items
    assert item.problem is None and item.id == "u1" and item.knobs["audio"] == str(tmp_path / "wavs" / "u1.wav")
    assert item.meta == {"transcript": "a very good day", "expected_text": "a good day", "task": "del"}
    (tmp_path / "meta" / "vol").mkdir()
    (tmp_path / "meta" / "vol" / "meta_en_vol.csv").write_text(
        "vol_u2|wavs/u2.wav|Please adjust the volume to 1.5|some words|vol(1.5)\n")
    (item,) = read_manifest(tmp_path / "meta" / "vol" / "meta_en_vol.csv").items
    assert item.problem is None and item.id == "vol_u2"
    assert item.meta == {"transcript": "some words", "task": "vol", "amount": 1.5}
