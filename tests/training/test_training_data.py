import itertools

import numpy as np
import pytest

from training.data import (
    HELDOUT_SPACE,
    HOP,
    MATERIALS,
    PEAK_MAX,
    TASKS,
    TONE_FREQS_HZ,
    TONE_PEAK,
    TRAIN_SPACE,
    ProceduralDataset,
    heldout_cases,
    heldout_rng,
    sample_example,
    training_rng,
)
from training.instructions import pitch_instruction, volume_instruction
from training.measures import cents, f0_hz, f0_track, rms_db
from training.sounds import SAMPLE_RATE
from training.speech import NOUNS

PEAK_LIMIT = PEAK_MAX * (1 + 1e-6)  # float32 rounding of a peak drawn at exactly 0.95
EXACT_DENOISE = (
    "Remove only the background noise, preserve everything else, and output audio of the same length."
)


def _snr_db(clean: np.ndarray, mix: np.ndarray) -> float:
    clean, mix = clean.astype(np.float64), mix.astype(np.float64)
    return 10 * np.log10(np.sum(clean**2) / np.sum((mix - clean) ** 2))


def _fft_peak_hz(wav: np.ndarray) -> float:
    n_fft = 2**21  # 0.011 Hz bins
    return np.argmax(np.abs(np.fft.rfft(wav, n_fft))) * SAMPLE_RATE / n_fft


def test_tone_frequencies_are_the_50_hz_frame_rate_grid():
    assert TONE_FREQS_HZ == (200, 250, 300, 350, 400, 450, 500, 550, 600, 650, 700)
    # each tone completes a whole number of cycles per 20 ms latent frame
    assert all(f0 * 480 % 24000 == 0 for f0 in TONE_FREQS_HZ)


@pytest.mark.parametrize("index", range(len(TASKS)))
def test_same_seed_same_example(index):
    first, again = ProceduralDataset(seed=7, size=4)[index], ProceduralDataset(seed=7, size=4)[index]
    assert first.instruction == again.instruction and first.params == again.params
    for a, b in ((first.target, again.target), (first.source, again.source)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)


def test_different_seeds_differ():
    a, b = ProceduralDataset(seed=1, size=1)[0], ProceduralDataset(seed=2, size=1)[0]
    assert a.target.size != b.target.size or not np.array_equal(a.target, b.target)


def test_examples_are_well_formed():
    dataset = ProceduralDataset(seed=3, size=48, seconds=(0.5, 1.0))
    assert [example.task for example in dataset][:4] == list(TASKS)
    for example in dataset:
        # only speech pitch examples lack a target: the trainer shifts the source's F0 itself
        assert (example.target is None) == (example.task == "pitch" and example.params["kind"] == "speech")
        if example.target is not None:
            assert example.target.dtype == np.float32 and example.target.shape == (example.n_samples,)
            assert np.all(np.isfinite(example.target)) and np.max(np.abs(example.target)) <= PEAK_LIMIT
        if example.task == "tone":
            assert example.source is None
            continue
        assert example.source.dtype == np.float32 and example.source.shape == (example.n_samples,)
        assert np.all(np.isfinite(example.source)) and np.max(np.abs(example.source)) <= PEAK_LIMIT


def test_speech_is_close_to_half_of_the_audio_tasks():
    dataset = ProceduralDataset(seed=4, size=240, tasks=("volume", "pitch", "denoise"), seconds=0.5)
    kinds = [example.params["kind"] for example in dataset]
    assert 0.35 <= kinds.count("speech") / len(kinds) <= 0.55
    assert len({example.params["voice"] for example in dataset if example.params["kind"] == "speech"}) >= 10


def test_speech_pitch_example_has_the_source_and_the_shift_only():
    examples = (sample_example(training_rng(29, index), "pitch", 0.8, hop_aligned=1.0) for index in itertools.count())
    example = next(example for example in examples if example.params["kind"] == "speech")
    assert example.target is None and 1 <= abs(example.params["semitones"]) <= 4
    assert example.n_samples == example.source.size == 19_200 and example.seconds == pytest.approx(0.8)


def test_dataset_index_bounds():
    with pytest.raises(IndexError):
        ProceduralDataset(seed=0, size=2)[2]


def test_unknown_task_is_rejected():
    with pytest.raises(ValueError, match="speed"):
        sample_example(training_rng(0, 0), task="speed")


def test_lengths_whole_hops_or_arbitrary():
    aligned = [sample_example(training_rng(0, i), "volume", (0.5, 3.0), hop_aligned=1.0) for i in range(20)]
    free = [sample_example(training_rng(0, i), "volume", (0.5, 3.0), hop_aligned=0.0) for i in range(20)]
    assert all(example.n_samples % HOP == 0 for example in aligned)
    assert any(example.n_samples % HOP != 0 for example in free)
    assert all(0.5 * SAMPLE_RATE <= example.n_samples <= 3.0 * SAMPLE_RATE for example in aligned + free)
    assert sample_example(training_rng(0, 0), "pitch", 1.25, hop_aligned=0.0).n_samples == 30_000


def test_volume_target_is_source_times_exact_gain():
    for index in range(30):
        example = sample_example(training_rng(5, index), "volume", (0.5, 1.0))
        gain_db = example.params["gain_db"]
        assert 1 <= abs(gain_db) <= 15
        np.testing.assert_array_equal(example.target, example.source * np.float32(10 ** (gain_db / 20)))
        assert rms_db(example.target) - rms_db(example.source) == pytest.approx(gain_db, abs=1e-4)


def _pitch_example(kind: str):
    """The first 1-s training pitch example of a sound kind (tone, melody or chord)."""
    examples = (sample_example(training_rng(11, index), "pitch", 1.0) for index in itertools.count())
    return next(example for example in examples if example.params["kind"] == kind)


def test_pitch_target_f0_ratio_on_a_tone():
    example = _pitch_example("tone")
    interval = cents(f0_hz(example.target), f0_hz(example.source))
    # 0.4 cents worst on 40 held-out tones; 3 leaves room for vibrato.
    assert interval == pytest.approx(100 * example.params["semitones"], abs=3.0)


def test_pitch_target_f0_ratio_on_a_melody_frame_by_frame():
    example = _pitch_example("melody")
    # A median over a melody lands on whichever note holds the middle frame, so compare frames.
    intervals = cents(f0_track(example.target), f0_track(example.source))
    assert np.nanmedian(intervals) == pytest.approx(100 * example.params["semitones"], abs=3.0)


def _log_spectrum_shift_cents(target: np.ndarray, source: np.ndarray) -> int:
    """Shift, in whole cents, that best lines up the two long-term spectra on a log axis."""
    grid_hz = 80 * 2 ** (np.arange(7 * 1200) / 1200)  # 80 Hz .. 10.2 kHz, 1 cent apart
    n_fft = 2**20
    freqs = np.fft.rfftfreq(n_fft, 1 / SAMPLE_RATE)
    target_log, source_log = (
        np.interp(grid_hz, freqs, np.abs(np.fft.rfft(wav, n_fft))) for wav in (target, source)
    )
    overlap = np.correlate(target_log, source_log, mode="full")  # index size - 1 + lag
    lags = np.arange(-500, 501)  # within ±5 semitones
    return int(lags[np.argmax(overlap[grid_hz.size - 1 + lags])])


def test_pitch_target_moves_every_partial_by_the_ratio():
    # Chords have no single F0, so compare whole spectra (tones too, as a cross-check);
    # 60 draws land within 3 cents. Melodies smear this peak (up to 10) and use f0_track above.
    examples = (sample_example(training_rng(23, index), "pitch", (0.5, 1.0)) for index in range(16))
    for example in (example for example in examples if example.params["kind"] in ("tone", "chord")):
        shift = _log_spectrum_shift_cents(example.target, example.source)
        assert shift == pytest.approx(100 * example.params["semitones"], abs=3)


def test_pitch_target_has_same_length_and_level():
    for index in range(10):
        example = sample_example(training_rng(13, index), "pitch", (0.5, 1.0))
        assert 1 <= abs(example.params["semitones"]) <= 4
        if example.target is None:
            continue
        assert example.source.size == example.target.size
        assert rms_db(example.target) == pytest.approx(rms_db(example.source), abs=0.5)  # same amplitudes


def test_denoise_source_is_target_plus_noise_at_drawn_snr():
    for index in range(10):
        example = sample_example(training_rng(17, index), "denoise", (0.5, 1.0))
        assert 0.0 <= example.params["snr_db"] <= 20.0
        assert _snr_db(example.target, example.source) == pytest.approx(example.params["snr_db"], abs=0.01)


def test_tone_target_is_the_named_sine():
    for index in range(10):
        example = sample_example(training_rng(19, index), "tone", (0.5, 1.0))
        f0 = example.params["f0_hz"]
        assert f0 in TONE_FREQS_HZ and f"{f0} Hz" in example.instruction
        assert _fft_peak_hz(example.target) == pytest.approx(f0, abs=0.1)
        assert np.max(np.abs(example.target)) <= TONE_PEAK


def test_exact_templates_are_among_the_paraphrases():
    rng = np.random.default_rng(0)
    volume = {volume_instruction(6, rng) for _ in range(100)}
    pitch = {pitch_instruction(2, rng) for _ in range(100)}
    assert "Increase the volume by 6 dB." in volume and len(volume) == 5
    assert "Raise the pitch by 2 semitones." in pitch and len(pitch) == 5
    assert {"Make it louder by 6 dB.", "Shift the pitch up two semitones."} <= volume | pitch
    assert pitch_instruction(1) == "Raise the pitch by 1 semitones."
    assert volume_instruction(-10) == "Decrease the volume by 10 dB."
    assert pitch_instruction(-3) == "Lower the pitch by 3 semitones."


HELDOUT_INSTRUCTIONS = {
    ("volume", "tone"): {f"{verb} the volume by {db} dB." for verb in ("Increase", "Decrease") for db in (6, 12)},
    ("pitch", "tone"): {f"{verb} the pitch by {n} semitones." for verb in ("Raise", "Lower") for n in (2, 4)},
    ("denoise", "tone"): {EXACT_DENOISE},
    ("tone", "tone"): {f"Generate a {f0} Hz sine tone." for f0 in TONE_FREQS_HZ},
    ("volume", "speech"): {"Increase the volume by 6 dB.", "Decrease the volume by 6 dB."},
    ("pitch", "speech"): {"Raise the pitch by 2 semitones.", "Lower the pitch by 2 semitones."},
    ("denoise", "speech"): {EXACT_DENOISE},
}


@pytest.mark.parametrize(("family", "material"), list(HELDOUT_INSTRUCTIONS))
def test_heldout_conditions(family, material):
    cases = heldout_cases(family, 4, seed=0, material=material)
    assert {case.instruction for case in cases} <= HELDOUT_INSTRUCTIONS[family, material]
    if family != "tone":
        assert {case.instruction for case in cases} == HELDOUT_INSTRUCTIONS[family, material]  # 4 clips cover all
    seconds = (2, 6) if material == "speech" else (2, 3)
    for case in cases:
        assert case.task == family and case.params["material"] == material
        assert seconds[0] * SAMPLE_RATE <= case.n_samples <= seconds[1] * SAMPLE_RATE
        if family == "tone":
            assert case.source is None and case.n_samples % HOP == 0
            assert np.max(np.abs(case.target)) <= PEAK_LIMIT
            continue
        assert case.source.size == case.n_samples and np.max(np.abs(case.source)) <= PEAK_LIMIT
        if material == "speech":
            assert case.params["kind"] == "speech"
            assert (case.target is None) == (family == "pitch")
        else:
            assert 150 <= case.params["f0_hz"] <= 700 and 3 <= case.params["n_partials"] <= 5
            assert case.target.size == case.n_samples and np.max(np.abs(case.target)) <= PEAK_LIMIT
        if family == "denoise":
            assert case.params["noise"] == "white"
            assert _snr_db(case.target, case.source) == pytest.approx(5.0, abs=0.01)


def test_heldout_speech_is_varied_and_never_says_a_training_sentence():
    cases = [case for family in ("volume", "pitch", "denoise") for case in heldout_cases(family, 4, material="speech")]
    assert len({case.params["voice"] for case in cases}) >= 4
    assert len({case.params["rate_wpm"] for case in cases}) >= 4
    training_words = {w.strip(".") for e in ProceduralDataset(seed=0, size=60) if e.params.get("kind") == "speech"
                      for w in e.params["text"].split()}
    heldout_words = {w.strip(".") for case in cases for w in case.params["text"].split()}
    # every held-out sentence names held-out nouns, which no training sentence has
    assert set(NOUNS["heldout"]).isdisjoint(NOUNS["train"])
    assert heldout_words & set(NOUNS["heldout"]) and not training_words & set(NOUNS["heldout"])
    assert not heldout_words & set(NOUNS["train"])


def test_unknown_heldout_material_is_rejected():
    with pytest.raises(ValueError, match="speech"):
        heldout_cases("tone", 1, material="speech")


def test_heldout_lengths_are_arbitrary():
    assert any(case.n_samples % HOP != 0 for case in heldout_cases("volume", 6))


def test_heldout_is_deterministic():
    first, again = heldout_cases("denoise", 2, seed=3), heldout_cases("denoise", 2, seed=3)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.source, b.source)


def test_heldout_seed_space_is_disjoint_from_training():
    def entropy(rng):
        return tuple(rng.bit_generator.seed_seq.entropy)

    keys = [(seed, index) for seed in range(8) for index in range(50)]
    training = {entropy(training_rng(seed, index)) for seed, index in keys}
    heldout = {entropy(heldout_rng(family, seed, index, material))
               for family in TASKS for material in MATERIALS for seed, index in keys}
    assert {key[0] for key in training} == {TRAIN_SPACE} and {key[0] for key in heldout} == {HELDOUT_SPACE}
    assert training.isdisjoint(heldout)
