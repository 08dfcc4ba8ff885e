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
from auk_app.demo.event_codec import CODEBOOK_SIZE, EventCodec
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
    for family in ("tone", "sweep", "clicks", "fade", "flat"):
        scene = draw(rng, held=True, family=family)
        grid = torch.from_numpy(frames(scene)) + torch.arange(4) * CODEBOOK_SIZE  # stream ids, layer offsets in
        wav = decode_frames(codec, grid)
        assert wav.dtype == np.float32 and len(wav) == len(grid) * 320 and np.abs(wav).max() < 1.0
        assert measures.score(scene, wav.astype(np.float64)).ok, (family, scene.caption)
        assert frames_to_codes(grid).shape == (1, 4, len(grid))


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
