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
    grams = text.grams(texts, feature)
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
