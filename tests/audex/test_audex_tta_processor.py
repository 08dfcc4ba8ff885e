"""Lifecycle of TTARVQPhaseMaskLogitsProcessor on a 32-id vocabulary (vLLM-Omni's unit layout).

Phases [[10, 11], [12, 13], [14, 15], [16, 17]], ``<audiogen_start>`` = 7, ``<audiogen_end>`` = 8:
small enough to name every allowed id.
"""

import random

import pytest
import torch

from auk_app.audex.tta import TTARVQPhaseMaskLogitsProcessor, validate_rvq_phase
from tests.audex.vllm_types import BatchUpdate, MoveDirectionality, Params

VOCAB = 32
PHASES = [[10, 11], [12, 13], [14, 15], [16, 17]]
START, END = 7, 8
ALL = set(range(VOCAB))


def tta(*, codec_cap=None, start_in_prompt=True, phases=PHASES):
    return Params({"tta_rvq": {"phase_token_ids": phases, "start_tid": START, "end_tid": END,
                               "codec_cap": codec_cap, "start_in_prompt": start_in_prompt}})


def allowed_ids(processor, rows=1, width=VOCAB):
    out = processor.apply(torch.zeros(rows, width))
    return [set(torch.isfinite(row).nonzero().flatten().tolist()) for row in out]


def make(*rows):
    """A processor with ``rows`` = [(params, output_list), ...] added at indices 0, 1, ..."""
    processor = TTARVQPhaseMaskLogitsProcessor(None, torch.device("cpu"), False)
    processor.update_state(BatchUpdate(added=[(i, p, [1, 2], out) for i, (p, out) in enumerate(rows)]))
    return processor


def test_not_argmax_invariant_and_none_update_is_a_no_op():
    processor = make((tta(), []))
    assert processor.is_argmax_invariant() is False
    processor.update_state(None)
    assert allowed_ids(processor) == [{10, 11}]


def test_walks_phases_and_allows_end_only_on_frame_boundaries():
    out = []
    processor = make((tta(), out))
    expected = [{10, 11}, {12, 13}, {14, 15}, {16, 17}, {10, 11, END}, {12, 13}, {14, 15}, {16, 17}, {10, 11, END}]
    for step, want in enumerate(expected):
        assert allowed_ids(processor) == [want], step
        out.append(sorted(want - {END})[0])


def test_codec_cap_forces_end():
    out = [10, 12, 14, 16]
    processor = make((tta(codec_cap=4), out))
    assert allowed_ids(processor) == [{END}]
    out.append(END)  # nothing special after the end: still only the end token past the cap
    assert allowed_ids(processor) == [{END}]


def test_start_not_in_prompt_waits_for_marker():
    out = [3, 4]
    processor = make((tta(start_in_prompt=False), out))
    assert allowed_ids(processor) == [ALL]
    out.append(START)
    assert allowed_ids(processor) == [{10, 11}]
    out.extend([10, START])  # a second start is just position 1... then 2
    assert allowed_ids(processor) == [{14, 15}]


def test_non_tta_rows_are_untouched():
    processor = make((Params({}), [10]), (tta(), []), (Params(None), []))
    assert allowed_ids(processor, rows=3) == [ALL, {10, 11}, ALL]


def test_no_tta_rows_leaves_logits_alone_even_if_narrow():
    processor = make((Params({"other": 1}), []))
    logits = torch.randn(1, 4)
    assert torch.equal(processor.apply(logits.clone()), logits)


def test_unidirectional_move_carries_state_and_frees_source():
    processor = make((tta(), [10]), (Params({}), []))
    processor.update_state(BatchUpdate(moved=[(0, 3, MoveDirectionality.UNIDIRECTIONAL)]))
    assert allowed_ids(processor, rows=4) == [ALL, ALL, ALL, {12, 13}]


def test_unidirectional_move_discards_destination_state():
    processor = make((tta(), [10]), (tta(), [10, 12]))
    processor.update_state(BatchUpdate(moved=[(0, 1, MoveDirectionality.UNIDIRECTIONAL)]))
    assert allowed_ids(processor, rows=2) == [ALL, {12, 13}]


def test_swap_exchanges_rows():
    processor = make((tta(), [10]), (tta(), [10, 12]), (Params({}), []))
    processor.update_state(BatchUpdate(moved=[(0, 1, MoveDirectionality.SWAP)]))
    assert allowed_ids(processor, rows=3) == [{14, 15}, {12, 13}, ALL]
    processor.update_state(BatchUpdate(moved=[(1, 2, MoveDirectionality.SWAP)]))
    assert allowed_ids(processor, rows=3) == [{14, 15}, ALL, {12, 13}]


def test_live_output_list_survives_moves():
    out = [10]
    processor = make((tta(), out))
    processor.update_state(BatchUpdate(moved=[(0, 1, MoveDirectionality.SWAP)]))
    out.append(12)
    assert allowed_ids(processor, rows=2) == [ALL, {14, 15}]


def test_removed_rows_are_forgotten():
    processor = make((tta(), []), (tta(), [10]))
    processor.update_state(BatchUpdate(removed=[0]))
    assert allowed_ids(processor, rows=2) == [ALL, {12, 13}]


def test_non_tta_request_on_a_tta_row_clears_it():
    processor = make((tta(), []), (tta(), []))
    processor.update_state(BatchUpdate(added=[(0, Params({}), [1], [])]))
    assert allowed_ids(processor, rows=2) == [ALL, {10, 11}]


def test_rows_outside_a_partial_step_are_skipped():
    processor = make((tta(), []), (tta(), [10]), (tta(), []), (tta(), [10, 12]))
    assert allowed_ids(processor, rows=2) == [{10, 11}, {12, 13}]
    processor = make((Params({}), []), (tta(), []))
    assert allowed_ids(processor, rows=1) == [ALL]
    assert allowed_ids(processor, rows=2) == [ALL, {10, 11}]


def test_phase_table_is_latched_from_the_first_request():
    processor = make((tta(), []))
    processor.update_state(BatchUpdate(added=[(1, tta(phases=[[20], [21], [22], [23]]), [1], [])]))
    assert allowed_ids(processor, rows=2) == [{10, 11}, {10, 11}]


def test_masks_cover_vocab_padding_beyond_the_phase_ids():
    processor = make((tta(), [10, 12, 14, 16]))
    assert allowed_ids(processor, width=64) == [{10, 11, END}]


def test_narrow_logits_raise():
    processor = make((tta(), []))
    with pytest.raises(RuntimeError, match="outside the logits width 16"):
        processor.apply(torch.zeros(1, 16))


def test_missing_tta_args_raise_on_apply():
    processor = make((Params({"tta_rvq": {"start_tid": START, "end_tid": END, "start_in_prompt": True}}), []))
    with pytest.raises(RuntimeError, match="phase token ids missing"):
        processor.apply(torch.zeros(1, VOCAB))


@pytest.mark.parametrize(
    "phases, message",
    [(PHASES[:3], "expected 4 phase id lists"), ([[10], [], [14], [16]], "phase 1 has no token ids"),
     ([[-1], [12], [14], [16]], "outside the logits width")],
)
def test_bad_phase_tables_raise(phases, message):
    processor = make((tta(phases=phases), []))
    with pytest.raises(RuntimeError, match=message):
        processor.apply(torch.zeros(1, VOCAB))


def test_end_id_outside_logits_raises():
    bad = Params({"tta_rvq": {"phase_token_ids": PHASES, "start_tid": START, "end_tid": 40, "start_in_prompt": True}})
    with pytest.raises(RuntimeError, match="end token id 40"):
        make((bad, [])).apply(torch.zeros(1, VOCAB))


def test_uniform_draws_are_phase_invalid_and_in_phase_stream_is_valid():
    rng = random.Random(0)
    draws = [rng.randrange(4096) for _ in range(64)]
    assert validate_rvq_phase(draws)["phase_valid"] is False
    stream = [(i % 4) * 1024 + rng.randrange(1024) for i in range(64)]
    assert validate_rvq_phase(stream) == {"phase_valid": True, "mismatch_count": 0, "first_mismatch": None,
                                          "codec_count": 64}
    assert validate_rvq_phase([0, 1024, 1, 3072])["first_mismatch"] == [2, 1, 0, 2]


def test_package_re_exports_the_tta_names():
    import auk_app
    from auk_app.audex import tta

    for name in ("AUDEX_AUDIOCODEC_TOKEN_OFFSET", "AUDEX_AUDIOCODEC_VOCAB_SIZE", "AUDEX_AUDIOGEN_START_TOKEN_ID",
                 "AUDEX_AUDIOGEN_END_TOKEN_ID", "XCODEC1_CODEBOOK_SIZE", "XCODEC1_NUM_CODEBOOKS", "NEG_INF",
                 "TTARVQPhaseMaskLogitsProcessor", "build_tta_phase_token_ids", "validate_rvq_phase"):
        assert getattr(auk_app, name) is getattr(tta, name)
    assert (tta.AUDEX_AUDIOCODEC_TOKEN_OFFSET, tta.AUDEX_AUDIOGEN_START_TOKEN_ID, tta.AUDEX_AUDIOGEN_END_TOKEN_ID) == (
        196613, 131073, 131074)
