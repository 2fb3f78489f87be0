"""Terms per document of text features (manifest ``terms_per_document_log2``), against a
plain-Python oracle: ASCII lower-case, strip punctuation, whitespace split, n-grams, and
``int.bit_length`` for the log2 bucket."""

from __future__ import annotations

import collections
import json
import random
import string

import numpy as np
import pyarrow as pa
import pytest
from beam_prep.pipelines import analyze

from beam_prep.analyzers.manifest import terms_histogram_field
from beam_prep.analyzers.text_counts import (
    TERMS_BUCKETS,
    log2_histogram,
    text_statistics,
    token_statistics,
)
from beam_prep.spec import TextFeature


def _terms(doc: str, ngrams: int) -> int:
    words = "".join(c for c in doc.lower() if c not in string.punctuation).split()
    return sum(max(len(words) - w + 1, 0) for w in range(1, ngrams + 1))


def _oracle(docs: list[str | None], ngrams: int) -> list[int]:
    buckets = collections.Counter(min(_terms(d, ngrams).bit_length(), TERMS_BUCKETS - 1)
                                  for d in docs if d is not None)
    top = max(buckets, default=-1)
    return [buckets.get(b, 0) for b in range(top + 1)]


def test_log2_histogram_matches_bit_length():
    values = [0, 1, 2, 3, 4, 5, 7, 8, 1023, 1024, 2**31 - 1, 2**31, 2**40, 2**53]
    rng = random.Random(1)
    values += [rng.randrange(0, 1 << rng.randrange(1, 40)) for _ in range(2000)]
    got = log2_histogram(np.array(values, np.int64))
    expected = collections.Counter(min(v.bit_length(), TERMS_BUCKETS - 1) for v in values)
    assert got.tolist() == [expected.get(b, 0) for b in range(TERMS_BUCKETS)]
    assert log2_histogram(np.zeros(0, np.int64)).tolist() == [0] * TERMS_BUCKETS


@pytest.mark.parametrize("ngrams", [1, 2, 3])
def test_text_statistics_histogram_and_counts(ngrams):
    rng = random.Random(ngrams)
    words = ["Sky", "sea,", "the", "A-b", "!", "x"]
    docs = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 20))) for _ in range(300)]
    f = TextFeature("t", ngrams=ngrams)
    st = text_statistics(pa.array(docs), f)
    oracle = _oracle(docs, ngrams)
    assert st.terms_histogram.tolist() == oracle + [0] * (TERMS_BUCKETS - len(oracle))
    tokens, counts, dfs = token_statistics(pa.array(docs), f)
    assert st.tokens.to_pylist() == tokens.to_pylist()
    assert st.counts.tolist() == counts.tolist() and st.document_counts.tolist() == dfs.tolist()
    # shards of the batch add up to the whole (fixed buckets)
    parts = [text_statistics(pa.array(docs[i:i + 70]), f).terms_histogram
             for i in range(0, len(docs), 70)]
    assert sum(parts).tolist() == st.terms_histogram.tolist()


def test_manifest_field_is_trimmed_and_left_out_when_incomplete():
    assert terms_histogram_field([0, 3, 0, 0], 3) == [0, 3]
    assert terms_histogram_field([0] * TERMS_BUCKETS, 0) == []
    assert terms_histogram_field(None, 5) is None
    assert terms_histogram_field([1, 1], 3) is None  # e.g. older cache entries: not complete


def test_analysis_manifest_records_terms_per_document(tmp_path):
    rng = random.Random(4)
    words = ["Blue", "hat.", "red", "shoes", "big", "x-y"]
    docs: list[str | None] = [
        None if i % 13 == 0 else " ".join(rng.choice(words) for _ in range(rng.choice(
            [0, 1, 2, 3, 5, 9, 17, 40]))) for i in range(400)]
    (tmp_path / "d.jsonl").write_text("".join(
        json.dumps({"title": d, "price": float(i)}) + "\n" for i, d in enumerate(docs)))
    spec = tmp_path / "spec.yaml"
    spec.write_text("version: 1\nfeatures:\n"
                    "  - {name: title, kind: text, ngrams: 2}\n"
                    "  - {name: plain, kind: text, column: title}\n"
                    "  - {name: price, kind: numeric}\n")
    out = tmp_path / "out"
    analyze.run(["--spec", str(spec), "--input", str(tmp_path / "d.jsonl"), "--output",
                 str(out), "--batch_size", "64", "--no_report", "--quiet"])
    manifest = json.loads((out / "manifest.json").read_text())
    stats = manifest["features"]
    assert stats["title"]["stats"]["terms_per_document_log2"] == _oracle(docs, 2)
    assert stats["plain"]["stats"]["terms_per_document_log2"] == _oracle(docs, 1)
    assert sum(_oracle(docs, 1)) == stats["plain"]["stats"]["document_count"]
    assert "terms_per_document_log2" not in stats["price"]["stats"]
