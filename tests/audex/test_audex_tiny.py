"""Audex-Tiny's files and codec: the release's layout and loaders, the event codec's decode, and a
release path that imports nothing of the demo."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from auk_app.audex.pipeline import AudexPipeline
from auk_app.audex.rvq import frames_to_codes
from auk_app.audex.xcodec import decode_frames, load_xcodec
from auk_app.demo.audex_snapshot import AUDEX_TINY_DIR, shared_demo_snapshot
from auk_app.demo.event_codec import (
    CLICK, CODEBOOK_SIZE, SIREN, TONE, EventCodec, digits_of, segment_codes, segments, slots_of,
)
from auk_app.errors import CheckpointError
from tests.conftest import REPO
from training import audex_measures as measures
from training.audex_sounds import draw, frames

ASSET_LIMIT = 40 * 1024 * 1024


def test_audex_tiny_is_stored_like_a_release_and_small():
    snapshot = shared_demo_snapshot()
    assert snapshot.audex_root == AUDEX_TINY_DIR / "audex"
    files = {p.relative_to(AUDEX_TINY_DIR).as_posix() for p in AUDEX_TINY_DIR.rglob("*") if p.is_file()}
    assert files == {
        "audex/config.json", "audex/checkpoint_folder_audiogen/config.json",
        "audex/checkpoint_folder_audiogen/tokenizer.json", "audex/checkpoint_folder_audiogen/tokenizer_config.json",
        "audex/checkpoint_folder_audiogen/model.safetensors.index.json",
        "audex/checkpoint_folder_full/model-00001-of-00002.safetensors",
        "xcodec/config.json", "xcodec/model.safetensors",
    }
    assert sum(p.stat().st_size for p in AUDEX_TINY_DIR.rglob("*") if p.is_file()) <= ASSET_LIMIT
    config = json.loads((snapshot.thinker_dir / "config.json").read_text())
    assert config["model_type"] == "nemotron_dense" and config["head_dim"] == 64  # vLLM's CPU attention
    assert json.loads((snapshot.xcodec_dir / "config.json").read_text())["codec"] == "audex_events"


def test_the_event_codec_loads_through_the_xcodec_loader_and_decodes_scenes():
    codec = load_xcodec(shared_demo_snapshot().xcodec_dir, device="cpu")
    assert isinstance(codec, EventCodec)
    rng = np.random.default_rng(3)
    for family in ("tone", "sweep", "siren", "clicks", "fade", "flat"):
        scene = draw(rng, held=True, family=family)
        grid = torch.from_numpy(frames(scene)) + torch.arange(4) * CODEBOOK_SIZE  # stream ids, layer offsets in
        wav = decode_frames(codec, grid)
        assert wav.dtype == np.float32 and len(wav) == len(grid) * 320 and np.abs(wav).max() < 1.0
        assert measures.score(scene, wav.astype(np.float64)).ok, (family, scene.caption)
        assert frames_to_codes(grid).shape == (1, 4, len(grid))


def test_a_segment_is_its_digits_with_a_clock_counting_its_frames_down():
    codes = segment_codes(TONE, digits_of(470, 4) + digits_of(1130, 4), 13)  # "470 to 1130 Hz over 1.3 s"
    assert codes.shape == (65, 4) and codes[0].tolist() == [104, 701, 130, 130]
    slots = slots_of(codes.T)
    assert slots[0, 9:].tolist() == [1, 3, 0] and slots[1, 9:].tolist() == [1, 2, 4] and slots[-1, 9:].tolist() == [0, 0, 1]
    assert (slots[:, :9] == slots[0, :9]).all()  # every later frame copies the first, but for the clock
    with pytest.raises(ValueError, match="8 digits and 1-99 tenths"):
        segment_codes(TONE, [1, 2, 3], 5)


def test_segments_split_where_the_kind_changes_or_the_clock_starts_again():
    clicks = [segment_codes(CLICK, [left, 1, 0, 0, 0, 0, 0, 0], 2) for left in (2, 1)]
    siren = segment_codes(SIREN, digits_of(300, 4) + digits_of(900, 4), 4)
    found = segments(np.concatenate([*clicks, siren]).T)
    assert [(s.kind, s.start, s.frames, s.params[0]) for s in found] == [(CLICK, 0, 10, 2), (CLICK, 10, 10, 1), (SIREN, 20, 20, 0)]


def test_a_segment_is_read_at_its_first_frame_and_codes_over_999_are_silence():
    codes = segment_codes(TONE, digits_of(440, 4) * 2, 5)
    codes[7, 1] = 999  # one later frame's f0 tens and units and f1 thousands wrong
    (segment,) = segments(codes.T)
    assert segment.frames == 25 and segment.params == tuple(digits_of(440, 4) * 2)
    codec = EventCodec(json.loads((AUDEX_TINY_DIR / "xcodec" / "config.json").read_text()))
    codec.level_db.copy_(EventCodec.tables()["level_db"])
    heard = codec.decode(torch.from_numpy(codes.T[None])).audio_values
    codes[:, 0] = 1000
    silent = codec.decode(torch.from_numpy(codes.T[None])).audio_values
    assert heard.shape == silent.shape == (1, 1, 25 * 320) and heard.abs().max() > 0.1 and silent.abs().max() == 0


def test_copies_that_drift_after_the_first_frame_do_not_change_the_sound():
    """What guidance at scale 3 made of "a sweep from 300 Hz to 900 Hz over 1.5 seconds": the first
    two frames say 0300 0900, the other 73 copy 0300 0300 (a steady 300 Hz if the majority ruled)."""
    codes = segment_codes(TONE, digits_of(300, 4) + digits_of(900, 4), 15)
    drifted = segment_codes(TONE, digits_of(300, 4) * 2, 15)
    codes[2:, 2] = drifted[2:, 2]
    (segment,) = segments(codes.T)
    assert segment.params == tuple(digits_of(300, 4) + digits_of(900, 4))
    codec = EventCodec(json.loads((AUDEX_TINY_DIR / "xcodec" / "config.json").read_text()))
    codec.level_db.copy_(EventCodec.tables()["level_db"])
    wav = codec.decode(torch.from_numpy(codes.T[None])).audio_values[0, 0].double().numpy()
    start, end = measures.glide(wav)
    assert abs(start / 300 - 1) < 0.05 and abs(end / 900 - 1) < 0.05


def test_a_codec_config_naming_an_unknown_codec_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"codec": "nope"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match="names a codec this app cannot build"):
        load_xcodec(tmp_path, device="cpu")


def test_audex_tiny_loads_with_the_release_code():
    snapshot = shared_demo_snapshot()
    pipeline = AudexPipeline.from_paths(snapshot.audex_root, snapshot.xcodec_dir, device="cpu")
    thinker = pipeline.sampler.thinker
    assert type(thinker.model).__name__ == "ArceeForCausalLM"
    assert thinker.model.config.vocab_size > thinker.vocab.tokenizer_size  # padding rows, as in the release


_LOAD_RELEASE_CODEC = """
import sys
from auk_app.audex.xcodec import load_xcodec
codec = load_xcodec(sys.argv[1], device="cpu")
assert type(codec).__name__ == "XcodecModel"
print(sorted(name for name in sys.modules if name == "auk_app.demo" or name.startswith("auk_app.demo.")))
"""


def test_loading_xcodec1_imports_nothing_of_the_demo(demo_snapshot):
    """The random snapshot's codec is a real XcodecModel config: the release's path."""
    done = subprocess.run([sys.executable, "-c", _LOAD_RELEASE_CODEC, str(demo_snapshot.xcodec_dir)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
