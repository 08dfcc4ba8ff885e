"""Reproduce every ``tests/fixtures/reference/tta_*`` golden case exactly.

Everything (token layout, rows, scripts, seeds) is read from the fixture files, so the same tests
run unchanged against a fixture set with another layout.
"""

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from auk_app.audex.tta import TTARVQPhaseMaskLogitsProcessor, build_tta_phase_token_ids, validate_rvq_phase

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "reference"


def _cases(kind):
    cases = []
    for path in sorted(FIXTURES.glob("tta_*.json")):
        case = json.loads(path.read_text())
        if case["args"]["kind"] == kind:
            cases.append(pytest.param(case, id=path.stem))
    return cases


def _tensors(case):
    return load_file(str(FIXTURES / case["tensors_file"]))


class LayoutTokenizer:
    """A ``get_vocab()`` tokenizer built from a fixture's ``args.layout``.

    Plain ids ``0..n_plain-1`` are ``tN``; the markers and the codec block sit where the layout
    says; every other id below the tokenizer size is filler.
    """

    def __init__(self, layout, drop=()):
        names = {i: f"t{i}" for i in range(layout["n_plain"])}
        names[layout["start_tid"]] = "<audiogen_start>"
        names[layout["end_tid"]] = "<audiogen_end>"
        for n in range(layout["codec_count"]):
            names[layout["codec_offset"] + n] = f"<audiocodec_{n}>"
        size = max(names) + 1
        vocab = {names.get(i, f"<filler_{i}>"): i for i in range(size)}
        for name in drop:
            del vocab[name]
        self.vocab = vocab

    def get_vocab(self):
        return dict(self.vocab)

    def __len__(self):
        return max(self.vocab.values()) + 1


def _token_id(symbol, layout):
    if symbol == "S":
        return layout["start_tid"]
    if symbol == "E":
        return layout["end_tid"]
    if symbol.startswith("c"):
        return layout["codec_offset"] + int(symbol[1:])
    return int(symbol[1:])  # tN


class MoveDirectionality(enum.Enum):
    SWAP = 0
    UNIDIRECTIONAL = 1


@dataclass
class Params:
    extra_args: dict


@dataclass
class BatchUpdate:
    added: list
    removed: list = field(default_factory=list)
    moved: list = field(default_factory=list)


def _tta_args(layout, *, start_in_prompt, codec_cap):
    phase_ids, start, end = build_tta_phase_token_ids(LayoutTokenizer(layout))
    return {
        "tta_rvq": {
            "phase_token_ids": phase_ids,
            "start_tid": start,
            "end_tid": end,
            "codec_cap": codec_cap,
            "start_in_prompt": start_in_prompt,
        }
    }


@pytest.mark.parametrize("case", _cases("tta_phase_ids"))
def test_phase_table_matches_reference(case):
    layout = case["args"]["layout"]
    tokenizer = LayoutTokenizer(layout)
    assert len(tokenizer) == case["results"]["tokenizer_len"]
    phase_ids, start_tid, end_tid = build_tta_phase_token_ids(tokenizer)
    assert (start_tid, end_tid) == (case["results"]["start_tid"], case["results"]["end_tid"])
    assert torch.equal(torch.tensor(phase_ids, dtype=torch.int64), _tensors(case)["output.phase_token_ids"])
    upper_first = layout["codec_offset"] + 4 * 1024
    assert all(upper_first not in ids for ids in phase_ids)


@pytest.mark.parametrize("case", _cases("tta_phase_ids"))
@pytest.mark.parametrize("marker", ["<audiogen_start>", "<audiogen_end>"])
def test_missing_marker_raises(case, marker):
    with pytest.raises(ValueError, match="marker"):
        build_tta_phase_token_ids(LayoutTokenizer(case["args"]["layout"], drop=[marker]))


@pytest.mark.parametrize("case", _cases("tta_phase_ids"))
@pytest.mark.parametrize("codec", [5, 1024, 4095])
def test_incomplete_codec_vocab_raises(case, codec):
    with pytest.raises(ValueError, match=rf"Incomplete codec vocab for RVQ phase {codec // 1024}"):
        build_tta_phase_token_ids(LayoutTokenizer(case["args"]["layout"], drop=[f"<audiocodec_{codec}>"]))


@pytest.mark.parametrize("case", _cases("tta_phase_ids"))
def test_upper_half_codecs_are_not_needed(case):
    layout = case["args"]["layout"]
    tokenizer = LayoutTokenizer(layout, drop=[f"<audiocodec_{n}>" for n in range(4096, layout["codec_count"])])
    assert build_tta_phase_token_ids(tokenizer)[0] == build_tta_phase_token_ids(LayoutTokenizer(layout))[0]


@pytest.mark.parametrize("case", _cases("tta_mask_batch"))
def test_mask_batch_matches_reference(case):
    args, results = case["args"], case["results"]
    layout = args["layout"]
    histories = [[_token_id(s, layout) for s in row["history"]] for row in args["rows"]]
    assert histories == results["row_histories_ids"]
    added = []
    for idx, (row, history) in enumerate(zip(args["rows"], histories)):
        if row["start_in_prompt"] is None:  # a request without tta_rvq
            params = Params(extra_args={})
        else:
            params = Params(_tta_args(layout, start_in_prompt=row["start_in_prompt"], codec_cap=row["codec_cap"]))
        added.append((idx, params, [1, 2, layout["start_tid"]], history))
    processor = TTARVQPhaseMaskLogitsProcessor(None, "cpu", False)
    processor.update_state(BatchUpdate(added=added))
    generator = torch.Generator().manual_seed(args["logits_seed"])
    logits = torch.randn(len(histories), layout["logits_vocab"], generator=generator)
    original = logits.clone()
    out = processor.apply(logits)
    allowed = torch.isfinite(out)
    assert torch.equal(allowed, _tensors(case)["output.allowed"])
    assert allowed.sum(dim=1).tolist() == results["allowed_count_per_row"]
    assert torch.equal(out[allowed], original[allowed]) == results["finite_logits_unchanged"]


@pytest.mark.parametrize("case", _cases("tta_mask_stepping"))
def test_mask_stepping_matches_reference(case):
    args, results = case["args"], case["results"]
    layout = args["layout"]
    script = [_token_id(s, layout) for s in args["script"]]
    assert script == results["script_ids"]
    processor = TTARVQPhaseMaskLogitsProcessor(None, "cpu", False)
    history = []
    params = Params(_tta_args(layout, start_in_prompt=False, codec_cap=args["codec_cap"]))
    processor.update_state(BatchUpdate(added=[(0, params, [1], history)]))
    generator = torch.Generator().manual_seed(args["logits_seed"])
    rows, unchanged = [], True
    for step in range(len(script) + 1):
        assert len(history) == results["history_len_at_step"][step]
        logits = torch.randn(1, layout["logits_vocab"], generator=generator)
        original = logits.clone()
        allowed = torch.isfinite(processor.apply(logits))
        unchanged &= torch.equal(logits[allowed], original[allowed])
        rows.append(allowed[0])
        if step < len(script):
            history.append(script[step])
    allowed = torch.stack(rows)
    assert torch.equal(allowed, _tensors(case)["output.allowed"])
    assert allowed.sum(dim=1).tolist() == results["allowed_count_per_step"]
    assert unchanged == results["finite_logits_unchanged"]


@pytest.mark.parametrize("case", _cases("tta_validate"))
def test_validate_matches_reference(case):
    results = case["results"]["results"]
    assert len(results) == len(case["args"]["queries"])
    for entry in results:
        got = validate_rvq_phase(entry["query"]["codec_ids"])
        assert got == entry["result"], entry["query"]["name"]
        assert json.loads(json.dumps(got)) == got


def test_every_fixture_kind_is_present():
    kinds = {json.loads(p.read_text())["args"]["kind"] for p in FIXTURES.glob("tta_*.json")}
    assert {"tta_phase_ids", "tta_mask_batch", "tta_mask_stepping", "tta_validate"} <= kinds
