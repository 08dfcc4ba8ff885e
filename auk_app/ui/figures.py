"""PNG figures the app shows and returns: the AuK before/after view and the Audex result panel.

matplotlib's object API on the Agg canvas only, never pyplot: no global figure registry, so
concurrent requests cannot draw into each other's figures, and nothing needs closing besides
letting the Figure go. Spectrograms are log-mel power in dB against a fixed reference (1.0),
not against each clip's own maximum, and input and output share one colour scale and one time
axis, so a volume or length change is visible as such.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from auk_app.ui.mel import mel_power
from auk_app.ui.token_plot import draw_token_stream

N_FFT = 1024
N_MELS = 80
FRAMES_PER_SECOND = 100  # 10 ms hop: fine enough to see a 20 ms latent frame's worth of change
DYNAMIC_RANGE_DB = 80  # shown below the loudest bin of either clip
ENVELOPE_BINS = 2000  # min/max per bin: a 30 s clip at 24 kHz is 720 000 points otherwise
ENVELOPE_MIN_SECONDS = 0.01  # bins of at least 10 ms (one period at 100 Hz), so short clips show an envelope too
# Sized for the page's column, not a poster: about 830 px wide, shown 340 to 550 px wide, where the
# smallest text (ticks, legends) is 10 to 16 px high, readable without zooming.
WIDTH_INCHES = 5.2
DPI = 160
SMALLEST_PT = 11
CAPTION_CHARS = 56  # a caption line at the title's 12 pt across WIDTH_INCHES; longer ones wrap
_INPUT, _OUTPUT = "0.55", "tab:blue"  # mid-grey and blue read on a light and on a dark page
# Text, ticks and frames in a mid-grey on a transparent background: the figure follows the page's
# light or dark theme instead of staying a white panel.
_INK = "#8c8c8c"
# Families that cover Chinese, in preference order: Debian's fonts-noto-cjk and fonts-wqy-microhei
# (installed by .ci/run), or whichever the system has. Found by file name when matplotlib's font
# cache predates their installation.
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK JP", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei",
                "Droid Sans Fallback", "Source Han Sans SC")
# Without one, Noto Sans CJK SC (SIL Open Font License) from the mplfonts package the requirements pin:
# every typed Chinese character draws with the app's own install, no system font needed.
PACKAGED_CJK_FONT = ("mplfonts", "fonts/NotoSansCJKsc-Regular.otf")
_CJK_FILE = re.compile(r"noto\w*cjk|wqy|droidsansfallback|sourcehansans", re.IGNORECASE)
# matplotlib opens a font file once per thread that draws with it (its font cache is per thread), so
# figures drawn on Gradio's many worker threads kept dozens of handles of each font file open. Every
# figure is drawn on this one thread instead.
_DRAWER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="figures")


def _on_the_figure_thread(draw):
    @functools.wraps(draw)
    def run(*args, **kwargs):
        return _DRAWER.submit(draw, *args, **kwargs).result()

    return run


def log_mel(mono: np.ndarray, sample_rate: int) -> np.ndarray:
    """[N_MELS, frames] power in dB re 1.0 (floored at −200 dB, which is below any real signal)."""
    if mono.shape[0] < N_FFT:
        mono = np.pad(mono, (0, N_FFT - mono.shape[0]))
    power = mel_power(mono, sample_rate, n_fft=N_FFT, hop=sample_rate // FRAMES_PER_SECOND, n_mels=N_MELS)
    return 10.0 * np.log10(np.maximum(power, 1e-20))


@_on_the_figure_thread
def before_after(
    path: str | Path,
    output: np.ndarray,
    sample_rate: int,
    *,
    source: np.ndarray | None = None,
    caption: str = "",
    region: tuple[float, float] | None = None,
) -> Path:
    """Waveforms (source grey behind the result) and the log-mel spectrograms of both, stacked.

    ``output`` and ``source`` are mono at ``sample_rate``; without a source only the result is drawn.
    An edited ``region`` (seconds) is shaded on every panel.
    """
    clips = [("source", source), ("result", output)] if source is not None else [("result", output)]
    fig = Figure(figsize=(WIDTH_INCHES, 1.9 + 1.6 * len(clips)), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1 + len(clips), 1, sharex=True, height_ratios=[1.1] + [1.5] * len(clips))
    wave_ax, spec_axes = axes[0], axes[1:]
    _draw_envelope(wave_ax, output, sample_rate, colour=_OUTPUT, label="result")
    if source is not None:  # outlined on top, so neither clip hides the other
        _draw_envelope(wave_ax, source, sample_rate, colour=_INPUT, label="source (outline)", outline=True)
    wave_ax.set_ylim(-1.05, 1.05)
    wave_ax.set_ylabel("amplitude\n(full scale ±1)")
    wave_ax.grid(alpha=0.3)
    mels = [log_mel(mono, sample_rate) for _, mono in clips]
    top = max(float(m.max()) for m in mels)
    for ax, (name, mono), mel in zip(spec_axes, clips, mels):
        image = _draw_mel(ax, mel, mono.shape[0] / sample_rate, vmax=top)
        ax.set_ylabel(f"{name}\nmel band")
    shared = "shared scale, " if source is not None else ""
    fig.colorbar(image, ax=list(spec_axes), label=f"dB re 1.0 ({shared}{DYNAMIC_RANGE_DB} dB shown)", shrink=0.9)
    spec_axes[-1].set_xlabel("time (s)")
    if region is not None:
        for ax in axes:
            ax.axvspan(*region, color="gold", alpha=0.18, linewidth=0, label="edited region" if ax is wave_ax else None)
    # Under the panels: inside the waveform's panel it would hide the clip.
    fig.legend(*wave_ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, frameon=False)
    longest = max(mono.shape[0] for _, mono in clips) / sample_rate
    wave_ax.set_xlim(0, max(longest, 1e-3))
    fig.suptitle(_wrapped(caption))
    return _save(fig, path)


@_on_the_figure_thread
def audex_panel(
    path: str | Path,
    waveform: np.ndarray | None,
    sample_rate: int,
    *,
    token_streams: Sequence[tuple[str, Sequence[int], dict]] = (),
    caption: str = "",
) -> Path:
    """The result's waveform and log-mel spectrogram above the titled token-stream plot(s).

    ``token_streams`` are (title, codec ids, validity report) triples, drawn by
    :func:`auk_app.ui.token_plot.draw_token_stream`.
    """
    heights = [1.0, 1.5] + [3.0] * len(token_streams)
    fig = Figure(figsize=(WIDTH_INCHES, sum(heights) + 0.4), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(heights), 1, height_ratios=heights)
    wave_ax, spec_ax = axes[0], axes[1]
    if waveform is None or waveform.size == 0:
        for ax in (wave_ax, spec_ax):
            ax.text(0.5, 0.5, "no audio was decoded", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
    else:
        seconds = waveform.shape[0] / sample_rate
        _draw_envelope(wave_ax, waveform, sample_rate, colour=_OUTPUT, label="result")  # its rate is in the caption
        wave_ax.set_ylim(-1.05, 1.05)
        wave_ax.set_xlim(0, seconds)
        wave_ax.set_ylabel("amplitude")
        mel = log_mel(waveform, sample_rate)
        image = _draw_mel(spec_ax, mel, seconds, vmax=float(mel.max()))
        spec_ax.set_xlabel("time (s)")
        spec_ax.set_ylabel("mel band")
        colour_axis = spec_ax.inset_axes([1.01, 0.0, 0.015, 1.0])  # beside the plot, not past the token legends
        fig.colorbar(image, cax=colour_axis, label="dB re 1.0")
    for ax, (title, codec_ids, report) in zip(axes[2:], token_streams):
        draw_token_stream(ax, codec_ids, report, heading=title)
    fig.suptitle(_wrapped(caption))
    return _save(fig, path)


def _wrapped(caption: str) -> str:
    return "\n".join(line for part in caption.split("\n") for line in textwrap.wrap(part, CAPTION_CHARS) or [""])


def _draw_envelope(ax, mono: np.ndarray, sample_rate: int, *, colour: str, label: str, outline: bool = False) -> None:
    """Min/max per time bin (filled, or as two edge lines), so every peak survives the downsampling."""
    n = mono.shape[0]
    if n == 0:
        return
    bins = max(1, min(ENVELOPE_BINS, int(n / (sample_rate * ENVELOPE_MIN_SECONDS))))
    edges = np.linspace(0, n, bins + 1).astype(int)
    lows = np.minimum.reduceat(mono, edges[:-1])
    highs = np.maximum.reduceat(mono, edges[:-1])
    times = edges[:-1] / sample_rate
    if outline:
        ax.plot(times, highs, color=colour, linewidth=0.8, label=label)
        ax.plot(times, lows, color=colour, linewidth=0.8)
    else:
        ax.fill_between(times, lows, highs, color=colour, alpha=0.7, linewidth=0.4, label=label)


def _draw_mel(ax, mel: np.ndarray, seconds: float, *, vmax: float):
    return ax.imshow(
        mel, origin="lower", aspect="auto", extent=(0, seconds, 0, mel.shape[0]),
        vmin=vmax - DYNAMIC_RANGE_DB, vmax=vmax, cmap="magma", interpolation="nearest",
    )


@functools.cache
def font_family() -> tuple[str, ...]:
    """DejaVu Sans (every Latin glyph and the minus sign) and then a CJK family, which matplotlib
    falls back to glyph by glyph, so a Chinese instruction in a caption is drawn, not boxes: an
    installed one, else the packaged Noto Sans CJK SC (PACKAGED_CJK_FONT)."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    if not {f.name for f in manager.ttflist} & set(CJK_FAMILIES):
        for path in font_manager.findSystemFonts():
            if _CJK_FILE.search(Path(path).name):
                try:
                    manager.addfont(path)
                except (OSError, RuntimeError, ValueError):  # a font file matplotlib cannot read: skip it
                    pass
    known = {f.name for f in manager.ttflist}
    cjk = next((name for name in CJK_FAMILIES if name in known), None)
    if cjk is None:
        package, name = PACKAGED_CJK_FONT
        path = str(importlib.resources.files(package) / name)
        manager.addfont(path)
        cjk = font_manager.FontProperties(fname=path).get_name()
    return ("DejaVu Sans", cjk)


@functools.cache
def warm_up() -> None:
    """Draw one tiny before/after figure, captioned in Chinese, and one Audex panel with a token
    stream, and throw them away: the one-time costs of the first of each (matplotlib's font cache and
    the CJK font, Agg's set-up, the first scatter and legend) are paid while the app warms up
    (:mod:`auk_app.ui.warming`), not by the first run. Once per process."""
    import tempfile

    clip = np.sin(np.linspace(0, 2 * np.pi * 40, 2400, dtype=np.float32)) * 0.1
    stream = [book * 1024 + 7 for _ in range(4) for book in range(4)]
    report = {"phase_valid": True, "mismatch_count": 0, "first_mismatch": None, "codec_count": len(stream),
              "frames": len(stream) // 4, "dropped_tokens": 0, "end_reason": "eos"}
    with tempfile.TemporaryDirectory(prefix="auk_warm_up_") as folder:
        before_after(Path(folder) / "warm_up.png", clip, 24_000, source=clip, caption="warm-up · 预热",
                     region=(0.02, 0.05))
        audex_panel(Path(folder) / "warm_up_audex.png", clip, 16_000, token_streams=[("warm-up", stream, report)],
                    caption="warm-up")


def _save(fig: Figure, path: str | Path) -> Path:
    _follow_the_theme(fig)
    for text in fig.findobj(Text):  # per artist: rcParams are process-global and requests run concurrently
        text.set_fontfamily(list(font_family()))
        text.set_fontsize(max(text.get_fontsize(), SMALLEST_PT))
    path = Path(path)
    fig.savefig(path, format="png", transparent=True)
    return path


def _follow_the_theme(fig: Figure) -> None:
    """Grey ink on no background, set on this figure's own artists (rcParams are process-global)."""
    for text in fig.findobj(lambda artist: hasattr(artist, "set_color") and hasattr(artist, "get_text")):
        if text.get_color() in ("black", "#000000", (0.0, 0.0, 0.0, 1.0)) or text.get_color() == "k":
            text.set_color(_INK)
    for ax in fig.axes:
        ax.set_facecolor("none")
        ax.tick_params(colors=_INK, which="both", labelsize=SMALLEST_PT)
        for spine in ax.spines.values():
            spine.set_edgecolor(_INK)
        legend = ax.get_legend()
        if legend is not None:
            legend.get_frame().set_facecolor("none")
