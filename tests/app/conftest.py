"""App test fixtures: the demo model, generated clips, and the app launched on free ports.

Test modules here import gradio-dependent code only inside fixtures and tests, after
``gradio_temp`` has pointed GRADIO_TEMP_DIR at a pytest tmp dir.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf

from auk_app.demo import DEMO_DIR
from tests.conftest import REPO
from tests.ports import free_port

EMBEDDED_DEMO = DEMO_DIR
SR = 24_000


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    """The demo model every app test uses: the one shipped in assets/AuK-Tiny."""
    return EMBEDDED_DEMO


@pytest.fixture(scope="session")
def gradio_temp(tmp_path_factory):
    """GRADIO_TEMP_DIR (and no analytics) for the whole session; restored afterwards.

    Python's own temp dir moves under the session's tmp too: gradio_client leaves an empty folder
    there per downloaded file, and the Studio writes its tiny Audex demo snapshot there.
    """
    directory = tmp_path_factory.mktemp("gradio_temp")
    saved = {key: os.environ.get(key) for key in ("GRADIO_TEMP_DIR", "GRADIO_ANALYTICS_ENABLED")}
    saved_tempdir = tempfile.tempdir
    os.environ.update(GRADIO_TEMP_DIR=str(directory), GRADIO_ANALYTICS_ENABLED="False")
    tempfile.tempdir = str(tmp_path_factory.mktemp("python_temp"))
    yield directory
    tempfile.tempdir = saved_tempdir
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def client_for(gradio_temp):
    """``client_for(url)``: a gradio_client that downloads results into the session's tmp dir."""
    from gradio_client import Client

    return lambda url: Client(url, verbose=False, download_files=str(gradio_temp / "client_downloads"))


@pytest.fixture
def app_command() -> list[str]:
    """``python app.py`` as a user runs it."""
    return [sys.executable, str(REPO / "app.py")]


@pytest.fixture
def port() -> int:
    return free_port()


@contextlib.contextmanager
def launched(studio, warming=None):
    """The app over ``studio`` (and its ``warming``, not started) on a free port, closed at the end."""
    from auk_app.ui.app import build_demo, launch_options

    demo = build_demo(studio, warming)
    _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
    try:
        yield SimpleNamespace(url=url, demo=demo, studio=studio)
    finally:
        demo.close()


@pytest.fixture(scope="session")
def app(demo_dir, gradio_temp):
    """The app as ``python app.py`` serves it without weights: the demo model on the CPU."""
    from auk_app.service import Studio, StudioConfig

    with launched(Studio(StudioConfig(demo_dir=demo_dir, device="cpu"))) as running:
        yield running


@pytest.fixture(scope="session")
def client(app, client_for):
    return client_for(app.url)


@pytest.fixture(scope="session")
def flash_dir(demo_dir, tmp_path_factory) -> Path:
    """A Flash checkpoint built from the demo's own DiT and codec (assembled layout)."""
    from auk_app.auk.checkpoint import load_auk_checkpoint, read_auk_checkpoint
    from training.checkpoint_writer import write_auk_checkpoint

    demo = read_auk_checkpoint(demo_dir)
    model = load_auk_checkpoint(demo)
    return write_auk_checkpoint(
        tmp_path_factory.mktemp("flash_ckpt"), layout="assembled", dit=model.dit, dit_config=demo.dit_config,
        vae=model.vae, vae_config=demo.codec_config, layer_weights=model.layer_weights, layer_scale=model.layer_scale,
        name="AuK-Flash-test", variant="flash", text_encoder=demo.text_encoder,
    )


@pytest.fixture(scope="session")
def flash_app(demo_dir, flash_dir, gradio_temp):
    """The app with a Flash entry beside the demo (the demo stays the default, as without weights)."""
    from auk_app.service import Studio, StudioConfig

    config = StudioConfig(demo_dir=demo_dir, auk_flash=flash_dir, default_model="demo", device="cpu")
    with launched(Studio(config)) as running:
        yield running


# ----------------------------------------------------------------------------- clips

# (a `clips` attribute, words its refusal must contain): one kind of bad upload each
BAD_UPLOADS = [
    ("silent", "silent"),
    ("empty", "empty"),
    ("nan", "NaN"),
    ("too_long", "the limit is 30 s"),
    ("too_short", "lasts 10.0 ms; the model needs at least 40 ms"),
    ("one_sample", "lasts 1 sample (0.04 ms)"),
    ("too_many_channels", "9 channels"),
    ("unreadable", "Could not read"),
    ("rate_zero", "sample rate is 0 Hz; accepted rates are 4 kHz to 768 kHz"),
    ("rate_one", "sample rate is 1 Hz"),
    ("huge_peak", "peaks at +600.0 dBFS"),
    # 1 MB of FLAC that unpacks to two hours: the length comes from the header, nothing is decoded
    ("bomb", "lasts 7200.0 s; the limit is 30 s"),
]


@pytest.fixture(params=BAD_UPLOADS, ids=[name for name, _ in BAD_UPLOADS])
def bad_upload(request, clips) -> tuple[Path, str]:
    """(path of a bad clip, words its refusal must contain), once per kind."""
    name, words = request.param
    return getattr(clips, name), words


def _voice_like(seconds: float, rate: int, channels: int = 1, peak: float = 0.5) -> np.ndarray:
    """Two harmonics under a syllable-rate envelope plus a little noise: [T] or [T, channels]."""
    rng = np.random.default_rng(0)
    t = np.arange(int(seconds * rate)) / rate
    tone = np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t)
    wav = tone * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)) + 0.02 * rng.standard_normal(t.size)
    wav = (peak * wav / np.abs(wav).max()).astype(np.float32)
    return wav if channels == 1 else np.stack([wav * (1 - 0.1 * c) for c in range(channels)], axis=1)


@pytest.fixture(scope="session")
def clips(tmp_path_factory) -> SimpleNamespace:
    """Good and bad uploads, written once per session."""
    root = tmp_path_factory.mktemp("clips")

    def wav(name, data, rate, subtype="PCM_16"):
        path = root / name
        sf.write(str(path), data, rate, subtype=subtype)
        return path

    hot = np.clip(1.3 * np.sin(2 * np.pi * 200 * np.arange(SR // 2) / SR), -1, 1).astype(np.float32)
    nan = _voice_like(0.3, SR)
    nan[100:120] = np.nan
    unreadable = root / "unreadable.wav"
    unreadable.write_bytes(b"this is not audio " * 64)
    huge = _voice_like(0.3, SR)
    huge[50] = 1e30
    return SimpleNamespace(
        voice=wav("voice.wav", _voice_like(0.6, SR), SR),
        stereo=wav("stereo_44k.wav", _voice_like(0.5, 44_100, channels=2), 44_100),
        clipping=wav("clipping.wav", hot, SR),
        silent=wav("silent.wav", np.zeros(SR // 2, np.float32), SR),
        empty=wav("empty.wav", np.zeros(0, np.float32), SR),
        nan=wav("nan.wav", nan, SR, subtype="FLOAT"),
        too_long=wav("too_long.wav", _voice_like(31.0, 8_000), 8_000),
        too_short=wav("too_short.wav", _voice_like(0.01, SR), SR),
        one_sample=wav("one_sample.wav", np.full(1, 0.5, np.float32), SR),
        too_many_channels=wav("nine_channels.wav", _voice_like(0.1, SR, channels=9), SR),
        unreadable=unreadable,
        rate_zero=_with_header_rate(wav("rate_zero.wav", _voice_like(0.5, SR), SR), 0),
        rate_one=_with_header_rate(wav("rate_one.wav", _voice_like(0.5, SR), SR), 1),
        huge_peak=wav("huge_peak.wav", huge, SR, subtype="FLOAT"),
        bomb=_silent_flac(root / "bomb.flac", hours=2, rate=8_000),
    )


def _with_header_rate(path: Path, rate: int) -> Path:
    """A PCM WAV whose fmt chunk claims ``rate`` (bytes 24–27 of soundfile's plain RIFF header)."""
    data = bytearray(path.read_bytes())
    data[24:28] = rate.to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def _silent_flac(path: Path, *, hours: float, rate: int) -> Path:
    """Hours of digital silence in a tiny FLAC, written a minute at a time."""
    minute = np.zeros(60 * rate, np.int16)
    with sf.SoundFile(str(path), "w", rate, 1, format="FLAC", subtype="PCM_16") as handle:
        for _ in range(int(hours * 60)):
            handle.write(minute)
    return path
