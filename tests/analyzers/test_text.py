"""beam_prep.analyzers.text against the real keras.layers.TextVectorization (and tf.strings ops).

The reference tokens come from the layer only: adapt it (no max_tokens), call it in ``int``
mode and map the indices back through ``get_vocabulary()``. Every token the layer emits on
the adapted corpus is in that vocabulary, except ``""`` (index 0) and ``"[UNK]"`` (index 1),
which the vocabulary lists at those indices too, so this recovers the layer's per-row token
sequences exactly without touching its internals.
"""

from __future__ import annotations

import collections
import string

import numpy as np
import pyarrow as pa
import pytest

from beam_prep.analyzers.text import (
    KERAS_RESERVED_TOKENS,
    add_ngrams,
    split,
    standardize,
    tokenize,
)
from beam_prep.analyzers.text_counts import (
    document_frequencies,
    token_counts,
    token_statistics,
)
from beam_prep.errors import InputError, SpecError
from beam_prep.spec import TextFeature
from tests.seed_corpus import GREEK  # noqa: E402

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

# What the guide prints for layer(GREEK) after layer.adapt(GREEK).
GREEK_EXPECTED = [
    [37, 12, 25, 5, 9, 20, 21, 0, 0],
    [51, 34, 27, 33, 29, 18, 0, 0, 0],
    [49, 52, 30, 31, 19, 46, 10, 0, 0],
    [7, 5, 50, 43, 28, 7, 47, 17, 0],
    [24, 35, 39, 40, 3, 6, 32, 16, 0],
    [4, 2, 15, 14, 22, 23, 0, 0, 0],
    [36, 48, 6, 38, 42, 3, 45, 0, 0],
    [4, 2, 13, 41, 53, 8, 44, 26, 11],
]
# The same guide's ngrams=2 examples.
BRAIN = [
    "The Brain is wider than the Sky",
    "For put them side by side",
    "The one the other will contain",
    "With ease and You beside",
]

_SPACES = ["\u00a0", "\u2003", "\u3000", "\t", "\n", "\x0b", "\x0c", "\r",
           "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029", " "]
NASTY = [
    "",
    " ",
    "     ",
    "\t\n\x0b\x0c\r",
    "a" + "b".join(_SPACES) + "c",
    " lead and trail\t",
    "Ξένος ΞΈΝΟΣ Élan ÉLAN ÀÖØ straße İstanbul",
    "«Bonjour» — l’homme, d’accord? ‘quoted’ “double” ᾽",
    string.punctuation,
    "a" + " ".join(string.punctuation) + "z",
    "it's a co-op; e-mail: x@y.z (really!) [sic] {ok} <tag/> #1 $2 %3 ^4 &5 *6 _7 `8 |9 ~0",
    "emoji 👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
    "e\u0301 combining a\u0308\u0304 Hangul 한국어 \u1100\u1161",
    "[UNK] [unk] UNK",
    "MiXeD CaSe ASCII and Ω ω",
    "repeat repeat repeat, Repeat REPEAT",
    "tab\tsep\tvalues\t\t",
    "...!!!???",
]


def _layer_tokens(texts: list[str], standardize_mode: str, split_mode: str,
                  ngrams: int | None) -> list[list[str]]:
    """Per-row tokens as the real TextVectorization layer sees them."""
    layer = keras.layers.TextVectorization(
        standardize=None if standardize_mode == "none" else standardize_mode,
        split=None if split_mode == "none" else split_mode,
        ngrams=ngrams, output_mode="int")
    layer.adapt(texts)
    vocabulary = [str(t) for t in layer.get_vocabulary()]
    assert vocabulary[:2] == list(KERAS_RESERVED_TOKENS)
    indices = np.asarray(layer(tf.constant(texts)))
    if indices.ndim == 1:
        indices = indices[:, None]
    rows = []
    for row in indices.tolist():
        if split_mode != "none":   # 0 is padding; a split never yields an empty token
            row = [i for i in row if i != 0]
        rows.append([vocabulary[i] for i in row])
    return rows


def _feature(standardize_mode: str, split_mode: str, ngrams: int | None) -> TextFeature:
    feature = TextFeature("t", standardize=standardize_mode, split=split_mode, ngrams=ngrams)
    feature.validate()
    return feature


def _assert_matches_layer(texts: list[str], feature: TextFeature) -> None:
    expected = _layer_tokens(texts, feature.standardize, feature.split, feature.ngrams)
    ours = tokenize(pa.array(texts), feature).to_pylist()
    assert ours == expected

    tokens, counts = token_counts(pa.array(texts), feature)
    assert dict(zip(tokens.to_pylist(), counts.to_pylist())) == \
        dict(collections.Counter(t for row in expected for t in row))
    assert len(set(tokens.to_pylist())) == len(tokens)

    tokens, df = document_frequencies(pa.array(texts), feature)
    assert dict(zip(tokens.to_pylist(), df.to_pylist())) == \
        dict(collections.Counter(t for row in expected for t in set(row)))


# --------------------------------------------------------------------------- seed corpora

@pytest.mark.parametrize("ngrams", [None, 2])
def test_greek_corpus_matches_layer(ngrams):
    _assert_matches_layer(GREEK, _feature("lower_and_strip_punctuation", "whitespace", ngrams))


def test_greek_vocabulary_equals_adapted_layer():
    layer = keras.layers.TextVectorization()
    layer.adapt(GREEK)
    tokens, _ = token_counts(pa.array(GREEK), TextFeature("t"))
    assert sorted(tokens.to_pylist()) == sorted(layer.get_vocabulary(include_special_tokens=False))


def test_greek_reproduces_the_guides_tensor():
    """The guide's printed indices follow from our counts and the documented adapt order:
    count descending, ties by the token's bytes descending, indices from 2."""
    feature = TextFeature("t")
    tokens, counts = token_counts(pa.array(GREEK), feature)
    pairs = sorted(zip(counts.to_pylist(), (t.encode() for t in tokens.to_pylist())),
                   reverse=True)
    index = {tok.decode(): i + 2 for i, (_, tok) in enumerate(pairs)}
    rows = [[index[t] for t in row] for row in tokenize(pa.array(GREEK), feature).to_pylist()]
    width = max(map(len, rows))
    assert [row + [0] * (width - len(row)) for row in rows] == GREEK_EXPECTED


def test_brain_corpus_bigrams_match_layer():
    _assert_matches_layer(BRAIN, _feature("lower_and_strip_punctuation", "whitespace", 2))
    tokens = tokenize(pa.array(BRAIN[:1]), TextFeature("t", ngrams=2)).to_pylist()[0]
    assert tokens[:7] == ["the", "brain", "is", "wider", "than", "the", "sky"]
    assert tokens[7:] == ["the brain", "brain is", "is wider", "wider than", "than the",
                          "the sky"]


# --------------------------------------------------------------------------- nasty cases

_MODES = [(s, p, n)
          for s in ("lower_and_strip_punctuation", "lower", "strip_punctuation", "none")
          for p in ("whitespace", "character", "none")
          for n in ((None,) if p == "none" else (None, 2, 3))]


@pytest.mark.parametrize(("standardize_mode", "split_mode", "ngrams"), _MODES)
def test_nasty_corpus_matches_layer(standardize_mode, split_mode, ngrams):
    _assert_matches_layer(NASTY, _feature(standardize_mode, split_mode, ngrams))


def test_random_texts_match_layer():
    """Random strings over an alphabet of every troublesome kind, every split mode."""
    alphabet = list("aZ09 \t\n\r\x0b\x0c" + string.punctuation) + _SPACES + list(
        "ÉéΞξß«»—’᾽\u0301\u0308👍🏽한")
    rng = np.random.default_rng(7)
    texts = ["".join(rng.choice(alphabet, size=rng.integers(0, 25))) for _ in range(300)]
    for split_mode, ngrams in (("whitespace", 3), ("character", 2), ("none", None)):
        _assert_matches_layer(texts, _feature("lower_and_strip_punctuation", split_mode, ngrams))
        _assert_matches_layer(texts, _feature("none", split_mode, ngrams))


def test_lowercasing_is_ascii_only():
    assert standardize(pa.array(["ÉΞÀ Ab"]), "lower").to_pylist() == ["ÉΞÀ ab"]
    assert tf.strings.lower("ÉΞÀ Ab").numpy().decode() == "ÉΞÀ ab"


def test_strip_punctuation_removes_exactly_ascii_punctuation():
    every_ascii = "".join(chr(c) for c in range(128))
    expected = "".join(c for c in every_ascii if c not in string.punctuation)
    kept = "«»—’‘“”᾽¡¿·"
    out = standardize(pa.array([every_ascii + kept]), "strip_punctuation").to_pylist()
    assert out == [expected + kept]


def test_whitespace_is_the_six_ascii_spaces():
    texts = ["x" + c + "y" for c in _SPACES + ["\x00"]]
    ours = split(pa.array(texts), "whitespace").to_pylist()
    splitting = {c for c, row in zip(_SPACES + ["\x00"], ours) if len(row) == 2}
    assert splitting == set(" \t\n\x0b\x0c\r")
    assert ours == [[t.decode() for t in row] for row in tf.strings.split(texts).to_list()]


def test_character_split_is_per_code_point():
    # NUL is checked here, not against the layer: get_vocabulary() returns numpy strings,
    # which drop a trailing "\x00".
    texts = ["e\u0301", "👨‍👩‍👧", "🇫🇷", "", "aé한𝄞", "nul\x00byte"]
    ours = split(pa.array(texts), "character").to_pylist()
    assert ours == [list(t) for t in texts]
    reference = tf.strings.unicode_split(texts, "UTF-8").to_list()
    assert ours == [[t.decode() for t in row] for row in reference]


# --------------------------------------------------------------------------- ngrams

@pytest.mark.parametrize("widths", [(1, 2), (2,), (1, 2, 3), (3, 1), (2, 2), (5,), (1, 4, 2)])
def test_add_ngrams_matches_tf_strings_ngrams(widths):
    rng = np.random.default_rng(sum(widths))
    words = ["a", "bb", "ccc", "δ", "👍", ""]
    rows = [list(rng.choice(words, size=rng.integers(0, 7))) for _ in range(200)]
    ours = add_ngrams(pa.array(rows, type=pa.list_(pa.string())), widths).to_pylist()
    reference = tf.strings.ngrams(tf.ragged.constant(rows, dtype=tf.string, ragged_rank=1),
                                  ngram_width=widths, separator=" ").to_list()
    assert ours == [[t.decode() for t in row] for row in reference]


def test_add_ngrams_on_sliced_and_chunked_lists():
    full = pa.array([["x"], ["a", "b", "c"], None, ["d", "e"]])
    assert add_ngrams(full.slice(1), (1, 2)).to_pylist() == [
        ["a", "b", "c", "a b", "b c"], [], ["d", "e", "d e"]]
    chunked = pa.chunked_array([full.slice(0, 2), full.slice(2)])
    assert add_ngrams(chunked, (2,)).to_pylist() == [[], ["a b", "b c"], [], ["d e"]]


@pytest.mark.parametrize("widths", [(), (0,), (1, -1), (True,), (1.5,)])
def test_add_ngrams_rejects_bad_widths(widths):
    with pytest.raises(SpecError, match="widths"):
        add_ngrams(pa.array([["a"]]), widths)


# --------------------------------------------------------------------------- inputs

def test_nulls_give_empty_token_lists():
    texts = pa.array(["A b", None, "", None], type=pa.string())
    assert standardize(texts, "lower").to_pylist() == ["a b", None, "", None]
    assert split(texts, "whitespace").to_pylist() == [["A", "b"], [], [], []]
    assert split(texts, "character").to_pylist() == [["A", " ", "b"], [], [], []]
    assert split(texts, "none").to_pylist() == [["A b"], [], [""], []]
    assert split(texts, None).to_pylist() == [["A b"], [], [""], []]
    tokens, counts = token_counts(texts, TextFeature("t", ngrams=2))
    assert dict(zip(tokens.to_pylist(), counts.to_pylist())) == {"a": 1, "b": 1, "a b": 1}


def test_all_null_and_empty_batches():
    for texts in (pa.array([], type=pa.string()), pa.nulls(3), pa.nulls(2, pa.string()),
                  pa.chunked_array([], type=pa.string())):
        for split_mode in ("whitespace", "character"):
            feature = TextFeature("t", split=split_mode, ngrams=3)
            assert all(row == [] for row in tokenize(texts, feature).to_pylist())
            tokens, counts = token_counts(texts, feature)
            assert len(tokens) == len(counts) == 0 and counts.type == pa.int64()
            tokens, df = document_frequencies(texts, feature)
            assert len(tokens) == len(df) == 0


@pytest.mark.parametrize("make", [
    lambda t: pa.array(t, type=pa.large_string()),
    lambda t: pa.array([s.encode() for s in t], type=pa.binary()),
    lambda t: pa.array([s.encode() for s in t], type=pa.large_binary()),
    lambda t: pa.chunked_array([pa.array(t[:5]), pa.array(t[5:9]), pa.array(t[9:])]),
    lambda t: pa.array(["drop me"] + t + ["and me"]).slice(1, len(t)),
    lambda t: pa.array(t).dictionary_encode(),
    lambda t: t,  # a plain Python list
], ids=["large_string", "binary", "large_binary", "chunked", "sliced", "dictionary", "list"])
@pytest.mark.parametrize("split_mode", ["whitespace", "character", "none"])
def test_input_types_give_the_same_tokens(make, split_mode):
    feature = TextFeature("t", split=split_mode, ngrams=None if split_mode == "none" else 2)
    expected = tokenize(pa.array(NASTY), feature).to_pylist()
    assert tokenize(make(NASTY), feature).to_pylist() == expected


def test_invalid_utf8_binary_is_an_input_error():
    with pytest.raises(InputError, match="UTF-8"):
        tokenize(pa.array([b"ok", b"\xff\xfe"]), TextFeature("t"))


def test_non_text_input_is_an_input_error():
    with pytest.raises(InputError, match="int64"):
        tokenize(pa.array([1, 2]), TextFeature("t"))


@pytest.mark.parametrize(("func", "field"), [(standardize, "standardize"), (split, "split")])
def test_unknown_mode_is_a_spec_error(func, field):
    with pytest.raises(SpecError, match=f"{field}='bogus'"):
        func(pa.array(["a"]), "bogus")


def test_token_counts_of_a_larger_batch_agree_with_a_python_count():
    rng = np.random.default_rng(3)
    words = np.array(["alpha", "Beta", "gamma,", "δέλτα", "e-f", "Ξ"])
    texts = [" ".join(rng.choice(words, size=rng.integers(0, 12))) for _ in range(5000)]
    feature = TextFeature("t", ngrams=2)
    rows = []
    for text in texts:   # plain-Python reference for the default modes
        cleaned = "".join(c for c in text.translate(
            {ord(c): ord(c) + 32 for c in string.ascii_uppercase})
            if c not in string.punctuation)
        words_ = cleaned.split(" ")
        words_ = [w for w in words_ if w]
        rows.append(words_ + [" ".join(p) for p in zip(words_, words_[1:])])
    tokens, counts = token_counts(pa.array(texts), feature)
    assert dict(zip(tokens.to_pylist(), counts.to_pylist())) == \
        dict(collections.Counter(t for row in rows for t in row))
    tokens, df = document_frequencies(pa.array(texts), feature)
    assert dict(zip(tokens.to_pylist(), df.to_pylist())) == \
        dict(collections.Counter(t for row in rows for t in set(row)))


@pytest.mark.parametrize("ngrams", [None, 2, 3])
def test_token_statistics_give_counts_and_document_frequencies_of_a_python_oracle(ngrams):
    # Several words per row repeat, so counts and document frequencies differ.
    rng = np.random.default_rng(11)
    words = np.array(["to", "Be", "or", "not", "to,", "be!", "ΞΑ", "é"])
    texts = [" ".join(rng.choice(words, size=rng.integers(0, 9))) if i % 7 else None
             for i in range(400)]
    counts: collections.Counter = collections.Counter()
    docs: collections.Counter = collections.Counter()
    for text in texts:  # plain-Python reference for the default modes
        if text is None:
            continue
        cleaned = "".join(c for c in text.translate(
            {ord(c): ord(c) + 32 for c in string.ascii_uppercase})
            if c not in string.punctuation)
        w = cleaned.split()
        grams = [" ".join(w[i:i + n]) for n in range(1, (ngrams or 1) + 1)
                 for i in range(len(w) - n + 1)]
        counts.update(grams)
        docs.update(set(grams))
    tokens, got_counts, got_docs = token_statistics(pa.array(texts), TextFeature("t",
                                                                                 ngrams=ngrams))
    got = {t: (c, d) for t, c, d in zip(tokens.to_pylist(), got_counts.tolist(),
                                         got_docs.tolist())}
    assert got == {t: (counts[t], docs[t]) for t in counts}
    assert counts["to"] != docs["to"]
    tokens, only_counts, none = token_statistics(pa.array(texts), TextFeature(
        "t", ngrams=ngrams), documents=False)
    assert none is None
    assert dict(zip(tokens.to_pylist(), only_counts.tolist())) == dict(counts)
