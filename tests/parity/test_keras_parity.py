"""Parity with Keras 3 ``adapt()`` of the real preprocessing layers.

``beam-prep analyze`` runs twice per module (shared by every test): once on a CSV of the
generated tabular data (``datagen.py``), once on a JSONL file with one document per line of
the Greek corpus of the TextVectorization guide (``tests/seed_corpus.py``).

Vocabulary order. Keras sorts the adapted counts with ``np.lexsort((tokens, counts))[::-1]``
(``index_lookup.py``, ``finalize_state``): count descending, ties by the token descending.
For strings the tokens are compared as UTF-8 ``bytes``, which is exactly our (TFT's) order,
so StringLookup and TextVectorization vocabularies must be *identical*, not only equal where
counts differ. IntegerLookup breaks ties by numeric value while we (like TFT) break them by
decimal string, so there only the order across different counts is compared.

Special tokens. ``adapt()`` removes the layer's own OOV token (``"[UNK]"`` for strings,
``-1`` for integers) and mask token from the counts; our string vocabulary keeps a data
value ``"[UNK]"`` (TFT keeps it too, and ``StringLookup(vocabulary=file)`` loads such a file,
mapping ``"[UNK]"`` to its own index). The tests check that this is the only difference.
"""

from __future__ import annotations

import collections
import math
import os
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
from beam_prep.pipelines import analyze  # noqa: E402

from beam_prep import Artifacts  # noqa: E402
from tests.parity import datagen  # noqa: E402
from tests.seed_corpus import GREEK  # noqa: E402

# Text features on the Greek corpus: name -> (spec fields, TextVectorization kwargs).
TEXT_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "t_default": ("", {}),
    "t_bigrams": (", ngrams: 2", {"ngrams": 2}),
    "t_max_tokens": (", max_tokens: 20", {"max_tokens": 20}),  # cut inside a tie group
    "t_tfidf": (", output_mode: tf_idf", {"output_mode": "tf_idf"}),
    "t_tfidf_bigrams": (", ngrams: 2, output_mode: tf_idf",
                        {"ngrams": 2, "output_mode": "tf_idf"}),
    # Outside int mode Keras has no padding slot: max_tokens - 1 tokens, not - 2.
    "t_tfidf_max_tokens": (", max_tokens: 20, output_mode: tf_idf",
                           {"max_tokens": 20, "output_mode": "tf_idf"}),
    "t_multi_hot_max_tokens": (", max_tokens: 20, output_mode: multi_hot",
                               {"max_tokens": 20, "output_mode": "multi_hot"}),
}


def _tabular_spec() -> str:
    lines = ["features:",
             "  - {name: s, kind: string}",
             "  - {name: i, kind: integer}"]
    lines += [f"  - {{name: {c}, kind: numeric}}" for c in datagen.NUMERIC_COLUMNS]
    return "\n".join(lines) + "\n"


def _text_spec() -> str:
    lines = ["features:"]
    lines += [f"  - {{name: {name}, column: text, kind: text{fields}}}"
              for name, (fields, _) in TEXT_CASES.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("keras_parity")
    columns = datagen.generate()
    datagen.write_csv(columns, str(root / "data.csv"))
    datagen.write_jsonl([{"text": doc} for doc in GREEK], str(root / "greek.jsonl"))
    (root / "tabular.yaml").write_text(_tabular_spec(), encoding="utf-8")
    (root / "text.yaml").write_text(_text_spec(), encoding="utf-8")
    analyze.run(["--spec", str(root / "tabular.yaml"), "--input", str(root / "data.csv"),
                 "--output", str(root / "tabular"), "--quiet"])
    analyze.run(["--spec", str(root / "text.yaml"), "--input", str(root / "greek.jsonl"),
                 "--output", str(root / "text"), "--quiet"])
    return {"columns": columns, "tabular": Artifacts(str(root / "tabular")),
            "text": Artifacts(str(root / "text"))}


def _real_tokens(layer: keras.layers.Layer) -> list[Any]:
    return [v.item() if isinstance(v, np.generic) else v
            for v in layer.get_vocabulary(include_special_tokens=False)]


def _assert_same_order_where_counts_differ(ours: list[Any], theirs: list[Any],
                                           counts: dict[Any, int]) -> None:
    """Same token set, and every token ranks by count in both lists."""
    assert len(ours) == len(theirs)
    assert set(ours) == set(theirs)
    position = {t: k for k, t in enumerate(theirs)}
    for k, (a, b) in enumerate(zip(ours, ours[1:])):
        if counts[a] != counts[b]:
            assert counts[a] > counts[b], (k, a, b)
            assert position[a] < position[b], (k, a, b)
    # Both lists are grouped by count in the same way.
    assert [counts[t] for t in ours] == [counts[t] for t in theirs]


# --------------------------------------------------------------------------- lookups

def test_string_lookup_vocabulary_matches_adapt(runs):
    data = runs["columns"]["s"]
    layer = keras.layers.StringLookup()
    layer.adapt(np.asarray(data, dtype=object))
    theirs = _real_tokens(layer)
    ours = runs["tabular"].vocabulary("s")
    counts = collections.Counter(data)
    assert counts["[UNK]"] > 0  # the data holds the layer's OOV token as a value
    assert "[UNK]" in ours and "[UNK]" not in theirs
    ours_without_oov = [t for t in ours if t != layer.oov_token]
    _assert_same_order_where_counts_differ(ours_without_oov, theirs, counts)
    # Keras breaks ties by token bytes descending, as we do: identical lists.
    assert ours_without_oov == theirs


def test_string_lookup_loads_our_file_with_the_same_indices_as_adapt(runs):
    data = runs["columns"]["s"]
    adapted = keras.layers.StringLookup()
    adapted.adapt(np.asarray(data, dtype=object))
    from_file = keras.layers.StringLookup(vocabulary=runs["tabular"].vocabulary_path("s"))
    probe = [t for t in sorted(set(data)) if t != "[UNK]"][::7] + ["never seen"]
    a = keras.ops.convert_to_numpy(adapted(probe)).tolist()
    b = keras.ops.convert_to_numpy(from_file(probe)).tolist()
    # Same index for every token ranked before the data's "[UNK]" (after it, ours is +1).
    unk_index = runs["tabular"].vocabulary("s").index("[UNK]") + 1
    for token, x, y in zip(probe, a, b):
        if x == 0:  # OOV in both
            expected = 0
        else:
            expected = x if x < unk_index else x + 1
        assert y == expected, token
    assert a[-1] == b[-1] == 0


def test_integer_lookup_vocabulary_matches_adapt(runs):
    data = runs["columns"]["i"]
    layer = keras.layers.IntegerLookup()
    layer.adapt(np.asarray(data, dtype=np.int64))
    theirs = _real_tokens(layer)
    ours = [int(t) for t in runs["tabular"].vocabulary("i")]
    assert all(str(t) == s for t, s in zip(ours, runs["tabular"].vocabulary("i")))
    counts = collections.Counter(data)
    assert layer.oov_token not in counts  # -1 is not in the data: no token is dropped
    _assert_same_order_where_counts_differ(ours, theirs, counts)


# --------------------------------------------------------------------------- numbers

@pytest.mark.parametrize("column", datagen.NUMERIC_COLUMNS)
def test_normalization_mean_and_variance_match_adapt(runs, column):
    x = np.asarray(runs["columns"][column], dtype=np.float64)
    layer = keras.layers.Normalization(axis=-1)
    layer.adapt(x.reshape(-1, 1).astype(np.float32))
    mean = float(keras.ops.convert_to_numpy(layer.mean).ravel()[0])
    var = float(keras.ops.convert_to_numpy(layer.variance).ravel()[0])
    stats = runs["tabular"].stats(column)
    # Keras accumulates in float32 (differences up to 3.4e-7 relative measured here).
    assert stats["mean"] == pytest.approx(mean, rel=2e-6)
    assert stats["variance"] == pytest.approx(var, rel=2e-6)
    exact_mean = math.fsum(x) / len(x)
    exact_var = math.fsum((x - exact_mean) ** 2) / len(x)
    assert stats["mean"] == pytest.approx(exact_mean, rel=1e-12)
    assert stats["variance"] == pytest.approx(exact_var, rel=1e-12)


# --------------------------------------------------------------------------- text

def _adapted_text_layer(kwargs: dict[str, Any]) -> keras.layers.TextVectorization:
    layer = keras.layers.TextVectorization(**kwargs)
    layer.adapt(GREEK)
    return layer


def _keras_tokens_per_document(kwargs: dict[str, Any]) -> list[list[str]]:
    """Each document's tokens as the layer sees them (its own standardize/split/ngrams).

    An ``int``-mode layer without ``max_tokens`` maps every token of the corpus to its own
    index; reading the indices back through its vocabulary gives the tokens.
    """
    settings = {k: v for k, v in kwargs.items() if k not in ("max_tokens", "output_mode")}
    layer = keras.layers.TextVectorization(**settings, output_mode="int")
    layer.adapt(GREEK)
    vocab = layer.get_vocabulary()
    rows = keras.ops.convert_to_numpy(layer(GREEK)).tolist()
    assert all(k != 1 for row in rows for k in row)  # no OOV
    return [[vocab[k] for k in row if k > 1] for row in rows]


def _keras_token_counts(kwargs: dict[str, Any]) -> collections.Counter:
    return collections.Counter(t for doc in _keras_tokens_per_document(kwargs) for t in doc)


def _keras_document_frequencies(kwargs: dict[str, Any]) -> collections.Counter:
    return collections.Counter(t for doc in _keras_tokens_per_document(kwargs) for t in set(doc))


@pytest.mark.parametrize("name", list(TEXT_CASES))
def test_text_vectorization_vocabulary_matches_adapt(runs, name):
    kwargs = TEXT_CASES[name][1]
    layer = _adapted_text_layer(kwargs)
    theirs = layer.get_vocabulary(include_special_tokens=False)
    ours = runs["text"].vocabulary(name)
    counts = _keras_token_counts(kwargs)
    _assert_same_order_where_counts_differ(ours, theirs, counts)
    assert ours == theirs
    assert [t for t, _ in runs["text"].counts(name)] == ours
    assert all(counts[t] == c for t, c in runs["text"].counts(name))


def test_greek_corpus_vocabulary_has_expected_shape(runs):
    """Guards the data: non-ASCII punctuation and uppercase stay; bigrams are present."""
    vocab = runs["text"].vocabulary("t_default")
    assert "ξεῖν᾽" in vocab and "οἵ" in vocab and "ῥ᾽" in vocab
    assert not any(c in t for t in vocab for c in ",.:")
    assert "οἵ ῥ᾽" in runs["text"].vocabulary("t_bigrams")
    assert len(runs["text"].vocabulary("t_max_tokens")) == 18
    assert len(runs["text"].vocabulary("t_tfidf_max_tokens")) == 19
    assert len(runs["text"].vocabulary("t_multi_hot_max_tokens")) == 19


@pytest.mark.parametrize("name", ["t_tfidf", "t_tfidf_bigrams", "t_tfidf_max_tokens"])
def test_tf_idf_weights_match_adapt(runs, name):
    kwargs = TEXT_CASES[name][1]
    layer = _adapted_text_layer(kwargs)
    vocab = layer.get_vocabulary()
    weights = keras.ops.convert_to_numpy(layer._lookup_layer.idf_weights).astype(np.float64)
    assert len(weights) == len(vocab)
    # In tf_idf mode there is no padding slot: index 0 is the OOV token, tokens start at 1.
    assert vocab[0] == "[UNK]"
    assert layer.get_vocabulary(include_special_tokens=False) == vocab[1:]
    art = runs["text"]
    ours = art.idf_weights(name)
    assert art.vocabulary(name) == vocab[1:]
    assert art.document_count(name) == len(GREEK)
    # The layer stores float32 weights; the OOV slot holds the mean of the others.
    np.testing.assert_allclose(ours, weights[1:], rtol=1e-6)
    np.testing.assert_allclose(weights[0], ours.mean(), rtol=1e-6)
    # Independent check of the formula ln(1 + N / (1 + df)) from Keras's own tokens.
    token_docs = _keras_document_frequencies(kwargs)
    expected = [math.log1p(len(GREEK) / (1 + token_docs[t])) for t in vocab[1:]]
    np.testing.assert_allclose(ours, expected, rtol=1e-12)

