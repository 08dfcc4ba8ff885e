"""Audex-Tiny names the words of a caption it does not know, from its own tokenizer: the README's
API example and other sounds it cannot make are named; what its grammar says (number words and
Chinese included) is not; the warning is one sentence naming them."""

import numpy as np
import pytest

from auk_app.demo.audex_vocabulary import caption_warnings, unknown_words, unknown_words_warning
from training.audex_captions import OUT_OF_VOCABULARY
from training.audex_sounds import draw
from training.train_audex import build_tokenizer


@pytest.fixture(scope="module")
def grammar_tokenizer(tmp_path_factory):
    """The tokenizer training builds from the caption grammar, saved as the snapshot saves it."""
    folder = tmp_path_factory.mktemp("tokenizer")
    build_tokenizer().save_pretrained(str(folder))
    return folder / "tokenizer.json"


@pytest.mark.parametrize(("caption", "unknown"), [
    ("Rain falling on a tin roof.", ["Rain", "tin", "roof"]),
    ("A dog barking in the rain.", ["dog", "barking", "rain"]),
    ("Piano melody", ["Piano", "melody"]),
])
def test_the_shipped_demo_names_the_words_of_sounds_it_cannot_make(caption, unknown):
    assert unknown_words(caption) == unknown


def test_stop_words_numbers_and_punctuation_are_never_named(grammar_tokenizer):
    assert unknown_words("The rain, the rain!! 12 of them, on a 440 roof.", grammar_tokenizer) == ["rain", "roof"]


def test_every_word_of_a_training_caption_is_known(grammar_tokenizer):
    rng = np.random.default_rng(0)
    captions = [draw(rng).caption for _ in range(300)]
    named = {c: unknown_words(c, grammar_tokenizer) for c in captions}
    # only the words some training captions carry on purpose
    assert all({w.lower() for w in words} <= set(OUT_OF_VOCABULARY) for words in named.values()), named
    assert unknown_words("Four hundred and forty hertz for one and a half seconds", grammar_tokenizer) == []
    assert unknown_words("一个四百四十赫兹的提示音，持续一点五秒。", grammar_tokenizer) == []


def test_touching_unknown_chinese_characters_are_one_word(grammar_tokenizer):
    assert unknown_words("打雷的声音", grammar_tokenizer) == ["打雷"]


def test_the_warning_names_the_words_in_one_sentence():
    assert unknown_words_warning([]) is None
    one = unknown_words_warning(["piano"])
    assert one.startswith('Audex-Tiny, the offline demo, does not know the word "piano" and passes over it:')
    many = unknown_words_warning(["Rain", "tin", "roof"])
    assert '"Rain", "tin" and "roof"' in many and many.count(".") == 1 and many.endswith("general sounds.")
    assert caption_warnings("a 440 Hz beep lasting 1.5 seconds") == []
    assert caption_warnings("Rain falling on a tin roof.") == [unknown_words_warning(["Rain", "tin", "roof"])]
