"""A demo-model training run stopped and run again ends with the same weights as one that was
never stopped, without encoding its examples twice."""

import pytest
import torch
from safetensors.torch import load_file

from training.train_dit import main

pytestmark = pytest.mark.slow
TINY = ["--examples", "8", "--steps", "4", "--tail", "2", "--batch", "4", "--threads", "1"]


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """``main`` sets torch's thread count for the whole process; the tests after this one keep theirs."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


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
