"""Per-list and per-document statistics of the written lists (numpy, no Beam), for stats.json.

Every function returns small ``{str: int}`` counters that :class:`~beam_prep.ranking.data.
lists.CountsCombineFn` sums over shards; their size never grows with the number of lists or
documents, only with the number of distinct keys, which is bounded:

==================================  ========================================================
stats.json field                    key → value
==================================  ========================================================
``relevant_per_list_histogram``     relevant documents in a list (``label > 0``, the rule of
                                    ``--drop_no_positive``) → lists. Keys ``"0"`` …
                                    ``"255"``, then one ``"256+"`` bucket (:data:`RELEVANT_CAP`).
                                    ``"0"`` is the number of lists with no relevant label.
``max_label_per_list_histogram``    largest label of a list (keyed like
                                    ``label_histogram``: ``"2"``, ``"0.5"``) → lists.
``example_features_present``        example feature → written documents that carry it in
                                    the input (LETOR: the id is on the line, before the dense
                                    fill with ``--missing_value``; tabular: the cell is not
                                    null / absent).
``context_features_present``        context column → written lists whose context value is not
                                    null (tabular input only).
==================================  ========================================================

Example:
    >>> labels = np.array([0.0, 2.0, 1.0, 0.0, 0.0])
    >>> per_list_stats(labels, np.array([3, 2]))["relevant_per_list_histogram"]
    {'0': 1, '2': 1}
    >>> per_list_stats(labels, np.array([3, 2]))["max_label_per_list_histogram"]
    {'0': 1, '2': 1}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from beam_prep.ranking.data.lists import csr_rows

#: Lists with this many relevant documents or more share the bucket ``"256+"``.
RELEVANT_CAP = 256
OVERFLOW_SUFFIX = "+"
#: The stats.json fields of this module (additive: stats.json files before them lack them).
LIST_STATS_FIELDS: tuple[str, ...] = (
    "relevant_per_list_histogram", "max_label_per_list_histogram",
    "example_features_present", "context_features_present")


def label_key(x: float) -> str:
    """The stats.json key of a label: ``"2"`` for integral values, else ``repr``.

    Example:
        >>> label_key(2.0), label_key(0.25)
        ('2', '0.25')
    """
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def per_list_stats(labels: np.ndarray, sizes: np.ndarray) -> dict[str, dict[str, int]]:
    """Relevant documents and largest label of every list, as two histograms.

    Args:
        labels: float64 labels of the written documents, list after list.
        sizes: length of each list (every list has at least one document);
            ``sizes.sum() == len(labels)``.

    Returns:
        ``{"relevant_per_list_histogram": ..., "max_label_per_list_histogram": ...}`` (see the
        module docstring); both empty when there is no list.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) == 0:
        return {"relevant_per_list_histogram": {}, "max_label_per_list_histogram": {}}
    starts = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    relevant = np.add.reduceat((labels > 0).astype(np.int64), starts)
    buckets = np.bincount(np.minimum(relevant, RELEVANT_CAP), minlength=RELEVANT_CAP + 1)
    rel_hist = {str(k): int(c) for k, c in enumerate(buckets[:RELEVANT_CAP].tolist()) if c}
    if buckets[RELEVANT_CAP]:
        rel_hist[f"{RELEVANT_CAP}{OVERFLOW_SUFFIX}"] = int(buckets[RELEVANT_CAP])
    values, counts = np.unique(np.maximum.reduceat(labels, starts), return_counts=True)
    max_hist: dict[str, int] = {}
    for v, c in zip(values.tolist(), counts.tolist()):
        key = label_key(v)
        max_hist[key] = max_hist.get(key, 0) + c
    return {"relevant_per_list_histogram": rel_hist, "max_label_per_list_histogram": max_hist}


def sparse_presence(indptr: np.ndarray, ids: np.ndarray, rows: np.ndarray,
                    column_of: Callable[[np.ndarray], np.ndarray], names: Sequence[str], *,
                    batch_documents: int = 8192) -> dict[str, int]:
    """Documents ``rows`` of a CSR block carrying each feature (one bincount per batch).

    Args:
        indptr, ids: the block's CSR structure (ids unique within a document).
        rows: the written documents' rows in the block.
        column_of: feature id → position in ``names``.
        names: the example feature names, in column order.
        batch_documents: documents per batch (bounds the temporary index arrays).

    Returns:
        ``{name: documents}`` for every name (0 when never present).

    Example:
        >>> sparse_presence(np.array([0, 2, 3]), np.array([1, 2, 2]), np.array([0, 1]),
        ...                 lambda i: i - 1, ["f1", "f2"])
        {'f1': 1, 'f2': 2}
    """
    counts = np.zeros(len(names), np.int64)
    for s in range(0, len(rows), batch_documents):
        idx, _ = csr_rows(indptr, np.asarray(rows[s:s + batch_documents], np.int64))
        if len(idx):
            counts += np.bincount(column_of(ids[idx]), minlength=len(names))
    return dict(zip(names, counts.tolist()))


def column_presence(columns: Mapping[str, Sequence[Any]], rows: Sequence[int]
                    ) -> dict[str, int]:
    """For each column, how many of ``rows`` hold a value (not ``None``).

    Example:
        >>> column_presence({"a": [1, None, 3], "b": [None, None, "x"]}, [0, 1])
        {'a': 1, 'b': 0}
    """
    return {name: sum(values[r] is not None for r in rows) for name, values in columns.items()}
