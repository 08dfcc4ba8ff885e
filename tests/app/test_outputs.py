"""What a result becomes: level-true WAV, PNG figures, manifests, the report table and the UI wording."""

from __future__ import annotations

import json
import os
from pathlib import Path
import sys
import time
import types

import numpy as np
import pytest
import soundfile as sf

from auk_app import levels
from auk_app.ui import outputs, rvq_table, zerogpu
from auk_app.ui import text as ui_text
from auk_app.audio_io import load_mono
from auk_app.auk.configs import Recipe
from auk_app.auk.request import EditRecord, EditResult
from auk_app.check import unmeasured
from auk_app.config import Limits
from auk_app.results import EditOrder, deliver

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SR = 24_000


def _sine(seconds: float, amplitude: float, rate: int = SR) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def _result(wav: np.ndarray, source_path=None) -> EditResult:
    """A pipeline result for ``wav``; with ``source_path`` (a 24 kHz mono clip) as its source."""
    source = None if source_path is None else load_mono(source_path)
    assert source is None or (source.sample_rate, source.channels) == (SR, 1)
    record = EditRecord(
        checkpoint_name="AuK-Tiny (demo)", variant="base", checkpoint="AuK-Tiny", instruction="Decrease the volume by 10 dB.",
        seed=11, recipe=Recipe(nfe=16, cfg=1.0, sway=-1.0), gen_frames=25, ref_frames=25,
        ref_latent_frames=25, frames_capped=False, fit_to_source=True, seconds=wav.size / SR, sample_rate=SR,
        source_seconds=None if source is None else source.seconds,
        source_samples_24k=None if source is None else source.mono.size,
        source_sample_rate=None if source is None else SR, source_channels=None if source is None else 1,
        region=None, region_context=None, region_crossfade=None, region_seconds=None, vae_sample=False, condition_cache_hit=False, timings={"sample": 0.1, "total": 0.2}, rtf=0.4, device="cpu",
        dtype="float32",
    )
    return EditResult(wav=wav, sample_rate=SR, record=record, source=None if source is None else source.mono)


MODEL = {"key": "demo", "label": "AuK-Tiny (demo)", "demo": True}
CHECK = unmeasured("volume", "not measured in these tests")


def _render(result: EditResult, root, source_path=None, *, randomize_seed=False):
    """``result`` delivered as the Studio delivers it, then rendered into ``root``."""
    order = EditOrder.from_knobs({"audio": source_path, "instruction": result.record.instruction, "seconds": 1,
                                  "randomize_seed": randomize_seed, "seed": result.record.seed}, Limits())
    delivery = deliver(result, order, model=MODEL, check=CHECK, check_seconds=0.0,
                       candidate={"rank": 1, "of": 1, "seeds": [11]})
    return outputs.render_edit(delivery, MODEL["key"], root=root)


def test_the_wav_keeps_the_models_level(tmp_path, clips):
    quiet = _sine(0.5, 0.1)  # −20 dBFS: Gradio's float path would have raised this to full scale
    made = _render(_result(quiet, clips.voice), tmp_path, clips.voice)
    info = sf.info(str(made.audio))
    assert (info.samplerate, info.channels, info.subtype) == (SR, 1, "PCM_16")
    back, _ = sf.read(str(made.audio), dtype="float32")
    np.testing.assert_allclose(back, quiet, atol=1.5 / 32768)  # PCM16 rounding only
    assert made.manifest["output"]["peak_dbfs"] == pytest.approx(-20.0, abs=0.01)
    assert made.manifest["level_change"]["peak_dbfs"] == pytest.approx(-20.0 - 20 * np.log10(0.5), abs=0.05)


def test_edit_deliverables_live_in_a_fresh_folder_with_a_complete_manifest(tmp_path, clips):
    made = _render(_result(_sine(0.6, 0.3), clips.voice), tmp_path, clips.voice, randomize_seed=True)
    assert made.audio.parent == made.figure.path.parent == made.manifest_file.parent
    assert made.audio.parent.parent == tmp_path
    assert not made.figure.path.exists()  # the audio does not wait for the figure: drawn on request
    assert made.figure.draw() == made.figure.path and made.figure.path.read_bytes()[:8] == PNG_MAGIC
    on_disk = json.loads(made.manifest_file.read_text())
    assert on_disk == made.manifest
    for key in ("seed", "sample_rate", "model", "nfe", "cfg", "sway", "t_grid", "gen_frames", "seconds", "timings",
                "ignored", "checkpoint", "versions", "device", "rtf", "source", "output", "requested"):
        assert key in on_disk, key
    assert on_disk["model"] == "demo" and on_disk["randomized_seed"] is True
    assert on_disk["source"]["sha256"] and on_disk["source"]["sample_rate"] == SR
    assert {"auk_app", "gradio", "torch", "python"} <= on_disk["versions"].keys()
    assert "render" in on_disk["timings"]


def test_flac_and_mp3_come_beside_the_wav_with_the_same_samples(tmp_path, clips):
    """FLAC (and MP3 where libsndfile encodes it) beside the WAV, at its level."""
    from auk_app.audio_io import companion_formats, write_companions

    made = _render(_result(_sine(0.6, 0.3), clips.voice), tmp_path, clips.voice)
    files = write_companions(made.audio)
    pcm, rate = sf.read(str(made.audio), dtype="int16")
    assert set(files) == set(companion_formats()) and "flac" in files
    assert all(path.parent == made.audio.parent and path.stem == made.audio.stem for path in files.values())
    flac, flac_rate = sf.read(str(files["flac"]), dtype="int16")
    assert flac_rate == rate and np.array_equal(flac, pcm)  # lossless: bit-exact to the WAV's PCM16
    assert sf.info(str(files["flac"])).format == "FLAC"
    if "mp3" in files:
        mp3, mp3_rate = sf.read(str(files["mp3"]), dtype="float32")
        assert mp3_rate == rate and abs(mp3.shape[0] - pcm.shape[0]) < rate // 10
        rms = lambda x: float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))  # noqa: E731
        assert rms(mp3) == pytest.approx(rms(pcm / 32768.0), rel=0.05)  # the WAV's level, not normalised


def test_a_text_only_result_has_a_figure_without_a_source(tmp_path):
    made = _render(_result(_sine(0.4, 0.2)), tmp_path)
    assert made.manifest["source"] is None
    assert made.manifest["level_change"] == {"seconds": None, "peak_dbfs": None, "rms_dbfs": None}
    assert made.figure.draw().read_bytes()[:8] == PNG_MAGIC


def test_request_folders_are_unique_and_old_ones_are_pruned(tmp_path):
    old = outputs.new_request_dir(tmp_path)
    stale = time.time() - outputs.MAX_AGE_SECONDS - 60
    os.utime(old, (stale, stale))
    first, second = outputs.new_request_dir(tmp_path), outputs.new_request_dir(tmp_path)
    assert first != second and first.is_dir() and second.is_dir()
    assert not old.exists()


def test_request_folders_keep_to_a_size_whatever_their_age(tmp_path):
    """Young folders go too, oldest first, once they hold more than the budget."""
    folders = []
    for age in (300, 200, 100):  # seconds ago: all well within the hour
        folder = outputs.new_request_dir(tmp_path, max_bytes=10**9)
        (folder / "result.wav").write_bytes(bytes(400_000))
        os.utime(folder, (time.time() - age, time.time() - age))
        folders.append(folder)
    newest = outputs.new_request_dir(tmp_path, max_bytes=1_000_000, min_age_s=50)
    assert [f.exists() for f in folders] == [False, True, True] and newest.is_dir()
    assert outputs.MAX_RESULT_BYTES == 1 << 30


def test_a_result_young_enough_to_be_downloading_is_kept_over_the_size_budget(tmp_path):
    folders = []
    for age in (600, 60):  # seconds ago: one old enough to go, one a client may still be fetching
        folder = outputs.new_request_dir(tmp_path, max_bytes=10**9)
        (folder / "result.wav").write_bytes(bytes(400_000))
        os.utime(folder, (time.time() - age, time.time() - age))
        folders.append(folder)
    outputs.new_request_dir(tmp_path, max_bytes=1)
    assert [f.exists() for f in folders] == [False, True] and outputs.MIN_AGE_SECONDS == 300


def test_level_description_names_the_changes():
    before = levels.levels(_sine(1.0, 0.5), SR)
    after = levels.levels(_sine(1.0, 0.05), SR)
    line = levels.describe(before, after)
    assert "peak -6.02 → -26.02 dBFS (-20.00)" in line and "duration 1.00 → 1.00 s (+0.00)" in line
    assert levels.levels(np.zeros(10, np.float32), SR)["peak_dbfs"] is None  # silence, not -inf


REPORT = {"phase_valid": False, "mismatch_count": 3, "first_mismatch": [4, 5000, 4, 0], "codec_count": 9, "frames": 2,
          "dropped_tokens": 1, "end_reason": "codec_cap", "upper_range_tokens": 2, "non_codec_tokens": 0,
          "generated_tokens": 9, "decodable": False, "decoded_frames": 0, "seconds": 0.0}


def test_report_table_reads_like_sentences():
    table = rvq_table.report_table({**REPORT, "phase_valid": True, "mismatch_count": 0, "first_mismatch": None,
                                    "decodable": True}, REPORT)
    lines = table.splitlines()
    assert lines[0] == "| Check | With the phase mask | Without the mask |"
    assert "| Phase-valid (position p from codebook p mod 4) | ✓ yes | ✗ no |" in lines
    assert any("position 4: codec id 5000 is codebook 4, expected 0" in line for line in lines)
    assert rvq_table.report_table(REPORT).splitlines()[0] == "| Check | With the phase mask |"


def test_status_line_says_what_is_loaded_where():
    info = {"models": {"demo": {"label": "AuK-Tiny (demo)"}}, "default_model": "demo", "loaded_model": None,
            "device": "cpu", "dtype": "float32", "audex_demo": True}
    line = ui_text.status_line(info)
    assert "AuK-Tiny (demo)" in line and "none yet" in line and "cpu" in line and "float32" in line
    assert "Audex-Tiny demo" in line
    assert "hf download tencent/AuK" in ui_text.demo_banner()


def test_zerogpu_hook_is_the_identity_without_spaces_and_spaces_gpu_with_it(monkeypatch):
    def handler(x):
        return x

    monkeypatch.setitem(sys.modules, "spaces", None)  # "not installed"
    assert zerogpu.gpu(lambda *a: 60)(handler) is handler
    calls = []
    fake = types.ModuleType("spaces")
    fake.GPU = lambda duration: (calls.append(duration), lambda fn: ("wrapped", fn))[1]
    monkeypatch.setitem(sys.modules, "spaces", fake)
    budget = lambda *a: 60  # noqa: E731
    assert zerogpu.gpu(budget)(handler) == ("wrapped", handler)
    assert calls == [budget]


def _draw_chinese(path, words: str = "将音量升高6分贝。") -> list[str]:
    """The warnings matplotlib gives while drawing a figure captioned in Chinese."""
    import warnings

    from auk_app.ui import figures

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figures.font_family()  # after the filter above, as in the app (the fallback's own filter goes in front)
        figures.before_after(path, _sine(0.2, 0.3), SR, caption=f"{words}\nduration 0.20 s")
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_chinese_captions_are_drawn_with_a_cjk_font(tmp_path):
    from auk_app.ui import figures

    figures.font_family.cache_clear()
    assert figures.font_family()[1] in figures.CJK_FAMILIES
    assert _draw_chinese(tmp_path / "zh.png") == []


def test_without_a_system_cjk_font_typed_chinese_draws_with_the_packaged_one(tmp_path, monkeypatch):
    """No CJK family installed (none of CJK_FAMILIES known): the figures take Noto Sans CJK SC from
    the pinned package, and Chinese that is none of the app's own wording draws with no glyph missing."""
    from matplotlib import font_manager

    from auk_app.ui import figures

    monkeypatch.setattr(figures, "CJK_FAMILIES", ("No Such CJK Family",))
    figures.font_family.cache_clear()
    try:
        assert figures.font_family() == ("DejaVu Sans", "Noto Sans CJK SC")
        assert any(f.name == "Noto Sans CJK SC" and "mplfonts" in f.fname for f in font_manager.fontManager.ttflist)
        assert _draw_chinese(tmp_path / "zh.png", "请把狗叫声和汽车喇叭声都去掉") == []
        assert (tmp_path / "zh.png").stat().st_size > 0
    finally:
        figures.font_family.cache_clear()


def _open_font_files() -> list[str]:
    fds = Path("/proc/self/fd")
    targets = []
    for fd in fds.iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:
            pass
    return [t for t in targets if t.lower().endswith((".ttf", ".ttc", ".otf"))]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc")
def test_figures_from_many_threads_hold_each_font_file_open_once(tmp_path):
    """matplotlib opens a font file once per drawing thread: 50 edits on Gradio's worker threads held
    each font file open dozens of times. Drawn on one thread, each stays open once."""
    import threading

    from auk_app.ui import figures

    clip = _sine(0.2, 0.3)

    def draw(i):
        figures.before_after(tmp_path / f"f{i}.png", clip, SR, source=clip, caption=f"figure {i} · 图")

    draw("first")  # the fonts' first use opens them
    opened = sorted(_open_font_files())
    threads = [threading.Thread(target=draw, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert opened and sorted(_open_font_files()) == opened


def test_a_result_whose_files_cannot_all_be_written_leaves_none(tmp_path, monkeypatch):
    """The WAV is written, then its manifest fails (a serialiser that cannot hold a value, a full disk):
    the request's folder goes with the WAV in it, for one candidate and for the others of an edit."""
    def broken(path, manifest):
        raise OverflowError("Integer exceeds 64-bit range")

    monkeypatch.setattr(outputs, "write_manifest", broken)
    with pytest.raises(OverflowError):
        _render(_result(_sine(0.5, 0.1)), tmp_path)
    assert list(tmp_path.glob("req_*")) == []
    monkeypatch.undo()
    first = _render(_result(_sine(0.5, 0.1)), tmp_path)
    order = EditOrder.from_knobs({"instruction": "Decrease the volume by 10 dB.", "seconds": 1, "seed": 11,
                                  "randomize_seed": False}, Limits())
    delivery = deliver(_result(_sine(0.5, 0.2)), order, model=MODEL, check=CHECK, check_seconds=0.0,
                       candidate={"rank": 1, "of": 2, "seeds": [11, 12]})
    calls, real = [], outputs.write_manifest

    def second_fails(path, manifest):
        calls.append(path)
        return real(path, manifest) if len(calls) == 1 else broken(path, manifest)

    monkeypatch.setattr(outputs, "write_manifest", second_fails)
    with pytest.raises(OverflowError):
        outputs.render_edits([delivery, delivery], MODEL["key"], root=tmp_path)
    assert list(tmp_path.glob("req_*")) == [first.audio.parent]  # the earlier request's files only


def test_uploads_are_held_to_their_budget_oldest_first_never_the_youngest(tmp_path):
    now = time.time()
    paths = set()
    for age, name in ((3000, "oldest"), (2000, "older"), (1000, "old"), (10, "fresh")):
        path = tmp_path / name / "clip.wav"
        path.parent.mkdir()
        path.write_bytes(b"x" * 1000)
        os.utime(path, (now - age, now - age))
        paths.add(str(path))
    paths.add(str(tmp_path / "gone.wav"))  # an upload Gradio already deleted
    outputs.prune_uploads(paths, max_bytes=2000, min_age_s=300)
    assert sorted(os.path.basename(os.path.dirname(p)) for p in paths) == ["fresh", "old"]
    assert not (tmp_path / "oldest" / "clip.wav").exists() and (tmp_path / "old" / "clip.wav").exists()
    outputs.prune_uploads(paths, max_bytes=0, min_age_s=300)  # over budget, but what is left is young
    assert sorted(os.path.basename(os.path.dirname(p)) for p in paths) == ["fresh"]


def test_the_app_holds_gradios_record_of_uploads_to_the_budget(app, client):
    """The app's keeper prunes the very set Gradio adds each upload to."""
    import threading

    from gradio_client import handle_file

    keepers = [t for t in threading.enumerate() if t.name == "uploads"]
    assert keepers and keepers[0].is_alive()
    before = set(app.demo.upload_file_set)
    client.predict(handle_file(str(Path(__file__).resolve().parents[2] / "assets" / "examples" / "tone.flac")),
                   api_name="/inspect_audio")
    assert set(app.demo.upload_file_set) - before  # the upload is in the set the keeper prunes
