"""Token and document counts of a text feature over a batch (vectorised; no per-row Python).

The tokenising itself (standardize, split, n-grams exactly as ``TextVectorization``) is
:mod:`beam_prep.analyzers.text`; this module counts what it produces.

Example:
    >>> import pyarrow as pa
    >>> from beam_prep.spec import TextFeature
    >>> toks, counts = token_counts(pa.array(["a b a"]), TextFeature("t"))
    >>> sorted(zip(toks.to_pylist(), counts.to_pylist()))
    [('a', 2), ('b', 1)]
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers import text
from beam_prep.spec import TextFeature


def token_counts(texts: pa.Array, feature: TextFeature) -> tuple[pa.Array, pa.Array]:
    """Distinct tokens of a batch and how many times each occurs in it.

    Args:
        texts: String/binary array (chunked or not).
        feature: The text feature.

    Returns:
        ``(tokens, counts)``: distinct tokens (order unspecified) and int64 counts.

    Example:
        >>> toks, counts = token_counts(pa.array(["a b a", None]), TextFeature("t"))
        >>> dict(zip(toks.to_pylist(), counts.to_pylist()))
        {'a': 2, 'b': 1}
    """
    tokens, counts, _ = token_statistics(texts, feature, documents=False)
    return tokens, pa.array(counts, type=pa.int64())


#: Buckets of the terms-per-document histogram (:func:`log2_histogram`).
TERMS_BUCKETS = 33


def terms_per_document(grams: text.Grams) -> np.ndarray:
    """Terms (tokens and n-grams, as counted in ``total_count``) of every row, int64.

    A row of ``n`` split tokens has ``max(n - w + 1, 0)`` n-grams of each width ``w``.

    Example:
        >>> terms_per_document(text.grams(pa.array(["a b c", "", "d"]),
        ...                               TextFeature("t", ngrams=2))).tolist()
        [5, 0, 1]
    """
    lengths = np.diff(grams.offsets)
    out = np.zeros(len(lengths), np.int64)
    for w in grams.widths:
        out += np.maximum(lengths - (w - 1), 0)
    return out


def log2_histogram(values: np.ndarray) -> np.ndarray:
    """Counts of non-negative integers in fixed log2 buckets, int64 of length ``TERMS_BUCKETS``.

    Bucket 0 holds 0; bucket ``b`` (1..31) holds ``[2**(b-1), 2**b)``; bucket 32 holds
    everything from ``2**31``. Fixed buckets make histograms of shards add up exactly.

    Example:
        >>> log2_histogram(np.array([0, 1, 2, 3, 4, 7, 8]))[:5].tolist()
        [1, 1, 2, 2, 1]
    """
    _, exponent = np.frexp(np.asarray(values, dtype=np.float64))  # v = m * 2**e, m in [0.5, 1)
    return np.bincount(np.minimum(exponent, TERMS_BUCKETS - 1),
                       minlength=TERMS_BUCKETS).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class TextStatistics:
    """What the analysis keeps of one batch of a text feature.

    Attributes:
        tokens: Distinct terms of the batch (order unspecified).
        counts: int64 occurrences of each term.
        document_counts: int64 rows containing each term (None when not asked for).
        terms_histogram: :func:`log2_histogram` of the terms per row (``TERMS_BUCKETS``).
    """

    tokens: pa.Array
    counts: np.ndarray
    document_counts: np.ndarray | None
    terms_histogram: np.ndarray


def text_statistics(texts: pa.Array, feature: TextFeature, *,
                    documents: bool = True) -> TextStatistics:
    """:func:`token_statistics` plus the histogram of terms per row, from one tokenisation.

    Example:
        >>> st = text_statistics(pa.array(["a b a", "", "c"]), TextFeature("t"))
        >>> st.terms_histogram[:3].tolist()  # 0 terms, 1 term, 2-3 terms
        [1, 1, 1]
    """
    grams = text.grams(texts, feature)
    hist = log2_histogram(terms_per_document(grams))
    return TextStatistics(*_count(grams, documents), terms_histogram=hist)


def token_statistics(texts: pa.Array, feature: TextFeature, *,
                     documents: bool = True) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
    """Distinct tokens of a batch, their counts and (optionally) their document counts.

    One hash pass (``dictionary_encode``) serves both numbers: counts are a ``bincount``
    of the token ids, document counts a ``bincount`` over the distinct (row, id) pairs.
    The n-grams are counted block by block, never put in row order (no copy of them).

    Args:
        texts: String/binary array (chunked or not), one document per row.
        feature: The text feature.
        documents: Also count the rows containing each token (None when False).

    Returns:
        ``(tokens, counts, document_counts)``: distinct tokens (order unspecified) and int64
        numpy arrays.

    Example:
        >>> toks, counts, df = token_statistics(pa.array(["a b a", "a"]), TextFeature("t"))
        >>> sorted(zip(toks.to_pylist(), counts.tolist(), df.tolist()))
        [('a', 3, 2), ('b', 1, 1)]
    """
    return _count(text.grams(texts, feature), documents)


def _count(grams: text.Grams, documents: bool
           ) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
    values = grams.values()
    if len(values) == 0:
        empty = np.zeros(0, np.int64)
        return pa.array([], type=values.type), empty, (empty if documents else None)
    encoded = pc.dictionary_encode(values)
    del values
    dictionary = encoded.dictionary
    n = len(dictionary)
    ids = encoded.indices.to_numpy().astype(np.int64)
    del encoded
    counts = np.bincount(ids, minlength=n).astype(np.int64)
    if not documents:
        return dictionary, counts, None
    # Distinct (row, token) pairs: sort the combined keys in place and keep the first of
    # each run (np.sort + a diff is much faster here than np.unique).
    keys = grams.rows()
    keys *= n
    keys += ids
    del ids
    keys.sort()
    first = np.empty(len(keys), dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    distinct = keys[first]
    del keys, first
    distinct %= n
    return dictionary, counts, np.bincount(distinct, minlength=n).astype(np.int64)


def document_frequencies(texts: pa.Array, feature: TextFeature) -> tuple[pa.Array, pa.Array]:
    """Distinct tokens of a batch and the number of rows (documents) containing each.

    Args:
        texts: String/binary array (chunked or not).
        feature: The text feature.

    Returns:
        ``(tokens, document_counts)``: distinct tokens (order unspecified) and int64 counts.

    Example:
        >>> toks, df = document_frequencies(pa.array(["a b a", "a"]), TextFeature("t"))
        >>> dict(zip(toks.to_pylist(), df.to_pylist()))
        {'a': 2, 'b': 1}
    """
    tokens, _, document_counts = token_statistics(texts, feature)
    return tokens, pa.array(document_counts, type=pa.int64())
