import librosa
import numpy as np
import pytest

from training.measures import (
    added_noise_floor_db,
    cents,
    envelope,
    envelope_correlation,
    f0_hz,
    is_valid_output,
    melody_kept,
    noise_floor_db,
    rms_db,
    spectral_snr_db,
    voiced_interval_cents,
)
from training.sounds import SAMPLE_RATE, noise, sine
from training.speech import speech_clip


def _time(seconds: float) -> np.ndarray:
    return np.arange(round(seconds * SAMPLE_RATE)) / SAMPLE_RATE


def test_rms_db_of_a_unit_sine_is_minus_3_01():
    assert rms_db(np.sin(2 * np.pi * 440 * _time(1.0))) == pytest.approx(-3.0103, abs=1e-4)


def test_rms_db_change_for_6_db_gain_is_6_00():
    wav = sine(440, SAMPLE_RATE, 0.0).astype(np.float32) * np.float32(0.2)
    change = rms_db(wav * np.float32(10 ** (6 / 20))) - rms_db(wav)
    assert change == pytest.approx(6.00, abs=1e-5)  # float32 gain: ~1e-7 relative, 1e-6 dB


def test_rms_db_of_silence_is_minus_inf():
    assert rms_db(np.zeros(100)) == -np.inf


@pytest.mark.parametrize("partials", [(1.0,), (1.0, 0.5, 0.3, 0.2)])
def test_f0_of_440_hz_tone_within_half_percent(partials):
    t = _time(1.0)
    wav = 0.3 * sum(a * np.sin(2 * np.pi * 440 * k * t + k) for k, a in enumerate(partials, start=1))
    assert f0_hz(wav) == pytest.approx(440, rel=0.005)  # measured 440.34 Hz for the sine, +1.3 cents


def test_f0_survives_fades_and_low_level():
    assert f0_hz(0.01 * sine(262, SAMPLE_RATE, 1.0, fade_s=0.2)) == pytest.approx(262, rel=0.005)


def test_f0_of_silence_is_nan():
    assert np.isnan(f0_hz(np.zeros(SAMPLE_RATE)))


def test_cents_of_known_intervals():
    assert cents(880, 440) == pytest.approx(1200)
    assert cents(440 * 2 ** (1 / 12), 440) == pytest.approx(100)
    np.testing.assert_allclose(cents([220, 440], 440), [-1200, 0])


def test_cents_is_nan_where_a_frequency_is_missing_or_not_positive():
    missing = np.isnan(cents([440, 0, np.nan, 440], [440, 440, 440, -1]))
    np.testing.assert_array_equal(missing, [False, True, True, True])


def test_spectral_snr_of_reference_with_itself_is_inf():
    reference = sine(440, SAMPLE_RATE, 0.0)
    assert spectral_snr_db(reference, reference) == np.inf


def test_spectral_snr_at_5_db_waveform_snr():
    reference = 0.3 * sine(330, 2 * SAMPLE_RATE, 0.0)
    bed = noise(np.random.default_rng(0), reference.size, "white")
    noisy = reference + bed * np.sqrt(np.mean(reference**2)) / 10 ** (5 / 20)
    # Noise-only bins count in full and tone bins partly, so it lands near the waveform SNR:
    # 5.1 dB here; held-out clips give 5.1 (white), 4.9 (pink), 4.0 (brown).
    assert 3.0 < spectral_snr_db(noisy, reference) < 7.0


def test_spectral_snr_fits_no_gain():
    reference = sine(440, SAMPLE_RATE, 0.0)
    # |0.5 S - S|² = 0.25 |S|², so 10·log10(4) = 6.02 dB: a gain error is scored, not fitted away.
    assert spectral_snr_db(0.5 * reference, reference) == pytest.approx(6.0206, abs=1e-3)


def test_spectral_snr_scores_missing_and_extra_samples():
    reference = sine(440, SAMPLE_RATE, 0.0)
    short = spectral_snr_db(reference[: -SAMPLE_RATE // 10], reference)  # last 10 % missing
    long = spectral_snr_db(np.concatenate([reference, reference[: SAMPLE_RATE // 10]]), reference)
    assert 5.0 < short < 15.0  # about 10·log10(1 / 0.1) = 10 dB
    assert 5.0 < long < 15.0


@pytest.mark.parametrize(
    ("wav", "n_samples", "valid"),
    [
        (np.zeros(10, np.float32), 10, True),
        (np.ones(10, np.float32), 10, True),
        (np.zeros(10, np.float32), 11, False),
        (np.full(10, 1.0001, np.float32), 10, False),
        (np.array([0.0, np.nan], np.float32), 2, False),
        (np.array([0.0, np.inf], np.float32), 2, False),
        (np.zeros((1, 10), np.float32), 10, False),
    ],
)
def test_is_valid_output(wav, n_samples, valid):
    assert is_valid_output(wav, n_samples) is valid


def test_envelope_is_rms_per_20_ms_frame():
    wav = np.concatenate([np.full(480, 0.5), np.full(480, -0.25), np.full(100, 1.0)])
    np.testing.assert_allclose(envelope(wav), [0.5, 0.25, 1.0])


def test_envelope_correlation_ignores_gain_and_sees_a_shuffle():
    rng = np.random.default_rng(0)
    wav, _ = speech_clip(rng, 2 * SAMPLE_RATE, "train")
    assert envelope_correlation(0.25 * wav, wav) == pytest.approx(1.0)
    shuffled = wav.reshape(-1, 480)[rng.permutation(100)].ravel()
    assert envelope_correlation(shuffled, wav) < 0.3
    assert np.isnan(envelope_correlation(np.zeros_like(wav), wav))


def test_voiced_interval_and_melody_on_speech():
    wav, _ = speech_clip(np.random.default_rng(1), 2 * SAMPLE_RATE, "train")
    shifted = librosa.effects.pitch_shift(wav, sr=SAMPLE_RATE, n_steps=2)
    assert voiced_interval_cents(shifted, wav) == pytest.approx(200, abs=15)
    assert melody_kept(0.5 * wav, wav) == 1.0
    assert melody_kept(shifted, wav) < 0.3  # 200 cents away on most frames
    assert melody_kept(np.zeros_like(wav), wav) == 0.0  # losing the voicing loses the melody
    assert np.isnan(voiced_interval_cents(np.zeros_like(wav), wav))


def test_noise_floor_follows_gain_and_catches_hiss():
    tone = 0.3 * sine(440, SAMPLE_RATE, 0.0)
    hiss = noise(np.random.default_rng(0), SAMPLE_RATE, "white")
    assert noise_floor_db(np.zeros(SAMPLE_RATE)) == -np.inf
    # unit-RMS white noise: mean cell power Σw² / (Σw / 2)² = 384 / 65536 (-22.3 dB); the 10th
    # percentile of its exponential spread lies 9.8 dB lower
    assert noise_floor_db(hiss) == pytest.approx(-32.1, abs=0.5)
    assert added_noise_floor_db(4 * hiss, hiss, 20 * np.log10(4)) == pytest.approx(0.0, abs=1e-6)
    assert added_noise_floor_db(tone * 0.5, tone, -6.0) <= 0.0  # clean source: the -100 dB reference
    assert added_noise_floor_db(tone + 1e-3 * hiss, tone) == pytest.approx(8.0, abs=1.0)  # -60 dBFS hiss
    assert added_noise_floor_db(tone + 1e-4 * hiss, tone) < 0.0  # -80 dBFS: below the reference
