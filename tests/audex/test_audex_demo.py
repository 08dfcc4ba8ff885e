"""The tiny random demo snapshot: real layout, deterministic bytes, quick to build."""

import json
import time

from auk_app.demo.audex_snapshot import SHARD_NAME, write_demo_snapshot
from tests.audex.runs import run


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_other_seed_other_weights(tmp_path):
    started = time.perf_counter()
    write_demo_snapshot(tmp_path / "a")
    assert time.perf_counter() - started < 10.0
    write_demo_snapshot(tmp_path / "b")
    write_demo_snapshot(tmp_path / "c", seed=1)
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert a == b
    shard = f"audex/checkpoint_folder_full/{SHARD_NAME}"
    assert a[shard] != c[shard] and a["xcodec/model.safetensors"] != c["xcodec/model.safetensors"]
    assert sum(len(data) for data in a.values()) < 8_000_000


def test_real_layout(demo_snapshot):
    thinker_dir = demo_snapshot.thinker_dir
    assert thinker_dir == demo_snapshot.audex_root / "checkpoint_folder_audiogen"
    index = json.loads((thinker_dir / "model.safetensors.index.json").read_text())
    assert set(index["weight_map"].values()) == {SHARD_NAME}
    assert not (thinker_dir / SHARD_NAME).exists()
    assert (demo_snapshot.audex_root / "checkpoint_folder_full" / SHARD_NAME).is_file()
    config = json.loads((thinker_dir / "config.json").read_text())
    assert config["model_type"] == "nemotron_dense" and "norm_eps" in config and "rope_parameters" in config
    assert {p.name for p in demo_snapshot.xcodec_dir.iterdir()} == {"config.json", "model.safetensors"}


def test_tokenizer_and_vocab_padding(pipeline):
    tokenizer, vocab = pipeline.sampler.thinker.tokenizer, pipeline.sampler.thinker.vocab
    names = tokenizer.get_vocab()
    for marker in ("<unk>", "<|im_start|>", "<|im_end|>", "<|text to audio|>", "<think>", "</think>",
                   "<audiogen_start>", "<audiogen_end>"):
        assert len(tokenizer.encode(marker)) == 1 and marker in names, marker
    assert len(vocab.codec_of) == 8192
    assert pipeline.sampler.thinker.model.config.vocab_size > vocab.tokenizer_size  # padding rows, as in the real 205312
    assert tokenizer.encode("Rain falling on a tin roof.").count(names["<unk>"]) == 0


def test_demo_sound_stays_below_full_scale(pipeline):
    import numpy as np

    peaks = [float(np.abs(run(pipeline, "rain on a tin roof", codec_cap=600, seed=seed).waveform).max())
             for seed in range(3)]
    assert 0.05 < min(peaks) and max(peaks) < 0.9, peaks  # audible, and no clipping in the PCM16 write
