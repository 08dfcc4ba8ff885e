"""``pip install -e .`` as the README says: in a fresh virtual environment, ``auk-app edit`` and
``python -m auk_app edit`` run a real edit with the demo model from a directory outside the checkout.
The new environment sees this one's packages (a .pth line), so nothing is downloaded."""

from __future__ import annotations

import json
import site
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import REPO

pytestmark = pytest.mark.slow
SR = 24_000


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    env = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    packages = next(p for p in (env / "lib").glob("python*/site-packages"))
    (packages / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-e", str(REPO)], check=True, timeout=300)
    return env


@pytest.mark.parametrize("command", [["bin/auk-app"], ["bin/python", "-m", "auk_app"]], ids=["script", "module"])
def test_an_installed_edit_runs_from_any_directory(installed, tmp_path, command):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tone = (0.2 * np.sin(2 * np.pi * 300 * np.arange(SR) / SR)).astype(np.float32)
    sf.write(elsewhere / "in.wav", tone, SR)
    done = subprocess.run([str(installed / command[0]), *command[1:], "edit", "--input", "in.wav", "--instruction",
                           "Decrease the volume by 6 dB.", "--output", "out.wav", "--seed", "1"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads(done.stdout)
    assert manifest["check"]["task"] == "volume" and (elsewhere / "out.wav").exists()
    assert str(REPO) not in str(elsewhere)
