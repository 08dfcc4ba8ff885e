"""The AuK pipeline end to end on tiny random checkpoints in the real layouts, found through
the resolution code: wav file in, wav file out, exact lengths, seeds, errors, the cache."""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import soundfile as sf
import torch

from auk_app import resolve
from auk_app.audio_io import write_wav
from auk_app.job import EditJob, edit_problems, run_request
from auk_app.results import EditOrder
from training.checkpoint_writer import write_auk_checkpoint
from auk_app.auk.dit import AuKTransformer
from auk_app.auk.pipeline import AuKPipeline
from auk_app.auk.request import EditRequest
from auk_app.auk.qwen import QwenConditioner
from auk_app.auk.vae import AuKVAE
from auk_app.config import Limits
from auk_app.errors import Cancelled, InputError
from auk_app.service import Studio, StudioConfig
from tests.conftest import REPO, fixture_config
from tests.qwen_snapshot import TEXT_HIDDEN, TEXT_LAYERS, write_tiny_qwen_snapshot

DIT = dict(dim=32, heads=2, dim_head=16, ff_mult=2.0, latent_dim=64, text_hidden_dim=TEXT_HIDDEN,
           num_layers=1, num_single_layers=1)


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """Base (release layout), Flash (assembled layout) and a Qwen snapshot, as a user has them."""
    root = tmp_path_factory.mktemp("weights")
    torch.manual_seed(0)
    vae_config = fixture_config("vae_config.json")
    common = dict(dit=AuKTransformer(**DIT), dit_config=DIT, vae=AuKVAE.from_config(vae_config), vae_config=vae_config,
                  layer_weights=torch.randn(TEXT_LAYERS), layer_scale=torch.ones(1))
    write_auk_checkpoint(root / "AuK", layout="release", **common)
    write_auk_checkpoint(root / "AuK-Flash", layout="assembled", variant="flash", name="AuK-Flash", **common)
    write_tiny_qwen_snapshot(root / "Qwen2.5-Omni-3B")
    return root


@pytest.fixture(scope="module")
def studio(weights, tmp_path_factory):
    """A Studio whose checkpoints are found through the environment variables of the resolution order."""
    patch = pytest.MonkeyPatch()
    patch.chdir(tmp_path_factory.mktemp("cwd"))  # an empty ./ckpts
    patch.setenv(resolve.AUK_BASE.env_var, str(weights / "AuK"))
    patch.setenv(resolve.AUK_FLASH.env_var, str(weights / "AuK-Flash"))
    patch.setenv(resolve.QWEN_OMNI.env_var, str(weights / "Qwen2.5-Omni-3B"))
    patch.setenv("HF_HUB_OFFLINE", "1")
    yield Studio(StudioConfig(limits=Limits(max_input_seconds=3.0)))
    patch.undo()


def _tone(path, seconds=0.75, rate=44100, channels=2):
    t = np.arange(int(seconds * rate)) / rate
    wav = 0.3 * np.sin(2 * np.pi * 330 * t)
    sf.write(path, np.stack([wav] * channels, axis=1) if channels > 1 else wav, rate)
    return path


@pytest.fixture
def sampler_inputs(monkeypatch):
    """The reference and its mask as the pipeline hands them to the (real) sampling."""
    seen = []
    sample = AuKPipeline._sample

    def record(self, model, batcher, graphs, plan, conditioning, *rest):
        _, _, ref, ref_mask = conditioning
        seen.append({"ref": ref.clone(), "ref_mask": ref_mask})
        return sample(self, model, batcher, graphs, plan, conditioning, *rest)

    monkeypatch.setattr(AuKPipeline, "_sample", record)
    return seen


def test_resolution_finds_both_layouts_and_defaults_to_base(studio, weights):
    assert {e.key for e in studio.models()} == {"demo", "base", "flash"}
    assert studio.entry("auto").key == "base"
    assert studio.entry("base").checkpoint.layout == "release"
    assert studio.entry("flash").checkpoint.layout == "assembled"
    with pytest.raises(InputError, match="Unknown model 'nope'. Choose one of: auto, demo, base, flash"):
        studio.entry("nope")


def test_edit_from_wav_file_to_wav_file(studio, tmp_path):
    source = _tone(tmp_path / "in.wav")
    result, entry = run_request(studio, EditRequest("Raise the pitch by 2 semitones.", audio=source, seed=7), "base")
    out = write_wav(tmp_path / "out.wav", result.wav, result.sample_rate)
    back = sf.info(str(out))
    # 37 whole hops of the 0.75 s clip at 24 kHz are the reference; by default (the CLI's and the UI's
    # alike) the target covers the clip's 18,000 samples (38 frames) and is trimmed to them.
    assert result.record.ref_frames == 37 and result.record.gen_frames == 38 and result.record.fit_to_source
    assert back.samplerate == 24000 and back.frames == 18_000 == result.wav.shape[0]
    assert result.wav.dtype == np.float32 and np.isfinite(result.wav).all() and np.abs(result.wav).max() <= 1
    assert result.record.seed == 7 and result.record.variant == "base" and entry.key == "base"
    assert result.record.recipe.nfe == 32 and result.record.recipe.cfg == 2.0 and result.record.recipe.sway == -1.0


def test_an_edit_of_another_model_waits_for_the_running_edits(studio):
    """Switching models unloads the resident one: not while its (batched, unlocked) edits run."""
    gate, sampling, flash_phases, results = threading.Event(), threading.Event(), [], {}

    def hold(phase, done, total):
        if phase == "sample":
            sampling.set()
            gate.wait(60)

    def run(key, progress):
        request = EditRequest("Generate a 450 Hz sine tone.", seconds=0.3, nfe=2, seed=1)
        results[key] = run_request(studio, request, key, progress=progress)

    base = threading.Thread(target=run, args=("base", hold))
    base.start()
    assert sampling.wait(60)
    flash = threading.Thread(target=run, args=("flash", lambda phase, done, total: flash_phases.append(phase)))
    flash.start()
    flash.join(1.0)  # a window for a wrong start; the guard keeps the list empty however long it is
    assert flash_phases == [] and studio._pipelines["base"].loaded
    gate.set()
    base.join(60)
    flash.join(60)
    assert set(results) == {"base", "flash"} and flash_phases[0] == "load"


def test_generation_without_a_clip(studio, tmp_path):
    result, _ = run_request(studio, EditRequest("Generate a 450 Hz sine tone.", seconds=0.51, nfe=4, seed=1), "base")
    assert result.record.gen_frames == 26 and result.wav.shape == (26 * 480,)  # ceil(50 · 0.51)
    assert result.record.ref_frames == 0


def test_durations_become_frames_exactly_as_upstream_rounds_them(studio):
    result, _ = run_request(studio, EditRequest("Generate a 450 Hz sine tone.", seconds=2.24, nfe=1, seed=1), "base")
    # upstream's ceil(2.24 · 24000 / 480): the quotient is 112.00000000000001, so 113 frames
    assert result.record.gen_frames == 113 and result.wav.shape == (113 * 480,)


def test_fit_to_source_returns_the_exact_source_length(studio, tmp_path):
    source = _tone(tmp_path / "odd.wav", seconds=0.6123, rate=22050, channels=1)
    result, _ = run_request(studio, EditRequest("Increase the volume by 6 dB.", audio=source, nfe=2, seed=3))
    samples_24k = round(int(0.6123 * 22050) * 24000 / 22050)
    assert result.wav.shape == (samples_24k,) and result.record.gen_frames == -(-samples_24k // 480)


@pytest.mark.parametrize(("leftover", "encoded"), [(135, 15), (136, 16)])
def test_the_whole_clip_is_encoded_and_a_leftover_frame_is_masked(studio, tmp_path, sampler_inputs, leftover, encoded):
    source = tmp_path / "leftover.wav"
    sf.write(source, 0.3 * np.sin(np.arange(15 * 480 + leftover) / 7.0), 24000, subtype="FLOAT")
    record = run_request(studio, EditRequest("Increase the volume by 3 dB.", audio=source, nfe=1, seed=1), "base")[0].record
    ref, ref_mask = sampler_inputs[-1]["ref"], sampler_inputs[-1]["ref_mask"]
    # upstream: 15 valid frames (T // 480); ≥ 136 leftover samples make the encoder emit a 16th, masked
    assert ref.shape[1] == encoded == record.ref_latent_frames and record.ref_frames == 15
    assert ref_mask.tolist() == [[True] * 15 + [False] * (encoded - 15)]


def test_the_reference_is_a_seeded_posterior_draw_by_default(studio, tmp_path, sampler_inputs):
    source = _tone(tmp_path / "draw.wav", seconds=0.4)

    def reference(seed, **knobs):
        record = run_request(studio, EditRequest("Lower the volume.", audio=source, nfe=1, seed=seed, **knobs), "base")[0].record
        return sampler_inputs[-1]["ref"], record

    (first, record), (again, _), (other, other_record) = reference(5), reference(5), reference(6)
    (mean, mean_record), (mean_again, _) = reference(5, vae_sample=False), reference(6, vae_sample=False)
    assert record.vae_sample is True and mean_record.vae_sample is False
    assert torch.equal(first, again)  # the seed reproduces the draw…
    assert not torch.equal(first, other)  # …another seed draws another…
    assert torch.equal(mean, mean_again) and (first - mean).abs().max() > 1e-3  # …and the mean is fixed
    assert other_record.condition_cache_hit  # a new draw needs no second encode


def test_same_seed_same_output_other_seed_other_output(studio, tmp_path):
    source = _tone(tmp_path / "in.wav")
    run = lambda seed: run_request(studio, EditRequest("Lower the pitch by 1 semitones.", audio=source, nfe=3, seed=seed))[0].wav  # noqa: E731
    first, again, other = run(11), run(11), run(12)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_re_roll_skips_the_thinker_and_the_vae_encode(studio, tmp_path, monkeypatch):
    calls = {"thinker": 0, "encode": 0}
    thinker, encode = QwenConditioner.hidden_states, AuKVAE.posterior

    def count_thinker(self, *args, **kwargs):
        calls["thinker"] += 1
        return thinker(self, *args, **kwargs)

    def count_encode(self, *args, **kwargs):
        calls["encode"] += 1
        return encode(self, *args, **kwargs)

    monkeypatch.setattr(QwenConditioner, "hidden_states", count_thinker)
    monkeypatch.setattr(AuKVAE, "posterior", count_encode)  # a new seed draws anew from the cached posterior
    source = _tone(tmp_path / "reroll.wav", seconds=0.5)
    first, _ = run_request(studio, EditRequest("Remove the background noise.", audio=source, nfe=2, seed=1))
    second, _ = run_request(studio, EditRequest("Remove the background noise.", audio=source, nfe=3, cfg=1.5, sway=0.0, seed=2))
    assert calls == {"thinker": 1, "encode": 1}
    assert not first.record.condition_cache_hit and second.record.condition_cache_hit
    run_request(studio, EditRequest("Remove the noise.", audio=source, nfe=2, seed=1))
    assert calls == {"thinker": 2, "encode": 2}


def test_flash_ignores_sampling_knobs_and_says_so(studio):
    result, _ = run_request(studio, EditRequest("Generate a tone.", seconds=0.2, nfe=9, cfg=3.0, sway=0.5, seed=4), "flash")
    record = result.record
    assert record.recipe.t_grid == (0.0, 0.07612049579620361, 0.2928932309150696, 0.6173166036605835, 1.0)
    assert (record.recipe.nfe, record.recipe.cfg, record.recipe.sway) == (4, 0.0, None)
    assert record.recipe.ignored == ("cfg", "nfe", "sway")


def test_explicit_grid_overrides_nfe_and_sway(studio):
    record = run_request(studio, EditRequest("A tone.", seconds=0.1, t_grid="0, 0.5, 1", nfe=7, seed=0), "base")[0].record
    assert record.recipe.t_grid == (0.0, 0.5, 1.0) and record.recipe.nfe == 2 and record.recipe.ignored == ("nfe",)


def test_progress_is_reported_per_phase_and_step(studio):
    seen = []
    run_request(studio, EditRequest("A tone.", seconds=0.1, nfe=3, seed=0), "base", progress=lambda *p: seen.append(p))
    assert ("sample", 3, 3) in seen and seen.index(("condition", 1, 1)) < seen.index(("sample", 1, 3))
    assert seen[-1] == ("decode", 1, 1)


def test_stop_between_steps_cancels(studio):
    steps = []

    def should_stop():
        return len(steps) >= 2

    with pytest.raises(Cancelled, match="nothing was produced"):
        run_request(studio, EditRequest("A tone.", seconds=0.1, nfe=5, seed=0), "base",
                    progress=lambda phase, done, total: steps.append(done) if phase == "sample" else None,
                    should_stop=should_stop)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d.joinpath("x.wav").write_text("not audio") and d / "x.wav", "Could not read x.wav as audio"),
        (lambda d: d / "missing.wav", "does not exist"),
        (lambda d: (sf.write(d / "empty.wav", np.zeros(0), 16000), d / "empty.wav")[1], "The clip holds no audio"),
        (lambda d: (sf.write(d / "nan.wav", np.full(2000, np.nan, np.float32), 16000, subtype="FLOAT"), d / "nan.wav")[1],
         "NaN or infinite"),
        (lambda d: (sf.write(d / "short.wav", np.zeros(100), 24000), d / "short.wav")[1], "at least 40 ms"),
        (lambda d: _tone(d / "long.wav", seconds=3.5, channels=1), "the limit is 3 s"),
        (lambda d: (sf.write(d / "many.wav", np.zeros((2400, 9)), 24000), d / "many.wav")[1], "at most 8 are accepted"),
    ],
)
def test_bad_clips_fail_before_any_model_runs(studio, tmp_path, make, message, monkeypatch):
    monkeypatch.setattr(AuKPipeline, "load", lambda self: pytest.fail("a model was loaded for a bad clip"))
    with pytest.raises(InputError, match=message):
        run_request(studio, EditRequest("Remove the noise.", audio=make(tmp_path)), "flash")


@pytest.mark.parametrize(
    "request_, message",
    [
        (dict(instruction="Generate a tone."), "cannot infer a duration"),
        (dict(instruction="   "), "instruction is empty"),
        (dict(instruction="A tone.", seconds=-1), "0 \\(automatic\\) or a positive number"),
        (dict(instruction="A tone.", seconds=31), "the limit is 30 s"),
        (dict(instruction="A tone.", seconds=1, nfe=0), "nfe \\(Euler steps\\) must be a whole number from 1 to 64"),
        (dict(instruction="A tone.", seconds=1, cfg=11), "between 0 and 10"),
        (dict(instruction="A tone.", seconds=1, t_grid="0, 0.5, 0.5, 1"), "strictly increasing"),
        (dict(instruction="A tone.", seconds=1, t_grid="0, x, 1"), "not a comma-separated list"),
    ],
)
def test_bad_requests_are_refused_when_built(request_, message):
    with pytest.raises(InputError, match=message):
        EditRequest(**request_)


# bf16 activations meet float32 RMSNorm weights under autocast: torch takes its unfused path and says so
@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize(
    ("dtype", "weights_dtype", "matmul_dtype"),
    [("autocast-bf16", torch.float32, torch.bfloat16), ("bfloat16", torch.bfloat16, torch.bfloat16),
     ("float32", torch.float32, torch.float32)],
)
def test_precision_recipes_keep_weights_and_autocast_as_named(weights, tmp_path, dtype, weights_dtype, matmul_dtype):
    """autocast-bf16 is upstream's recipe: float32 weights, bf16 matmuls under autocast (CPU has it too)."""
    pipeline = AuKPipeline(weights / "AuK", text_encoder_path=weights / "Qwen2.5-Omni-3B", device="cpu", dtype=dtype,
                           limits=Limits())
    seen = []

    def record(module, inputs, output):
        if isinstance(module, torch.nn.Linear):  # every DiT and thinker projection; the VAE has none
            seen.append((module.weight.dtype, output.dtype))

    handle = torch.nn.modules.module.register_module_forward_hook(record)
    try:
        result = pipeline.generate(EditRequest("Raise the pitch.", audio=_tone(tmp_path / "p.wav", seconds=0.2),
                                               nfe=2, seed=1))
    finally:
        handle.remove()
    assert len(seen) > 50 and set(seen) == {(weights_dtype, matmul_dtype)}
    assert result.record.dtype == dtype and np.isfinite(result.wav).all()


def test_missing_weights_message_lists_the_download_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(resolve.QWEN_OMNI.env_var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(Exception, match="hf download Qwen/Qwen2.5-Omni-3B --local-dir ckpts/Qwen2.5-Omni-3B"):
        resolve.resolve(resolve.QWEN_OMNI)


def test_command_line_samples_the_posterior_unless_told_not_to():
    from auk_app.__main__ import _parser, _values
    from auk_app.results import EditOrder

    def order(*extra):
        args = _parser().parse_args(["edit", "--instruction", "x", "--output", "o.wav", "--seconds", "1", *extra])
        return EditOrder.from_knobs(_values(args), Limits())

    assert order().request.vae_sample is True and order("--vae-sample").request.vae_sample is True
    assert order("--no-vae-sample").request.vae_sample is False


def test_command_line_edit(weights, tmp_path):
    source = _tone(tmp_path / "cli_in.wav", seconds=0.3, channels=1)
    out = tmp_path / "cli_out.wav"
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # as from a checkout, run in another folder
    done = subprocess.run(
        [sys.executable, "-m", "auk_app", "edit", "--checkpoint", str(weights / "AuK"),
         "--qwen", str(weights / "Qwen2.5-Omni-3B"), "--input", str(source), "--instruction",
         "Increase the volume by 3 dB.", "--output", str(out), "--nfe", "2", "--seed", "5", "--no-vae-sample"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["seed"] == 5 and record["nfe"] == 2 and record["vae_sample"] is False
    assert sf.info(str(out)).frames == record["gen_frames"] * 480
    bad = subprocess.run([sys.executable, "-m", "auk_app", "edit", "--checkpoint", str(weights / "AuK"),
                          "--qwen", str(weights / "Qwen2.5-Omni-3B"),  # not left to another test's environment
                          "--instruction", "A tone.", "--output", str(tmp_path / "x.wav")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "cannot infer a duration" in bad.stderr
    assert not (tmp_path / "x.wav").exists()


def test_a_tts_result_is_checked_by_what_the_resident_thinker_hears(studio, tmp_path):
    """Only the words of a zero-shot TTS can be checked: the thinker the DiT conditions on transcribes
    the result (its output head read from the snapshot) and the check is the word error rate. The
    tiny random thinker hears nonsense, so this holds the mechanics, not the quality."""
    source = _tone(tmp_path / "voice.wav", seconds=0.6)
    order = EditOrder.from_knobs({"instruction": 'Say the following with the same voice: "good morning"',
                                  "audio": str(source), "nfe": 1, "seed": 2, "randomize_seed": False, "model": "base"},
                                 studio.config.limits)
    (best,), _ = EditJob(studio, order).run()
    check = best.record["check"]
    assert check["task"] == "content" and check["unit"] == "WER" and check["tolerance"] == 0.2
    assert check["got"] is not None and check["got"] >= 0 and 'for "good morning"' in check["note"]
    assert check["pass"] == (check["got"] <= 0.2)
    with studio.pipeline(studio.entry("base")).conditioner_in_use() as conditioner:
        assert isinstance(conditioner.model.lm_head, torch.nn.Linear)  # attached to the resident thinker


def test_the_demo_encoder_refuses_an_instruction_past_its_positions_in_a_sentence():
    """1,000 × "音" fits the character limit but not MiniLM's 512 positions: a sentence, not a
    RuntimeError from inside the model, checked before the request is queued and again by the encoder."""
    from auk_app.demo import DEMO_DIR
    from auk_app.errors import InputError
    from auk_app.service import Studio, StudioConfig

    studio = Studio(StudioConfig(demo_dir=DEMO_DIR, device="cpu"))
    long = "音" * 1000
    problems = edit_problems(studio, {"instruction": long, "seconds": 1, "model": "demo"})
    assert problems.keys() == {"instruction"} and "1002 tokens" in problems["instruction"]
    assert edit_problems(studio, {"instruction": "音" * 500, "seconds": 1, "model": "demo"}) == {}
    with pytest.raises(InputError, match="reads at most 512"):
        run_request(studio, EditRequest(long, seconds=1, nfe=1), "demo")
