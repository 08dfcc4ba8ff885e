"""A demo-model training run stopped and run again ends with the same weights as one that was
never stopped, without encoding its examples twice; the flow starts at the source; the loss weighs
the channels it names; examples encoded in several processes are the ones one process makes."""

import math

import pytest
import torch
from safetensors.torch import load_file

from auk_app.auk.dit import AuKTransformer
from training.codec import build_codec, fit_statistics
from training.data import ProceduralDataset
from training.train_dit import (
    DIT_CONFIG,
    START_NOISE,
    TRAIN_TASKS,
    collate,
    encode_example,
    encode_examples,
    flow_loss,
    loss_weights,
    main,
)


def _item(**fields) -> dict:
    """An encoded example; pitch examples weigh the absent harmonics and the noise bands 1."""
    return {"text": "x", "task": "pitch", **fields}


TINY = ["--examples", "8", "--steps", "4", "--tail", "2", "--batch", "4", "--threads", "1", "--stat-clips", "8"]


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """``main`` sets torch's thread count for the whole process; the tests after this one keep theirs."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_a_resumed_run_reuses_its_examples_and_ends_where_an_unbroken_one_does(tmp_path, capsys):
    main(TINY + ["--out", str(tmp_path / "unbroken"), "--export", str(tmp_path / "unbroken-export")])
    main(TINY + ["--out", str(tmp_path / "broken"), "--tail", "0"])  # stops where the tail would start
    assert capsys.readouterr().out.count("encoded 8 examples") == 4  # each run: short clips, then long ones
    main(TINY + ["--out", str(tmp_path / "broken"), "--export", str(tmp_path / "broken-export")])
    resumed = capsys.readouterr().out
    assert "resumed at step 4" in resumed and "loaded 8 encoded examples of (0.5, 6.0) s" in resumed
    assert "encoded 8 examples" not in resumed
    for name in ("auk.safetensors", "vae.safetensors"):
        want, got = load_file(tmp_path / "unbroken-export" / name), load_file(tmp_path / "broken-export" / name)
        assert want.keys() == got.keys() and all((want[key] == got[key]).all() for key in want), name


def test_the_flow_starts_at_the_source_so_a_copy_costs_only_the_starts_noise():
    """A DiT that predicts no velocity misses a copy edit by the start's noise alone (0.02 RMS),
    and a text-only example by its whole target: the flow from no source starts at zeros."""
    torch.manual_seed(0)
    dit = AuKTransformer(**DIT_CONFIG)
    torch.nn.init.zeros_(dit.proj_out.weight)
    torch.nn.init.zeros_(dit.proj_out.bias)
    fusion = {"layer_weights": torch.zeros(6), "layer_scale": torch.ones(1)}
    source = torch.randn(8, dit.latent_dim)
    copy = _item(target=source, ref=source, ref_valid=8)
    text_only = _item(target=source)
    ones = torch.ones(dit.latent_dim)
    for item, expected in ((copy, START_NOISE**2), (text_only, float(source.pow(2).mean()))):
        batch = collate([item], {"x": torch.randn(6, 3, 384)})
        loss = flow_loss(dit, fusion, batch, torch.Generator().manual_seed(1), False, ones)
        torch.testing.assert_close(float(loss), expected, rtol=0.2, atol=0)


def test_the_flow_loss_averages_the_channels_with_their_weights():
    """All-ones weights give the plain mean over channels; weight on one group gives that group's error."""
    torch.manual_seed(0)
    codec, dit = build_codec(), AuKTransformer(**DIT_CONFIG)
    fusion = {"layer_weights": torch.zeros(6), "layer_scale": torch.ones(1)}
    frames, latent_dim = 5, codec.latent_dim
    item = _item(target=torch.randn(frames, latent_dim), ref=torch.randn(frames, latent_dim), ref_valid=frames)
    batch = collate([item], {"x": torch.randn(6, 3, 384)})

    def loss(weights):
        return flow_loss(dit, fusion, batch, torch.Generator().manual_seed(1), False, weights)

    ones = torch.ones(latent_dim)
    harmonics_only = torch.zeros(latent_dim)
    harmonics_only[codec.harmonic_channels] = 1.0
    ten_on_harmonics = ones.clone()
    ten_on_harmonics[codec.harmonic_channels] = 10.0
    plain, harmonic, weighted = loss(ones), loss(harmonics_only), loss(ten_on_harmonics)
    n_harmonic = codec.harmonic_channels.stop - codec.harmonic_channels.start
    rest = (plain * latent_dim - harmonic * n_harmonic) / (latent_dim - n_harmonic)
    assert not torch.isclose(harmonic, plain, rtol=1e-2)
    torch.testing.assert_close(weighted, (10 * n_harmonic * harmonic + (latent_dim - n_harmonic) * rest) / (latent_dim + 9 * n_harmonic))


def test_the_loss_weighs_the_harmonics_that_the_source_or_the_target_has():
    """A harmonic a lowered target drops to the floor weighs like one it keeps; one at the floor in
    both weighs its task's absent weight, and so does every harmonic past the source's valid
    frames that the target lacks; the noise bands weigh the task's noise weight."""
    codec = build_codec()
    harmonic, frames = codec.harmonic_channels, 4
    floor = (math.log10(codec.floor) - codec.latent_mean[harmonic]) / codec.latent_std[harmonic]
    loud = floor + 1.0 / codec.latent_std[harmonic]  # 20 dB above the floor
    source = torch.zeros(frames, codec.latent_dim)
    source[:, harmonic] = floor
    source[:, harmonic.start] = loud[0]  # the fundamental, kept
    source[:, harmonic.start + 1] = loud[1]  # the second harmonic, lowered to the floor
    target = source.clone()
    target[:, harmonic.start + 1] = floor[1]
    item = _item(task="denoise", target=target, ref=source, ref_valid=frames - 1)  # present 30, absent 3, noise 10
    weights = loss_weights(codec, collate([item, _item(target=target)], {"x": torch.randn(6, 3, 384)}))
    harmonics = weights[0][:, harmonic]
    assert harmonics[:, 0].tolist() == [30.0] * frames
    assert harmonics[:, 1].tolist() == [30.0] * (frames - 1) + [3.0]  # the last frame is past the valid ones
    assert harmonics[:, 2:].unique().tolist() == [3.0]
    assert weights[0][:, codec.noise_channels].unique().tolist() == [10.0]
    assert weights[1][:, codec.noise_channels].unique().tolist() == [1.0]  # each example its own


@pytest.mark.parametrize("flag, value, limit", [("--tail", "-1", 0), ("--steps", "0", 1), ("--batch", "1", 2)])
def test_a_count_below_its_limit_is_refused_with_the_limit_named(tmp_path, capsys, flag, value, limit):
    with pytest.raises(SystemExit):
        main(TINY + ["--out", str(tmp_path / "run"), flag, value])
    assert f"argument {flag}: must be at least {limit}, not {value}" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # refused before any work


def test_fewer_examples_than_a_batch_are_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(TINY + ["--out", str(tmp_path / "run"), "--examples", "3"])  # TINY's batch is 4
    assert "--examples (3) must be at least --batch (4)" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_examples_kept_by_an_older_trainer_are_refused_with_the_fix_named(tmp_path, capsys):
    """Those stored loss weights, not tasks; reused, they would fail mid-run with a KeyError."""
    run = tmp_path / "run"
    run.mkdir()
    torch.save({"text": {}, "items": [{"text": "x", "harmonic_weight": 10.0}]}, run / "short-examples-8-seed0.pt")
    with pytest.raises(SystemExit, match="encoded by an older train_dit .* delete it, or train into a new --out"):
        main(TINY + ["--out", str(run)])


def test_two_encoding_processes_give_what_one_does_in_order():
    codec = build_codec()
    dataset = ProceduralDataset(5, 10, TRAIN_TASKS, (0.5, 1.0))
    fit_statistics(codec, [dataset[i].target for i in (0, 1)])
    with torch.inference_mode():
        want = [encode_example(codec, dataset[i]) for i in range(len(dataset))]
    for workers in (2, 1):  # two spawned processes; one is this process
        got = encode_examples(codec, dataset, workers=workers)
        assert len(got) == len(want)
        for a, b in zip(got, want):  # the workers' codec has the statistics, and the order is the dataset's
            assert a.keys() == b.keys()
            for key in a:
                assert torch.equal(a[key], b[key]) if torch.is_tensor(a[key]) else a[key] == b[key], key
