"""The upload check: findings for good clips, one specific refusal per kind of bad clip."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from auk_app.config import Limits
from auk_app.upload_check import check_upload

KEYS = {"sample_rate", "channels", "duration_s", "peak", "rms", "silent", "clipping", "verdict", "message"}

def test_a_good_clip_is_ready(clips):
    findings = check_upload(clips.voice, Limits())
    assert KEYS <= findings.keys()
    assert findings["verdict"] == "ok"
    assert (findings["sample_rate"], findings["channels"], findings["duration_s"]) == (24_000, 1, 0.6)
    assert findings["peak"] == pytest.approx(0.5, abs=1e-3)
    assert 0 < findings["rms"] < findings["peak"]
    assert findings["silent"] is False and findings["clipping"] is False
    json.dumps(findings)  # JSON-ready as /inspect_audio returns it


def test_stereo_44k_is_accepted_and_the_conversion_is_named(clips):
    findings = check_upload(clips.stereo, Limits())
    assert findings["verdict"] == "ok"
    assert "mixed from 2 channels to mono" in findings["message"]
    assert "resampled from 44.1 kHz to 24 kHz" in findings["message"]


def test_clipping_is_a_warning_not_a_refusal(clips):
    findings = check_upload(clips.clipping, Limits())
    assert findings["verdict"] == "warning" and findings["clipping"] is True
    assert "clips" in findings["message"]


def test_each_bad_clip_is_refused_with_its_own_message(bad_upload):
    path, words = bad_upload
    findings = check_upload(path, Limits())
    assert findings["verdict"] == "rejected"
    assert words in findings["message"]
    json.dumps(findings)


def test_no_clip_is_refused_politely():
    findings = check_upload(None, Limits())
    assert findings["verdict"] == "rejected" and "Upload or record" in findings["message"]


def _flac_header(path, *, rate: int, channels: int, frames: int):
    """A FLAC of 42 bytes: a STREAMINFO header claiming ``frames`` at ``rate`` × ``channels``, no audio."""
    info = (4096).to_bytes(2, "big") * 2 + bytes(6)
    info += ((rate << 44) | ((channels - 1) << 41) | (15 << 36) | frames).to_bytes(8, "big") + bytes(16)
    path.write_bytes(b"fLaC" + bytes([0x80]) + len(info).to_bytes(3, "big") + info)
    return path


@pytest.mark.parametrize("rate, channels, seconds, region", [
    (192_000, 8, 599.9, True),  # 0.95 MB on the wire, 921 million samples decoded
    (655_350, 8, 29.9, False),  # within 30 s, but 157 million samples
])
def test_a_small_file_that_decodes_to_gigabytes_is_refused_from_its_header(tmp_path, rate, channels, seconds, region):
    import tracemalloc

    from auk_app.config import Limits

    limits = Limits().for_region(20.0 if region else None)
    bomb = _flac_header(tmp_path / "bomb.flac", rate=rate, channels=channels, frames=int(seconds * rate))
    tracemalloc.start()
    try:
        findings = check_upload(bomb, limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert findings["verdict"] == "rejected"
    assert f"holds {seconds * rate * channels / 1e6:.1f} million samples" in findings["message"]
    assert "at most 57.6 million (10 minutes of 48 kHz stereo). Export it at 48 kHz or less" in findings["message"]
    assert peak < 1_000_000


def test_a_many_channel_file_is_decoded_in_the_memory_of_its_mono_mix(tmp_path):
    import tracemalloc

    import numpy as np
    import soundfile as sf

    from auk_app.audio_io import read_mono

    rate, frames = 48_000, 20 * 48_000
    rng = np.random.default_rng(0)
    path = tmp_path / "eight.wav"
    sf.write(str(path), (0.1 * rng.standard_normal((frames, 8))).astype(np.float32), rate, subtype="PCM_16")
    mono_bytes = frames * 4  # 3.8 MB; all eight channels would be 31 MB
    peaks = []
    for read in (read_mono, lambda path: check_upload(path, Limits())):
        tracemalloc.start()
        try:
            result = read(path)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert result["verdict"] == "ok" and result["channels"] == 8
    assert peaks[0] < 1.5 * mono_bytes  # the decode: the mono mix and one block
    assert peaks[1] < 4 * mono_bytes  # the whole check, levels included


def test_flat_tops_are_found_in_one_channel_and_across_decode_blocks(tmp_path):
    import numpy as np
    import soundfile as sf

    from auk_app.audio_io import DECODE_BLOCK_FRAMES

    data = np.zeros((2 * DECODE_BLOCK_FRAMES, 2), np.float32)
    data[:, 0] = 0.3 * np.sin(np.arange(len(data)) / 10)
    data[DECODE_BLOCK_FRAMES - 1: DECODE_BLOCK_FRAMES + 1, 1] = 1.0  # two samples: not yet a flat top
    sf.write(str(tmp_path / "two.wav"), data, 24_000, subtype="FLOAT")
    assert check_upload(tmp_path / "two.wav", Limits())["clipping"] is False
    data[DECODE_BLOCK_FRAMES - 2, 1] = 1.0  # three in a row, split 2 + 1 by the block boundary
    sf.write(str(tmp_path / "three.wav"), data, 24_000, subtype="FLOAT")
    assert check_upload(tmp_path / "three.wav", Limits())["clipping"] is True


def test_the_fallback_decoder_reads_no_more_than_the_sample_budget(tmp_path, monkeypatch):
    """A container that understates its length passes the header check; librosa is then told to
    stop at the budget's length, not at the length limit (8 channels at 192 kHz: 37.5 s, not 601 s)."""
    import audioread
    import librosa
    import numpy as np

    from auk_app.audio_io import read_mono
    from auk_app.config import Limits

    class Probe:  # what audioread reports for a file libsndfile does not know
        samplerate, channels, duration = 192_000, 8, 1.0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    asked = []

    def load(path, sr, mono, dtype, duration):
        asked.append(duration)
        return np.zeros((8, 192_000), np.float32), 192_000

    monkeypatch.setattr(audioread, "audio_open", lambda path: Probe())
    monkeypatch.setattr(librosa, "load", load)
    odd = tmp_path / "clip.m4a"
    odd.write_bytes(b"not a format libsndfile knows")
    limits = Limits().for_region(600.0)
    read_mono(odd, limits)
    assert asked == [limits.max_decoded_samples / (192_000 * 8)]


def test_a_cut_short_ogg_is_not_called_an_empty_file(tmp_path):
    """An OGG cut off before its first audio page decodes to no samples: the sentence says the file
    may be cut short, not only that the clip is empty."""
    rng = np.random.default_rng(0)
    tone = (0.3 * np.sin(2 * np.pi * 300 * np.arange(240_000) / 24_000) + 0.05 * rng.standard_normal(240_000))
    whole = tmp_path / "whole.ogg"
    sf.write(whole, tone.astype(np.float32), 24_000, format="OGG", subtype="VORBIS")
    cut = tmp_path / "cut.ogg"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 10])
    findings = check_upload(cut, Limits())
    assert findings["verdict"] == "rejected" and "cut short before its first sound" in findings["message"]
