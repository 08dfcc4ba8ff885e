"""Whole recordings longer than the model's window, edited in windows by the demo model (AuK-Tiny,
6 s windows): the result's level, noise floor and seams, progress and Stop, and the refusals."""

import time

import numpy as np
import pytest

from auk_app.auk.pipeline import AuKPipeline
from auk_app.config import Limits
from auk_app.errors import Cancelled, InputError
from auk_app.recognise import recognise
from auk_app.validate import SILENCE_PEAK
from auk_app.whole_file import edit_whole, long_clip_warning, whole_file_refusal
from tests.app.conftest import EMBEDDED_DEMO, SR
from training.long_recordings import noisy_speech, slow_tones
from training.measures import noise_floor_db, rms_db
from training.seams import control_points, seam_measures, seam_points

DENOISE = "Remove only the background noise, preserve everything else, and output audio of the same length."
QUIETER = "Decrease the volume by 6 dB."
# How much further than at the control points a seam may depart from the reference: a level step
# within the 1 dB a listener can just hear, a spectrum within 1.5 dB, a jump within twice the signal's
# own changes (a click is ten times and more).
SEAM_MARGINS = {"level_step_db": 1.0, "spectral_step_db": 1.5, "sample_jump": 2.0}


@pytest.fixture(scope="module")
def pipeline():
    return AuKPipeline(EMBEDDED_DEMO, limits=Limits(), device="cpu")


def _assert_no_seam(result, reference, windows):
    """Every seam measure, against the reference, no worse at the seams than between them."""
    points = seam_points(windows.seams, windows.crossfade, windows.hop)
    controls = control_points(windows.seams, windows.crossfade, windows.hop)
    for name, measured in seam_measures(result, reference, points, controls).items():
        worst, usual = measured.excess_at_seams.max(), measured.excess_at_controls.max()
        assert worst <= usual + SEAM_MARGINS[name], (name, worst, usual)


@pytest.mark.slow
def test_three_minutes_of_noisy_speech_are_denoised_whole_with_no_seam(pipeline):
    noisy, clean = noisy_speech(180, seed=11)  # 5 dB SNR in white noise, held-out sentences
    result = edit_whole(pipeline, noisy, SR, DENOISE, seed=5)
    assert result.wav.shape == noisy.shape and result.sample_rate == SR
    assert len(result.windows.windows) == 36 and np.isfinite(result.wav).all()
    for start in range(0, noisy.size, 30 * SR):  # the noise floor falls in every 30 s
        stretch = slice(start, start + 30 * SR)
        assert noise_floor_db(result.wav[stretch]) < noise_floor_db(noisy[stretch]) - 20
    # Denoising deepens every pause, so the steps it leaves follow the speech: the reference is
    # the clean speech the noisy recording was made from.
    _assert_no_seam(result.wav, clean, result.windows)


@pytest.mark.slow
def test_two_minutes_of_tones_turned_down_6_db_are_down_6_db_in_every_10_s(pipeline):
    tones = slow_tones(120, seed=4)  # sustained notes under a slow ±6 dB swell
    result = edit_whole(pipeline, tones, SR, QUIETER, seed=5)
    assert result.wav.shape == tones.shape
    for start in range(0, tones.size, 10 * SR):
        stretch = slice(start, start + 10 * SR)
        assert rms_db(result.wav[stretch]) - rms_db(tones[stretch]) == pytest.approx(-6.0, abs=1.0)
    _assert_no_seam(result.wav, tones, result.windows)
    points = seam_points(result.windows.seams, result.windows.crossfade, result.windows.hop)
    steps = seam_measures(result.wav, tones, points, [])["level_step_db"]
    assert steps.excess_at_seams.max() < 1.0  # every seam keeps the swell's own level steps within 1 dB


def test_windows_share_steps_and_progress_counts_windows_and_steps():
    pipeline = AuKPipeline(EMBEDDED_DEMO, limits=Limits(), device="cpu")  # its batcher counts this run alone
    tones = slow_tones(15, seed=2)  # three windows
    events = []
    result = edit_whole(pipeline, tones, SR, QUIETER, seed=1, progress=lambda *event: events.append(event))
    assert len(result.windows.windows) == 3 and result.seed == 1
    assert (result.recipe.nfe, result.recipe.start, result.recipe.noise_scale) == (16, "source", 0.005)  # the demo's
    assert pipeline.batcher.largest_batch >= 2 and pipeline.batcher.batched_steps > 0
    windows = [done for phase, done, total in events if phase == "windows"]
    steps = [(done, total) for phase, done, total in events if phase == "sample"]
    assert events[0] == ("windows", 0, 3)  # how many windows, before the first step
    assert sorted(windows) == [0, 1, 2, 3] and steps[-1] == (48, 48) and len(steps) == 48
    assert result.steps["dit_steps"] == 48 and result.steps["shared_steps"] > 0  # the manifest's tally, summed
    assert [e for e in events if e[0] == "decode"][-1] == ("decode", tones.size, tones.size)


def test_stop_ends_every_window_between_steps_and_returns_nothing(pipeline):
    tones = slow_tones(25, seed=3)  # five windows, sixteen steps each
    steps = []

    def progress(phase, done, total):
        if phase == "sample":
            steps.append(done)

    with pytest.raises(Cancelled, match="nothing was produced"):
        edit_whole(pipeline, tones, SR, QUIETER, seed=1, progress=progress, should_stop=lambda: len(steps) >= 6)
    assert len(steps) < 6 + pipeline.max_batch  # the windows in flight stop at their next step; no others start


def test_a_silent_stretch_is_left_silent_and_the_rest_edited(pipeline):
    tone = slow_tones(5, seed=6)
    recording = np.concatenate([tone, np.zeros(14 * SR, np.float32), tone])
    result = edit_whole(pipeline, recording, SR, QUIETER, seed=2)
    assert np.abs(result.wav[8 * SR : 16 * SR]).max() < 1e-3
    quiet = sum(np.abs(recording[a:b]).max() < SILENCE_PEAK for a, b in result.windows.windows)
    assert quiet >= 1 and result.steps["dit_steps"] == 16 * (len(result.windows.windows) - quiet)  # none for silence
    assert rms_db(result.wav[: 4 * SR]) - rms_db(tone[: 4 * SR]) == pytest.approx(-6.0, abs=1.5)


@pytest.mark.parametrize("instruction", [
    "Adjust the speech speed to 1.5x.", "Speed it up 2x.", 'Say the following with the same voice: "hello"',
    "Replace 'seven' with 'eight'.", "Keep only the first speaker to start talking and remove all other speakers.",
    "Change the emotion to happy.", "Make it sound warmer.",
])
def test_an_edit_that_moves_timing_or_words_is_refused_in_one_sentence_that_points_to_regions(instruction):
    assert whole_file_refusal(recognise(instruction), 6, Limits()) == (
        "Only edits that keep the timing and the words (volume, pitch, noise removal and other clean-ups) can run "
        "on a whole recording longer than the model's 6 s window; to change the speed, the words or the voice, "
        "choose a region of at most 30 s (region_start and region_end).")


@pytest.mark.parametrize("instruction", [
    QUIETER, "Raise the pitch by 2 semitones.", DENOISE, "Repair the clipping and restore natural, clear speech.",
    "Keep only the singing voice and remove everything else.", "Make it 6 dB quieter.", "Remove the hiss.",
])
def test_edits_that_keep_timing_and_words_qualify(instruction):
    assert whole_file_refusal(recognise(instruction), 6, Limits()) is None


def test_a_recording_past_the_whole_file_limit_is_refused_before_any_model_work():
    pipeline = AuKPipeline(EMBEDDED_DEMO, limits=Limits(max_whole_file_seconds=120.0), device="cpu")
    refusal = r"lasts 2.0 minutes \(121 s\); a whole recording may last at most 2 minutes\."
    with pytest.raises(InputError, match=refusal):
        edit_whole(pipeline, slow_tones(121, seed=1), SR, QUIETER)
    assert not pipeline.loaded


def test_a_single_clip_longer_than_the_training_clips_is_warned_about():
    assert long_clip_warning(6.0, "AuK-Tiny (demo)", 6.0) is None
    assert long_clip_warning(12.34, "AuK-Tiny (demo)", 6.0) == (
        "The clip lasts 12.3 s, longer than the 6 s clips AuK-Tiny (demo) was trained on, so expect a weaker edit; "
        "edit it in regions of at most 6 s, or leave the region empty to edit the whole recording in windows of "
        "that length.")


@pytest.mark.slow
def test_a_long_recordings_check_measures_pieces_of_it_and_stops_with_the_edit(tmp_path):
    """Past 60 s the check measures six 5 s pieces, not the whole (its pYIN cost minutes and gigabytes
    an hour), and says so; Stop during the check ends the job at once, with nothing delivered."""
    import soundfile as sf

    from auk_app.job import EditJob
    from auk_app.results import EditOrder
    from auk_app.service import Studio, StudioConfig

    studio = Studio(StudioConfig(device="cpu"))
    path = tmp_path / "long.wav"
    sf.write(path, slow_tones(65, seed=3), SR, subtype="FLOAT")
    values = {"audio": str(path), "instruction": QUIETER, "model": "demo", "nfe": 2, "seed": 1, "randomize_seed": False}
    order = EditOrder.from_knobs(values, studio.config.limits)
    (delivered,), _ = EditJob(studio, order).run()
    check = delivered.record["check"]
    assert check["note"].endswith("measured on 6 pieces of 5 s spread over the 65 s recording") and check["pass"]
    decoded = []

    def progress(phase, done, total):
        if phase == "decode" and done == total:
            decoded.append(time.perf_counter())

    with pytest.raises(Cancelled):
        EditJob(studio, order, progress=progress, should_stop=lambda: bool(decoded)).run()
    assert time.perf_counter() - decoded[0] < 1.0  # the check was given up, not waited for
