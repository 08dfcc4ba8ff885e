"""Audex-Tiny's training: a paused and resumed run ends where an unbroken one does; the codec rows
are digit sums, written into the release layout's plain embedding and head; the tokenizer puts
every digit of a number at a fixed place, however the number was said (figures, English words,
Chinese numerals, kHz), and every Chinese character is a word; a segment's first frame weighs more
than its copies."""

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from auk_app.demo.event_codec import CODEBOOK_SIZE, NUM_CODEBOOKS
from auk_app.resolve import AUDEX_FULL_DIR, AUDEX_SHARD
from training.audex_numbers import chinese_number, english_number
from training.train_audex import (
    HEADER_WEIGHT,
    DigitRows,
    Layout,
    Trainee,
    build_tokenizer,
    caption_normalizer,
    collate,
    example,
    main,
)

TINY = ["--steps", "4", "--batch", "2", "--threads", "1", "--save-every", "2"]


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """``main`` sets torch's thread count for the whole process; the tests after this one keep theirs."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.mark.slow
def test_a_paused_run_resumes_and_ends_where_an_unbroken_one_does(tmp_path, capsys):
    main(TINY + ["--out", str(tmp_path / "unbroken"), "--export", str(tmp_path / "unbroken-export")])
    main(TINY + ["--out", str(tmp_path / "broken"), "--pause-after", "3"])
    main(TINY + ["--out", str(tmp_path / "broken"), "--export", str(tmp_path / "broken-export")])
    assert "resumed at step 3" in capsys.readouterr().out
    shard = f"audex/{AUDEX_FULL_DIR}/{AUDEX_SHARD}"
    want, got = load_file(tmp_path / "unbroken-export" / shard), load_file(tmp_path / "broken-export" / shard)
    assert want.keys() == got.keys() and all(torch.equal(want[key], got[key]) for key in want)


@pytest.mark.slow
def test_a_run_started_from_an_export_begins_where_the_export_ended(tmp_path):
    main(TINY + ["--out", str(tmp_path / "first"), "--export", str(tmp_path / "first-export")])
    main(["--steps", "0", "--init", str(tmp_path / "first-export"), "--out", str(tmp_path / "second"),
          "--export", str(tmp_path / "second-export")])
    shard = f"audex/{AUDEX_FULL_DIR}/{AUDEX_SHARD}"
    want, got = load_file(tmp_path / "first-export" / shard), load_file(tmp_path / "second-export" / shard)
    assert want.keys() == got.keys()
    for key in want:  # the codec rows are refitted digit sums: equal up to bf16 rounding
        torch.testing.assert_close(got[key].float(), want[key].float(), atol=0.02 if "embed" in key or "head" in key
                                   else 0.0, rtol=0.0)


def test_codec_rows_are_sums_of_digit_rows():
    rows = DigitRows(8)()
    assert rows.shape == (NUM_CODEBOOKS, CODEBOOK_SIZE, 8)
    # code 472 = row(4··) + row(·7·) + row(··2): what 472 and 000 differ by is what 400, 070 and 002 add
    torch.testing.assert_close(rows[:, 472] - rows[:, 0], (rows[:, 400] - rows[:, 0]) + (rows[:, 70] - rows[:, 0])
                               + (rows[:, 2] - rows[:, 0]))


def test_digit_rows_are_recovered_from_the_sums_an_export_wrote():
    """What ``--init`` does to start from an exported Audex-Tiny, whose files hold only the sums."""
    exported = DigitRows(8)()
    fitted = DigitRows(8)
    fitted.fit(exported.detach())
    torch.testing.assert_close(fitted(), exported, atol=1e-5, rtol=0)


def test_the_release_layout_gets_the_digit_sums(tokenizer):
    from transformers import ArceeForCausalLM

    from auk_app.audex.thinker import arcee_config
    from training.train_audex import audex_tiny_config

    layout = Layout(tokenizer)
    model = ArceeForCausalLM(arcee_config(audex_tiny_config(layout.size), source="test"))
    trainee = Trainee(model, layout)
    released = trainee.released()
    span = slice(layout.codec0, layout.codec0 + NUM_CODEBOOKS * CODEBOOK_SIZE)
    assert torch.equal(released.lm_head.weight[span], trainee.codec_out().reshape(-1, 128).detach())
    assert torch.equal(released.model.embed_tokens.weight[span], trainee.codec_in().reshape(-1, 128).detach())
    tokens = torch.tensor([tokenizer.encode("a 470 hz beep") + [layout.codec0 + 5, layout.codec0 + CODEBOOK_SIZE + 9]])
    with torch.no_grad():  # the released model reads codec tokens as training did
        torch.testing.assert_close(released.model(input_ids=tokens).last_hidden_state, trainee.hidden(tokens))
    assert released.model.embed_tokens.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()


@pytest.mark.parametrize(("text", "digits"), [
    ("a 470 hz beep", ["0", "4", "7", "0"]),
    ("a beep at 470.", ["0", "4", "7", "0", "."]),
    ("from 1130 hz", ["1", "1", "3", "0"]),
    ("over 700 ms", ["0", "7", "0", "0"]),
    ("for 1.3 s", ["1", ".", "3"]),
    ("0.250 s", ["0", ".", "2", "5", "0"]),
    ("3 clicks", ["3"]),
    ("12 clicks", ["1", "2"]),
    ("four hundred and seventy hertz", ["0", "4", "7", "0"]),
    ("twelve hundred hz for one and a half seconds", ["1", "2", "0", "0", "1", ".", "5"]),
    ("a 1.2 kHz beep, half a second", ["1", "2", "0", "0", "0", ".", "5"]),
    ("一千一百三十赫兹，一点五秒", ["1", "1", "3", "0", "1", ".", "5"]),
    ("４４０赫兹，两秒", ["0", "4", "4", "0", "2"]),
])
def test_three_digit_numbers_get_a_leading_zero_and_nothing_else_does(tokenizer, text, digits):
    tokens = tokenizer.convert_ids_to_tokens(tokenizer.encode(text))
    assert [t for t in tokens if t.isdigit() or t == "."] == digits


def test_every_number_said_in_words_reaches_the_lm_as_its_figures():
    normalizer = caption_normalizer()
    for n in range(2600):
        figures = f"{n:04d}" if 100 <= n < 1000 else str(n)  # three-digit numbers get their leading zero
        said = {english_number(n), english_number(n, use_and=False), english_number(n, teen_hundreds=True)}
        assert {normalizer.normalize_str(f"{words} hz") for words in said} == {f"{figures} hz"}, said
        assert normalizer.normalize_str(chinese_number(n) + "赫兹") == f"{figures}赫兹"


def test_chinese_characters_are_words_of_their_own(tokenizer):
    tokens = tokenizer.convert_ids_to_tokens(tokenizer.encode("一个440赫兹的提示音，持续1秒。"))
    assert tokens == ["1", "个", "0", "4", "4", "0", "赫", "兹", "的", "提", "示", "音", ",", "持", "续", "1", "秒", "."]


def test_each_position_predicts_the_next_token_within_its_phase(tokenizer):
    layout = Layout(tokenizer)
    c0, end = layout.codec0, layout.end
    long = ([7, 8, c0 + 1, c0 + CODEBOOK_SIZE + 2, c0 + 2 * CODEBOOK_SIZE + 3, c0 + 3 * CODEBOOK_SIZE + 4, end], 2,
            [4.0, 4.0, 4.0, 4.0, 4.0])
    short = ([7, c0 + 9, end], 1, [1.0, 4.0])
    tokens, targets, phases, weights = collate([long, short], layout)
    assert tokens[0].tolist() == long[0] and tokens[1].tolist() == [7, c0 + 9, end, 0, 0, 0, 0]
    assert targets[0].tolist() == [-1, 1, 2, 3, 4, CODEBOOK_SIZE, -1]  # the end is the column after the codes
    assert phases[0].tolist()[1:6] == [0, 1, 2, 3, 0]
    assert targets[1].tolist() == [9, CODEBOOK_SIZE, -1, -1, -1, -1, -1] and weights[1].tolist()[:3] == [1.0, 4.0, 0.0]


def test_a_segments_first_frame_and_the_end_weigh_more(tokenizer):
    layout = Layout(tokenizer)
    ids, prompt, weights = example(np.random.default_rng(0), tokenizer, layout, held=True)
    assert len(weights) == len(ids) - prompt and ids[-1] == layout.end and weights[-1] == HEADER_WEIGHT
    assert weights[:NUM_CODEBOOKS] == [HEADER_WEIGHT] * NUM_CODEBOOKS  # the first frame starts a segment
    assert set(weights) == {1.0, HEADER_WEIGHT} and weights.count(1.0) > weights.count(HEADER_WEIGHT)


def test_a_replaced_word_is_unknown_and_numbers_and_units_stay():
    from training.audex_captions import OUT_OF_VOCABULARY, _with_word_replaced

    rng = np.random.default_rng(0)
    english = "a smooth sweep from four hundred and forty hz to 880 Hz over 1.5 seconds."
    for _ in range(50):
        before, after = english.split(), _with_word_replaced(english, "en", rng).split()
        changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
        assert len(changed) == 1 and changed[0][1].rstrip(".") in OUT_OF_VOCABULARY
        assert changed[0][0].rstrip(".") not in {"four", "hundred", "and", "forty", "hz", "Hz", "1.5", "seconds"}
    chinese = "从四百四十滑到880赫兹的滑音，持续一点五秒"
    for _ in range(50):
        after = _with_word_replaced(chinese, "zh", rng)
        changed = [(b, a) for b, a in zip(chinese, after, strict=True) if b != a]
        assert len(changed) == 1 and changed[0][1] in OUT_OF_VOCABULARY and changed[0][0] in "从滑到的音持续"


def test_held_out_captions_carry_no_word_training_put_there():
    from training.audex_captions import OUT_OF_VOCABULARY
    from training.audex_sounds import draw

    rng = np.random.default_rng(1)
    held = [draw(rng, held=True).caption.lower() for _ in range(400)]
    assert not [c for c in held if set(c.replace(",", " ").replace(".", " ").split()) & set(OUT_OF_VOCABULARY)]
    training = [draw(rng).caption for _ in range(400)]
    assert sum(any(w in c for w in "某种特别酷怪") for c in training) > 5  # Chinese captions get them too
