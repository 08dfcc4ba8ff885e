"""The public API, driven through gradio_client against the launched app (demo model, CPU).

Runs are kept tiny (sub-second clips, nfe 4, a few hundred Audex tokens) so the module stays
well under a minute on two busy cores.
"""

from __future__ import annotations

import json

import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from gradio_client import handle_file
from gradio_client.exceptions import AppError, ValidationError

from auk_app.auk.checkpoint import FLASH_T_GRID, read_auk_checkpoint
from auk_app.check import EditCheck, rank
from auk_app.config import Limits
from auk_app.knobs import AUDEX, EDIT
from auk_app.catalog import GET_WEIGHTS

# gradio's queue uses pandas options that pandas 3 deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")
FAST = {"nfe": 4, "randomize_seed": False}  # a few Euler steps keep every edit sub-second on a CPU

CONTRACT = {
    "/edit_audio": (["audio", "instruction", "model", "seconds", "nfe", "cfg", "sway", "t_grid", "seed",
                     "randomize_seed", "vae_sample", "region_start", "region_end", "headroom", "enhance", "candidates",
                     "step_cache", "cfg_interval"], 6),
    "/text_to_audio": (["caption", "cfg", "max_seconds", "temperature", "top_k", "seed", "randomize_seed",
                        "compare_unmasked"], 4),
    "/inspect_audio": (["audio"], 1),
    "/suggest_instruction": (["audio", "instruction", "model"], 1),
    "/model_info": ([], 1),
    "/edit_batch": (["model", "seconds", "nfe", "cfg", "sway", "t_grid", "seed", "vae_sample", "headroom", "enhance",
                     "candidates", "step_cache", "cfg_interval", "files", "instruction", "submission"], 4),
}


def _edit(client, clip=None, instruction="Decrease the volume by 10 dB.", **knobs):
    audio = None if clip is None else handle_file(str(clip))
    return client.predict(audio=audio, instruction=instruction, api_name="/edit_audio", **{**FAST, **knobs})


def _pcm(path) -> np.ndarray:
    data, rate = sf.read(str(path), dtype="int16")
    assert rate in (16_000, 24_000)
    return data


# ----------------------------------------------------------------------------- contract


def test_view_api_is_the_documented_contract(client):
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert set(endpoints) == set(CONTRACT)  # the UI plumbing is private
    for name, (parameters, n_returns) in CONTRACT.items():
        info = endpoints[name]
        assert [p["parameter_name"] for p in info["parameters"]] == parameters, name
        assert all(p["parameter_has_default"] for p in info["parameters"]), name
        assert len(info["returns"]) == n_returns, name
    defaults = {p["parameter_name"]: p["parameter_default"] for p in endpoints["/edit_audio"]["parameters"]}
    assert defaults == {"audio": None, "instruction": None, "model": "auto", "seconds": 0, "nfe": None, "cfg": None,
                        "sway": None, "t_grid": None, "seed": 0, "randomize_seed": True, "vae_sample": True,
                        "region_start": None, "region_end": None, "headroom": False, "enhance": False, "candidates": 1,
                        "step_cache": None, "cfg_interval": None}


def test_each_endpoint_s_description_gives_every_knob_s_help_from_the_schema(client):
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    for name, knobs in (("/edit_audio", EDIT), ("/text_to_audio", AUDEX)):
        text = endpoints[name]["description"]
        assert [line.split(":")[0].strip() for line in text.split("Parameters:")[1].strip().splitlines()] == [
            k.name for k in knobs], name
    assert f"seconds: The target length, up to {Limits().max_target_seconds:g} s" in endpoints["/edit_audio"]["description"]


def test_model_info(client, demo_dir):
    info = client.predict(api_name="/model_info")
    assert {"available_models", "loaded_model", "device", "dtype", "demo"} <= info.keys()
    assert info["available_models"][:2] == ["auto", "demo"]
    assert info["demo"] is True and info["device"] == "cpu" and info["dtype"] == "float32"


# ----------------------------------------------------------------------------- /edit_audio


def test_the_edit_check_is_in_the_manifest_and_says_when_it_cannot_measure(client, clips):
    wav, _, manifest, line, table, files = _edit(client, clips.voice, instruction="Decrease the volume by 6 dB.",
                                                 seed=2, nfe=2)
    check = manifest["check"]
    assert {"task": "volume", "asked": -6.0, "unit": "dB", "tolerance": 1.0}.items() <= check.items()
    assert isinstance(check["got"], float) and isinstance(check["pass"], bool) and check["seconds"] >= 0
    assert line == check["display"] and line.startswith("asked −6 dB · got ") and line[-1] in "✓✗"
    assert [row["seed"] for row in table] == [2] and manifest["candidate"] == {"rank": 1, "of": 1, "seeds": [2]}
    assert len(files) == 1 and np.array_equal(_pcm(files[0]), _pcm(wav))
    _, _, manifest, line, *_ = _edit(client, clips.voice, instruction="Change the emotion to happy.", seed=2, nfe=2)
    assert manifest["check"]["pass"] is None and manifest["check"]["got"] is None
    assert line == "emotion: cannot be measured (emotion has no standard acoustic measure)"


def _edit_check(entry: dict) -> EditCheck:
    """A table row's check as the check library's record (what rank orders)."""
    return EditCheck(entry["task"], entry["asked"], entry["got"], entry["unit"], entry["tolerance"], entry["pass"],
                     entry["note"], entry["bound"], entry["kept"], entry["clipped"])


def test_four_candidates_each_checked_the_best_first(client, clips):
    wav, _, manifest, line, table, files = _edit(client, clips.voice, instruction="Decrease the volume by 6 dB.",
                                                 seed=40, nfe=2, candidates=4)
    assert sorted(row["seed"] for row in table) == [40, 41, 42, 43]  # seed, seed+1, …
    assert [row["rank"] for row in table] == [1, 2, 3, 4]
    checks = [_edit_check(row["check"]) for row in table]
    assert all(c.task == "volume" and c.measured and c.asked == -6.0 for c in checks)
    assert rank(checks) == checks  # best first, by the check's own ranking
    assert manifest["seed"] == table[0]["seed"] and manifest["check"] == table[0]["check"]
    assert line == table[0]["check"]["display"]
    assert manifest["candidate"] == {"rank": 1, "of": 4, "seeds": [40, 41, 42, 43]}
    assert [Path(f).name for f in files] == [row["file"] for row in table]
    assert np.array_equal(_pcm(files[0]), _pcm(wav))  # the result is the best candidate
    assert len({_pcm(f).tobytes() for f in files}) == 4  # four seeds, four different results


@pytest.mark.parametrize("value", [0, 9, 2.5, True])
def test_candidates_out_of_range_are_refused_naming_the_limit(client, clips, value):
    with pytest.raises(ValidationError, match="candidates is how many seeds of the edit to run and rank, a whole "
                                              "number from 1 to 8; got"):
        _edit(client, clips.voice, candidates=value)


@pytest.mark.parametrize(("model", "repo"), [("flash", "tencent/AuK-Flash"), ("base", "tencent/AuK")])
def test_released_variants_not_on_disk_are_listed_and_refused_with_the_download_command(client, model, repo):
    info = client.predict(api_name="/model_info")
    assert info["not_downloaded"][model] == f"hf download {repo} --local-dir ckpts/{repo.split('/')[1]}"
    with pytest.raises(ValidationError) as refused:
        _edit(client, None, seconds=1.0, model=model)
    sentence = str(refused.value).split("- model: ")[1].strip()
    assert sentence.startswith(f"AuK{'-Flash (flash)' if model == 'flash' else ' (base)'} is not downloaded: "
                               f"fetch it with `hf download {repo} --local-dir ckpts/")
    assert sentence.endswith("until then choose one of: auto, demo.") and sentence.count(". ") == 0


def test_edit_with_automatic_duration_returns_exactly_the_source_length(client, clips, demo_dir):
    wav, figure, manifest, *_ = _edit(client, clips.voice, seed=1234)
    data = _pcm(wav)
    assert data.ndim == 1 and data.shape[0] == 14_400  # 0.6 s at 24 kHz, not rounded to whole frames
    assert sf.info(wav).subtype == "PCM_16"
    assert open(figure, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    defaults = read_auk_checkpoint(demo_dir).defaults
    assert manifest["seed"] == 1234 and manifest["randomized_seed"] is False
    assert manifest["sample_rate"] == 24_000 and manifest["model"] == "demo"
    assert (manifest["nfe"], manifest["cfg"], manifest["sway"], manifest["t_grid"]) == (4, defaults.cfg,
                                                                                      defaults.sway, None)
    assert manifest["gen_frames"] == 30 and manifest["seconds"] == pytest.approx(0.6)
    assert {"condition", "sample", "decode", "total", "render"} <= manifest["timings"].keys()
    assert manifest["output"]["sha256"] and manifest["source"]["channels"] == 1


def test_empty_knobs_mean_the_checkpoints_defaults(client, clips, demo_dir):
    _, _, manifest, *_ = _edit(client, clips.voice, seed=5, nfe=None)
    defaults = read_auk_checkpoint(demo_dir).defaults
    assert (manifest["nfe"], manifest["cfg"], manifest["sway"]) == (defaults.nfe, defaults.cfg, defaults.sway)
    assert manifest["noise_scale"] == defaults.noise_scale < 1  # the demo samples at its declared temperature
    assert manifest["start"] == defaults.start == "source"  # from the source's latents, as it was trained


def test_clipping_is_counted_as_the_wav_holds_it_and_headroom_avoids_it(client, clips):
    # +15 dB on a clip peaking at −6 dBFS: the model's result goes past full scale.
    loud = dict(instruction="Increase the volume by 15 dB.", seed=3)
    wav, _, manifest, *_ = _edit(client, clips.voice, **loud)
    data = _pcm(wav)
    at_full_scale = int(np.count_nonzero((data == 32767) | (data == -32768)))
    assert at_full_scale > 100
    assert manifest["output"]["clipped_samples"] == at_full_scale
    assert manifest["output"]["headroom"] is None and manifest["requested"]["headroom"] is False
    assert [w for w in manifest["warnings"] if w.startswith(f"The result clips: {at_full_scale} of")]
    wav, _, kept, *_ = _edit(client, clips.voice, headroom=True, **loud)
    data = _pcm(wav)
    assert 20 * np.log10(np.abs(data).max() / 32768) <= -0.99
    assert kept["output"]["clipped_samples"] == 0 and kept["output"]["headroom"]["gain_db"] < -1
    assert not any("clips" in w for w in kept["warnings"])
    # The check line says so too, of what the WAV holds: with headroom nothing is at full scale.
    assert manifest["check"]["clipped"] == at_full_scale and "clips:" in manifest["check"]["display"]
    assert kept["check"]["clipped"] == 0 and "clips" not in kept["check"]["display"]


def test_the_command_line_reports_the_same_record_as_the_api(client, clips, tmp_path, capsys):
    """One record for every front end: the CLI prints the manifest /edit_audio returns, key for key, and
    the same run gives the same bytes, check, warnings and clipping count (this edit clips)."""
    from auk_app.__main__ import main

    loud = dict(instruction="Increase the volume by 15 dB.", seed=3)
    _, _, manifest, *_ = _edit(client, clips.voice, **loud)
    status = main(["edit", "--input", str(clips.voice), "--instruction", loud["instruction"], "--seed", "3",
                   "--nfe", str(FAST["nfe"]), "--output", str(tmp_path / "out.wav")])
    printed, err = capsys.readouterr()
    assert status == 0, err
    record = json.loads(printed)
    assert record.keys() == manifest.keys() and record["output"].keys() == manifest["output"].keys()
    for key in ("seed", "warnings", "requested"):
        assert record[key] == manifest[key], key
    timing = {"seconds"}  # what measuring took
    assert {k: v for k, v in record["check"].items() if k not in timing} == {
        k: v for k, v in manifest["check"].items() if k not in timing}
    assert record["output"]["clipped_samples"] == manifest["output"]["clipped_samples"] > 0
    assert record["output"]["sha256"] == manifest["output"]["sha256"]  # the same samples
    assert f"warning: {manifest['warnings'][0]}" in err


@pytest.fixture(scope="module")
def long_speech(tmp_path_factory):
    """40 s of noisy espeak-ng speech, longer than the demo's 6 s window and the 30 s clip limit."""
    from training.long_recordings import noisy_speech

    noisy, _ = noisy_speech(40, seed=3)
    path = tmp_path_factory.mktemp("long") / "long_speech.wav"
    sf.write(path, noisy, 24_000, subtype="FLOAT")
    return path


def test_a_long_recording_is_denoised_whole_in_windows(client, long_speech):
    wav, _, manifest, line, *_ = _edit(client, long_speech, instruction="Remove only the background noise.", seed=4)
    assert _pcm(wav).shape == sf.read(long_speech)[0].shape  # its own length
    assert manifest["windows"]["count"] >= 7 and manifest["windows"]["seconds"] == 6.0
    assert manifest["check"]["task"] == "denoise" and line == manifest["check"]["display"]


def test_a_speed_edit_of_a_long_recording_without_a_region_is_one_sentence(client, long_speech):
    with pytest.raises(ValidationError, match="Only edits that keep the timing and the words .* choose a region"):
        _edit(client, long_speech, instruction="Adjust the speech speed to 1.5x.", seed=4)


def test_a_clip_longer_than_the_window_that_runs_in_one_piece_is_warned_about(client, clips, tmp_path):
    ten = tmp_path / "ten_seconds.wav"
    sf.write(ten, np.tile(sf.read(clips.voice)[0], 17)[: 10 * 24_000], 24_000)
    _, _, manifest, *_ = _edit(client, ten, instruction="Adjust the speech speed to 1.5x.", seed=4)
    assert any("longer than the 6 s clips AuK-Tiny (demo) was trained on" in w for w in manifest["warnings"])


def test_what_the_demo_was_not_trained_for_is_warned_about_with_the_released_weights(client, clips):
    info = client.predict(api_name="/model_info")
    assert info["models"]["demo"]["capabilities"] == {
        "tasks": ["volume", "pitch", "enhance:Remove noise", "sine_tone"], "languages": ["en"], "max_clip_seconds": 6.0}
    for instruction, gap in (("Change the emotion to happy.", "Emotion"),
                             ("将音量升高6分贝。", "Chinese instructions (it reads English only)")):
        _, _, manifest, *_ = _edit(client, clips.voice, instruction=instruction, seed=5)
        assert manifest["warnings"] == [
            f"AuK-Tiny (demo) was not trained for {gap}, so expect a result that does not follow the instruction; "
            f"the released AuK weights were. {GET_WEIGHTS}"]
        assert "hf download tencent/AuK --local-dir ckpts/AuK" in GET_WEIGHTS
    _, _, manifest, *_ = _edit(client, clips.voice, instruction="Raise the pitch by 2 semitones.", seed=5)
    assert manifest["warnings"] == []


def test_a_lacking_task_in_any_wording_and_a_request_of_no_task_are_warned_about(client, clips):
    # The page's own example with its full stop inside the quotes; then a request that is no task at all.
    described = ('Generate speech based on the following description: "A calm, low male voice." '
                 'The content to speak is: "Welcome to the studio."')
    _, _, manifest, *_ = _edit(client, instruction=described, seconds=0.5, seed=5)
    assert [w for w in manifest["warnings"] if not w.startswith("The result clips")] == [
        "AuK-Tiny (demo) was not trained for Instruct TTS (voice from a description, no clip), so expect a result "
        f"that does not follow the instruction; the released AuK weights were. {GET_WEIGHTS}"]
    _, _, manifest, *_ = _edit(client, clips.voice, instruction="Add reverb like a cathedral.", seed=5)
    assert [w for w in manifest["warnings"] if not w.startswith("The result clips")] == [
        "AuK-Tiny (demo) was trained only for Volume, Pitch, Speech enhancement (Remove noise) and Sine tone (text to "
        "tone), and this request reads as none of them, so expect a result that does not follow it; word it as one "
        "of those, as the instruction builder does."]


def test_text_only_generation_with_a_custom_grid_and_a_randomised_seed(client):
    wav, _, manifest, *_ = client.predict(instruction="Generate speech based on the following description: \"calm\". "
                                      "The content to speak is: \"hi\".", seconds=0.5, t_grid="0, 0.5, 1",
                                      randomize_seed=True, seed=7, api_name="/edit_audio")
    assert _pcm(wav).shape == (12_000,) and manifest["gen_frames"] == 25
    assert manifest["t_grid"] == [0.0, 0.5, 1.0] and manifest["nfe"] == 2
    assert manifest["randomized_seed"] is True and isinstance(manifest["seed"], int) and manifest["seed"] >= 0
    assert manifest["source"] is None


def test_seconds_become_frames_as_upstream_rounds_them(client):
    wav, _, manifest, *_ = client.predict(instruction="Generate a 450 Hz sine tone.", seconds=2.24, nfe=1, seed=1,
                                      randomize_seed=False, api_name="/edit_audio")
    # ceil(2.24 · 24000 / 480), the expression of upstream AuK and vLLM-Omni: 112.00000000000001 → 113
    assert manifest["gen_frames"] == 113 and _pcm(wav).shape == (113 * 480,)


def test_vae_sample_defaults_to_a_seeded_draw_and_can_be_turned_off(client, clips):
    drawn, _, manifest, *_ = _edit(client, clips.voice, seed=21, nfe=1)
    again, _, _, *_ = _edit(client, clips.voice, seed=21, nfe=1, vae_sample=True)
    _, _, mean_manifest, *_ = _edit(client, clips.voice, seed=21, nfe=1, vae_sample=False)
    assert manifest["vae_sample"] is True and mean_manifest["vae_sample"] is False
    assert mean_manifest["requested"]["vae_sample"] is False
    assert np.array_equal(_pcm(drawn), _pcm(again))  # the seed reproduces the draw


def test_stereo_44k_source_is_mixed_resampled_and_matched_in_length(client, clips):
    wav, _, manifest, *_ = _edit(client, clips.stereo, seed=3, model="demo")
    assert _pcm(wav).shape == (12_000,)  # 0.5 s at 24 kHz
    assert manifest["source"]["sample_rate"] == 44_100 and manifest["source"]["channels"] == 2


# An edit without a region, and /inspect_audio, read a whole recording (up to 60 minutes, in windows):
# a 31 s clip is no fault of its own, and /inspect_audio says what it can be edited as.
AS_A_WHOLE_RECORDING = {"too_long": None, "bomb": "lasts 7200.0 s; the limit is 3600 s"}


def test_bad_uploads_are_refused_before_the_queue_with_their_own_message(client, bad_upload, request):
    clip, words = bad_upload
    words = AS_A_WHOLE_RECORDING.get(request.node.callspec.id, words)
    findings = client.predict(handle_file(str(clip)), api_name="/inspect_audio")
    if words is None:
        assert findings["verdict"] == "ok" and "run on the whole 31.0 s in 6 s windows" in findings["message"]
        return
    with pytest.raises(ValidationError) as refused:
        _edit(client, clip, seed=1)
    assert "- audio:" in str(refused.value) and words in str(refused.value)
    assert findings["verdict"] == "rejected" and words in findings["message"]


BAD_VALUES = [
    ({"instruction": "  "}, "instruction", "The instruction is empty"),
    ({"instruction": "\u200b\u2060 \ufeff"}, "instruction", "The instruction is empty"),  # zero-width only
    ({"instruction": "音" * 1000}, "instruction", "The instruction is 1002 tokens long for the demo model's text "
                                                  "encoder, which reads at most 512"),
    ({"model": "AuK-Huge"}, "model", "Unknown model 'AuK-Huge'. Choose one of: auto, demo."),
    ({"model": "x" * 100_000}, "model", "… (100002 characters). Choose one of: auto, demo."),
    ({"seconds": -1}, "seconds", "positive number of seconds, at most 30; got -1"),
    ({"seconds": 45}, "seconds", "the limit is 30 s"),
    ({"nfe": 1000}, "nfe", "from 1 to 64; got 1000"),
    ({"nfe": 4.5}, "nfe", "whole number"),
    ({"cfg": -2}, "cfg", "between 0 and 10"),
    ({"sway": 3}, "sway", "between -1 and 1"),
    ({"t_grid": "0, 0.6, 0.3, 1"}, "t_grid", "strictly increasing"),
    ({"t_grid": "zero, one"}, "t_grid", "not a comma-separated list of numbers"),
    ({"seed": -5}, "seed", "0 to 2^63-1; got -5"),
    ({"seed": 1.5}, "seed", "whole number from 0 to 2^63-1; got 1.5"),  # refused, not rounded
    ({"seed": "abc"}, "seed", "whole number from 0 to 2^63-1; got 'abc'"),
    ({"seconds": 0.02}, "seconds", "the shortest is 0.04 s (two 20 ms latent frames)"),
    ({"randomize_seed": "false"}, "randomize_seed", "randomize_seed must be true or false; got 'false'."),
    ({"vae_sample": "false"}, "vae_sample", "vae_sample must be true or false; got 'false'."),
    ({"headroom": "no"}, "headroom", "headroom must be true or false; got 'no'."),
    ({"t_grid": ", ".join(f"{i / 1000:.3f}" for i in range(1000))}, "t_grid", "characters) needs 2 to 65 points; it has 1000"),
]


@pytest.mark.parametrize(("knobs", "parameter", "words"), BAD_VALUES, ids=[b[1] + str(i) for i, b in enumerate(BAD_VALUES)])
def test_every_knob_is_validated_server_side_with_a_specific_message(client, clips, knobs, parameter, words):
    with pytest.raises(ValidationError) as refused:
        _edit(client, clips.voice, **{"seed": 1, **knobs})
    assert f"- {parameter}: " in str(refused.value) and words in str(refused.value)
    assert len(str(refused.value)) < 400  # a long value is abbreviated, not echoed


def test_the_shortest_clip_and_target_give_sound(client, tmp_path):
    shortest = tmp_path / "forty_ms.wav"
    sf.write(shortest, 0.3 * np.sin(2 * np.pi * 300 * np.arange(960) / 24_000), 24_000)
    wav, _, _, *_ = _edit(client, shortest, seed=1)
    assert _pcm(wav).shape == (960,) and np.abs(_pcm(wav)).max() > 0
    wav, _, _, *_ = client.predict(instruction="Generate a 450 Hz sine tone.", seconds=0.04, seed=1, randomize_seed=False,
                               api_name="/edit_audio")
    assert _pcm(wav).shape == (960,) and np.abs(_pcm(wav)).max() > 0
    shorter = tmp_path / "thirty_ms.wav"
    sf.write(shorter, 0.3 * np.sin(2 * np.pi * 300 * np.arange(720) / 24_000), 24_000)
    with pytest.raises(ValidationError, match="lasts 30.0 ms; the model needs at least 40 ms"):
        _edit(client, shorter, seed=1)


def _strings(value):
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_no_server_path_reaches_a_client(client, clips):
    _, _, edit_manifest, *_ = _edit(client, clips.voice, seed=1)
    _, _, _, audex_manifest = client.predict("rain", max_seconds=0.2, api_name="/text_to_audio")
    # A download command names a Hub repository and the relative ckpts/ folder, not the server's disk.
    for shown in (client.predict(api_name="/model_info"), edit_manifest, audex_manifest):
        assert not [s for s in _strings(shown) if "/" in s and not s.startswith(("http", "<", "hf download "))], shown


def test_text_only_without_a_duration_is_refused(client):
    with pytest.raises(ValidationError, match="no length to match"):
        client.predict(instruction="Say hello.", api_name="/edit_audio")


def test_inspect_audio_reports_a_good_clip(client, clips):
    findings = client.predict(handle_file(str(clips.stereo)), api_name="/inspect_audio")
    assert {"sample_rate", "channels", "duration_s", "peak", "rms", "silent", "clipping", "verdict",
            "message"} <= findings.keys()
    assert (findings["sample_rate"], findings["channels"], findings["verdict"]) == (44_100, 2, "ok")
    assert client.predict(api_name="/inspect_audio")["verdict"] == "rejected"  # no clip


def test_edits_have_their_own_queue_sized_by_auk_batch(app):
    events = {fn.api_name: fn for fn in app.demo.fns.values() if fn.api_name}
    edit, audex = events["edit_audio"], events["text_to_audio"]
    assert (edit.concurrency_id, edit.concurrency_limit) == ("auk", app.studio.config.auk_batch) == ("auk", 4)
    assert (audex.concurrency_id, audex.concurrency_limit) == ("gpu", 1)


def test_offloaded_or_unbatched_edits_share_the_one_gpu_slot_with_text_to_audio():
    from auk_app.service import StudioConfig
    from auk_app.ui.app import _edit_queue

    for config in (StudioConfig(auk_batch=1), StudioConfig(offload=True)):
        assert _edit_queue(config) == {"concurrency_id": "gpu", "concurrency_limit": 1}
    assert _edit_queue(StudioConfig(auk_batch=3)) == {"concurrency_id": "auk", "concurrency_limit": 3}


def test_concurrent_edits_share_steps_and_get_their_sequential_results(app, clips, client_for, monkeypatch):
    # The edit queue admits several edits at once (StudioConfig.auk_batch, 4); the pipeline then
    # batches their Euler steps. Each edit waits before its sampling until all three got there,
    # so they really share steps; results equal the sequential ones up to one PCM16 step (batched
    # steps round differently, ~1e-6 before quantisation).
    jobs = [("Decrease the volume by 10 dB.", 11), ("Raise the pitch by 2 semitones.", 22),
            ("Decrease the volume by 10 dB.", 33)]
    sequential = [_pcm(_edit(client_for(app.url), clips.voice, text, seed=seed, nfe=8)[0]) for text, seed in jobs]
    pipeline = app.studio.pipeline(app.studio.entry("demo"))
    batcher = pipeline.batcher
    before = batcher.batched_steps
    arrived = threading.Barrier(len(jobs), timeout=120)
    sample = batcher.sample

    def together(spec):
        arrived.wait()
        return sample(spec)

    monkeypatch.setattr(batcher, "sample", together)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            text, seed = jobs[index]
            results[index] = _pcm(_edit(client_for(app.url), clips.voice, text, seed=seed, nfe=8)[0])
        except BaseException as exc:  # surfaced below, with the thread's own error
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not errors, errors
    assert batcher.batched_steps > before and batcher.largest_batch >= 2
    for index, want in enumerate(sequential):
        assert np.abs(results[index].astype(np.int32) - want).max() <= 1, index
    assert not np.array_equal(sequential[0], sequential[2])  # the seed matters


# ----------------------------------------------------------------------------- Flash


def test_flash_runs_its_fixed_recipe_and_lists_what_it_ignored(flash_app, clips, client_for):
    _, _, manifest, *_ = _edit(client_for(flash_app.url), clips.voice, seed=9, model="flash", nfe=12, cfg=2.0)
    assert manifest["variant"] == "flash" and manifest["model"] == "flash"
    assert (manifest["nfe"], manifest["cfg"], manifest["sway"]) == (4, 0.0, None)
    assert manifest["t_grid"] == pytest.approx(list(FLASH_T_GRID))
    assert manifest["ignored"] == ["cfg", "nfe"]


# ----------------------------------------------------------------------------- /text_to_audio


def test_text_to_audio_with_the_unmasked_comparison(client):
    wav, figure, report, manifest = client.predict(
        "rain on a tin roof", max_seconds=0.5, seed=5, randomize_seed=False, compare_unmasked=True,
        api_name="/text_to_audio",
    )
    assert {"phase_valid", "mismatch_count", "first_mismatch", "codec_count", "frames", "end_reason"} <= report.keys()
    assert report["phase_valid"] is True and report["codec_count"] <= 100  # 0.5 s × 200 tokens/s
    data, rate = sf.read(wav, dtype="int16")
    assert rate == 16_000 and data.shape == (report["decoded_frames"] * 320,)
    assert open(figure, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert manifest["seed"] == 5 and manifest["codec_cap"] == 100 and manifest["sample_rate"] == 16_000
    assert manifest["report"] == report and manifest["unmasked"]["report"]["codec_count"] > 0
    assert manifest["demo_model"] is True


AUDEX_BAD = [
    ({"caption": " "}, "caption", "The caption is empty"),
    ({"cfg": 0.5}, "cfg", "between 1.0 and 10.0"),
    ({"max_seconds": 25}, "max_seconds", "at most 20"),
    ({"max_seconds": 0}, "max_seconds", "more than 0"),
    ({"temperature": 0}, "temperature", "between 0.0001 and 10; got 0"),
    ({"temperature": 1e308}, "temperature", "between 0.0001 and 10; got 1e+308"),
    ({"top_k": 0}, "top_k", "from 1 to 8192 (the codec vocabulary)"),
    ({"top_k": 2**64}, "top_k", "from 1 to 8192 (the codec vocabulary); got 18446744073709551616"),
    ({"seed": -1, "randomize_seed": False}, "seed", "0 to 2^63-1"),
    ({"seed": "abc", "randomize_seed": False}, "seed", "got 'abc'"),
    ({"randomize_seed": "false"}, "randomize_seed", "randomize_seed must be true or false; got 'false'."),
    ({"compare_unmasked": "no"}, "compare_unmasked", "compare_unmasked must be true or false; got 'no'."),
    ({"top_k": 1.5}, "top_k", "whole number from 1 to 8192 (the codec vocabulary); got 1.5"),
    ({"top_k": "abc"}, "top_k", "whole number from 1 to 8192 (the codec vocabulary); got 'abc'"),
]


@pytest.mark.parametrize(("knobs", "parameter", "words"), AUDEX_BAD, ids=[b[1] + str(i) for i, b in enumerate(AUDEX_BAD)])
def test_text_to_audio_values_are_validated(client, knobs, parameter, words):
    with pytest.raises(ValidationError) as refused:
        client.predict(**{"caption": "rain", **knobs}, api_name="/text_to_audio")
    assert f"- {parameter}: " in str(refused.value) and words in str(refused.value)


def _result_files(app) -> set:
    from gradio.utils import get_upload_folder

    return {p for p in (Path(get_upload_folder()) / "auk_studio").rglob("*") if p.is_file()}


@pytest.mark.parametrize("bad", [np.nan, np.inf], ids=["nan", "inf"])
def test_a_non_finite_result_is_one_sentence_and_no_file(app, client, clips, monkeypatch, bad):
    """A model that returns NaN or ±inf: PCM16 would write full-scale samples as a success. Every result
    is checked before a file is written, the page's edit, the API's and text to audio alike."""
    from dataclasses import replace

    run_plan, generate = app.studio.engine.run, type(app.studio.audex()).generate

    def broken(*args, **kwargs):
        result = run_plan(*args, **kwargs)
        return replace(result, wav=np.where(np.arange(result.wav.size) % 7 == 0, bad, result.wav).astype(np.float32))

    def broken_audex(pipeline, *args, **kwargs):
        made = generate(pipeline, *args, **kwargs)
        if made.waveform is not None:
            made = replace(made, waveform=np.full_like(made.waveform, bad))
        return made

    monkeypatch.setattr(app.studio.engine, "run", broken)
    monkeypatch.setattr(type(app.studio.audex()), "generate", broken_audex)
    before = _result_files(app)
    with pytest.raises(AppError, match="The model returned NaN or infinite samples, so nothing was written"):
        _edit(client, clips.voice, seed=1)
    with pytest.raises(AppError, match="The model returned NaN or infinite samples, so nothing was written"):
        client.predict(caption="A 440 Hz beep lasting one second", max_seconds=1, api_name="/text_to_audio")
    assert _result_files(app) == before


def test_pipeline_errors_reach_the_client_as_their_sentence(client):
    # Valid for the validator (short, not blank); the pipeline finds only control tokens in it.
    with pytest.raises(AppError, match="holds only special tokens of the model. Describe the sound in words."):
        client.predict("<|im_end|>\n<|im_start|> <audiogen_start>", api_name="/text_to_audio")


def test_an_instruction_of_only_special_tokens_is_refused_like_such_a_caption(client):
    # The demo's MiniLM tokenizer's special tokens: removed, they would leave an empty instruction. The
    # tokenizer reads the instruction with the other checks, so it is refused before the queue.
    with pytest.raises(ValidationError, match="The instruction holds only special tokens of the model. Describe"):
        client.predict(instruction="[CLS] [SEP][MASK]", seconds=1, api_name="/edit_audio")


def test_a_huge_caption_is_refused_before_the_queue(client):
    with pytest.raises(ValidationError, match="The caption has 45001 characters; the limit is 1000. Shorten it."):
        client.predict("rain " * 9000 + "x", max_seconds=20, api_name="/text_to_audio")


def test_an_hour_long_recording_fits_the_upload_limit():
    from auk_app.ui.app import MAX_FILE_SIZE

    hour_as_16k_mono_wav = 44 + Limits().max_whole_file_seconds * 16_000 * 2
    assert int(MAX_FILE_SIZE.removesuffix("mb")) * 1024 * 1024 >= hour_as_16k_mono_wav


def test_uploads_above_the_size_limit_are_refused(client, tmp_path):
    big = tmp_path / "big.wav"
    with open(big, "wb") as handle:
        handle.truncate(121 * 1024 * 1024)  # sparse: 121 MB > the 120 MB limit
    with pytest.raises(ValueError, match="exceeds the maximum file size of 125829120 bytes"):
        client.predict(handle_file(str(big)), api_name="/inspect_audio")


def test_an_upload_is_decoded_once_per_request(app, clips, client_for, tmp_path, monkeypatch):
    """The validator's upload check and the run read the same decoded clip: it is decoded once."""
    import shutil

    from auk_app import audio_io

    decodes, decode = [], audio_io._decode_mono
    monkeypatch.setattr(audio_io, "_decode_mono", lambda path, limits: decodes.append(path) or decode(path, limits))
    fresh = shutil.copy(clips.voice, tmp_path / "fresh.wav")  # a file no earlier request decoded
    _edit(client_for(app.url), fresh)
    assert len(decodes) == 1
