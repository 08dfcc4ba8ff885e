"""Stream -> frames -> XCodec1 audio, and the per-clip validity report and its plot."""

import json

import torch
from matplotlib.figure import Figure

from auk_app.audex.report import build_report
from auk_app.ui.token_plot import draw_token_stream
from auk_app.audex.rvq import frames_to_codes, stream_to_frames
from auk_app.audex.xcodec import decode_frames
from tests.audex.runs import run


def test_stream_to_frames_drops_the_partial_frame():
    frames, dropped = stream_to_frames([0, 1024, 2048, 3072, 5, 1030, 2100, 4000, 7, 1111])
    assert dropped == 2
    assert frames.tolist() == [[0, 1024, 2048, 3072], [5, 1030, 2100, 4000]]


def test_frames_to_codes_subtracts_layer_offsets_clamps_and_caps():
    frames = torch.tensor([[5, 1031, 2057, 4095], [3, 900, 5000, 3072]])
    assert frames_to_codes(frames).tolist() == [[[5, 3], [7, 0], [9, 1023], [1023, 0]]]
    assert frames_to_codes(torch.zeros(510, 4, dtype=torch.long)).shape == (1, 4, 500)


def test_decode_matches_xcodec_on_layer_local_codes(pipeline):
    frames = torch.tensor([[5, 1024 + 7, 2048 + 9, 3072 + 1023], [1, 1025, 2050, 3075], [700, 1800, 2900, 4000]])
    wav = decode_frames(pipeline.codec, frames)
    local = torch.tensor([[[5, 1, 700], [7, 1, 776], [9, 2, 852], [1023, 3, 928]]])
    with torch.no_grad():
        want = pipeline.codec.decode(local).audio_values.reshape(-1)
    assert wav.shape == (3 * 320,) and wav.dtype.name == "float32"
    assert torch.equal(torch.from_numpy(wav), want)


def test_decode_keeps_500_frames(pipeline):
    frames = torch.arange(501 * 4).reshape(501, 4) % 1024 + torch.tensor([0, 1024, 2048, 3072])
    assert decode_frames(pipeline.codec, frames).shape == (500 * 320,)


def _tokens(vocab, codec_ids):
    token_of = {c: t for t, c in vocab.codec_of.items()}
    return [token_of[c] for c in codec_ids]


def test_report_of_a_valid_stream(pipeline):
    vocab = pipeline.sampler.thinker.vocab
    tokens = _tokens(vocab, [3, 1030, 2100, 3999, 0, 1024, 2048, 3072]) + [vocab.end_tid]
    assert build_report(tokens, "end_token", vocab) == {
        "phase_valid": True, "mismatch_count": 0, "first_mismatch": None, "codec_count": 8, "frames": 2,
        "dropped_tokens": 0, "end_reason": "end_token", "upper_range_tokens": 0, "non_codec_tokens": 0,
        "generated_tokens": 9, "decodable": True, "decoded_frames": 2, "seconds": 0.04,
    }


def test_report_counts_what_unmasked_sampling_leaks(pipeline):
    vocab = pipeline.sampler.thinker.vocab
    padding_id = pipeline.sampler.thinker.model.config.vocab_size - 1
    text_id = pipeline.sampler.thinker.tokenizer.convert_tokens_to_ids("rain")
    tokens = _tokens(vocab, [3, 5000]) + [text_id, vocab.start_tid] + _tokens(vocab, [2049, 3100, 7]) + [padding_id]
    report = build_report(tokens, "max_tokens", vocab)
    assert report["first_mismatch"] == [1, 5000, 4, 1] and report["mismatch_count"] == 1
    assert (report["codec_count"], report["frames"], report["dropped_tokens"]) == (5, 1, 1)
    assert (report["upper_range_tokens"], report["non_codec_tokens"]) == (1, 3)
    assert not report["decodable"] and report["decoded_frames"] == 0
    assert json.loads(json.dumps(report)) == report


def test_report_judges_decodability_on_whole_frames_only(pipeline):
    vocab = pipeline.sampler.thinker.vocab
    report = build_report(_tokens(vocab, [0, 1024, 2048, 3072, 9]), "max_tokens", vocab)
    assert report["phase_valid"] and report["decodable"]
    report = build_report(_tokens(vocab, [0, 1024, 2048, 3072, 1024]), "max_tokens", vocab)
    assert not report["phase_valid"] and report["decodable"] and report["dropped_tokens"] == 1
    assert not build_report(_tokens(vocab, [0, 1024]), "max_tokens", vocab)["decodable"]


def _save_token_plot(codec_ids, report, path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), dpi=100)
    FigureCanvasAgg(fig)
    draw_token_stream(fig.add_subplot(), codec_ids, report)
    fig.savefig(path, format="png")
    return path


def test_plot_is_written_as_png(pipeline, tmp_path):
    masked = run(pipeline, "Rain falling on a tin roof.", codec_cap=40, decode=False)
    unmasked = run(pipeline, "Rain falling on a tin roof.", codec_cap=40, use_mask=False, decode=False)
    for name, result in (("masked", masked), ("unmasked", unmasked)):
        path = _save_token_plot(result.codec_ids, result.report, tmp_path / f"{name}.png")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    empty = build_report([], "max_tokens", pipeline.sampler.thinker.vocab)
    assert _save_token_plot([], empty, tmp_path / "empty.png").read_bytes()[:4] == b"\x89PNG"


def test_panel_titles_are_one_block_per_stream(pipeline):
    """A heading and the report's summary share one title: nothing drawn over anything else."""
    result = run(pipeline, "Rain falling on a tin roof.", codec_cap=40, decode=False)
    ax = Figure().add_subplot()
    draw_token_stream(ax, result.codec_ids, result.report, heading="With the mask")
    assert ax.get_title(loc="center") == "" and ax.get_title(loc="right") == ""
    assert ax.get_title(loc="left").startswith("With the mask\n40 codec tokens = 10 frames")
