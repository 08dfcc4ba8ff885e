"""The figures' own pieces: the numpy mel spectrogram (librosa's definition without importing it)
and the fonts they draw with."""

from __future__ import annotations

import numpy as np
import pytest

from auk_app.ui.mel import mel_power

RATES = [(24_000, 2_400), (24_000, 72_017), (16_000, 32_000), (48_000, 1_024)]


@pytest.mark.parametrize("rate, samples", RATES)
def test_the_mel_spectrogram_is_librosas(rate, samples):
    librosa = pytest.importorskip("librosa")
    noise = (0.3 * np.random.default_rng(samples).standard_normal(samples)).astype(np.float32)
    tone = (0.2 * np.sin(2 * np.pi * 440 * np.arange(samples) / rate)).astype(np.float32)
    for mono in (noise, tone):
        theirs = librosa.feature.melspectrogram(y=mono, sr=rate, n_fft=1024, hop_length=rate // 100, n_mels=80,
                                                power=2.0)
        ours = mel_power(mono, rate, n_fft=1024, hop=rate // 100, n_mels=80)
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6 * float(theirs.max()))


def test_drawing_a_figure_does_not_import_librosa(tmp_path):
    """librosa's import compiles numba code on a machine without its cache (about a minute on two
    busy cores): the figures, drawn after every edit, must not pay it."""
    import subprocess
    import sys

    code = ("import sys, numpy as np; from auk_app.ui import figures; "
            "clip = np.sin(np.arange(4800) / 10).astype(np.float32); "
            f"figures.before_after({str(tmp_path / 'f.png')!r}, clip, 24000, source=clip, caption='x'); "
            "print('librosa' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False" and (tmp_path / "f.png").stat().st_size > 0


def test_the_shipped_cjk_subset_holds_every_chinese_character_of_the_app():
    """Chinese wording added to the code needs ``python assets/fonts/make_cjk_subset.py`` run again."""
    import importlib.util

    from fontTools.ttLib import TTFont

    from auk_app.ui import style

    spec = importlib.util.spec_from_file_location("make_cjk_subset", style.WEB_FONT.with_name("make_cjk_subset.py"))
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    wanted = maker.app_characters()
    font = TTFont(style.WEB_FONT)
    assert len(wanted) > 100 and [c for c in wanted if ord(c) not in font["cmap"].getBestCmap()] == []
    assert font["name"].getDebugName(1) == style.WEB_FONT_FAMILY
