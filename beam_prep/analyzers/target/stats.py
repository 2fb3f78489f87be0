"""Per (token, fold) row counts and exact label sums of a target-encoded feature.

A feature with ``target_encoding`` (beam_prep.spec.target_fields) gets, besides its
vocabulary, the statistics of a numeric label per category and fold. A row's fold is a
stable 64-bit hash of its ``fold_column`` value's text (integers: decimal strings; a
missing value hashes as the empty text) modulo ``folds``
(:func:`~beam_prep.analyzers.vocab.partition.token_hashes`, the same in every process),
so it does not depend on sharding. A row counts when its label is present and finite.

Label sums are exact integers in units of ``2**-SUM_SHIFT``
(:mod:`~beam_prep.analyzers.exact_sums`), so merging per-split tables in any order gives
the same sums: the file and the encodings are byte-identical whatever the batch size or
sharding. A table maps ``(token, fold)`` to ``[rows, exact label sum]``; ``token`` None
holds the per-fold totals of every counted row (the global mean's rows). Counting is numpy
over a batch (one group per distinct (token, fold)); integer labels below ``2**31`` (0/1
clicks) are summed in one ``bincount``.

Example:
    >>> import pyarrow as pa
    >>> t = count_batch(pa.array(["a", "b", "a"]), pa.array([1.0, 0.0, 3.0]),
    ...                 np.array([0, 0, 1]))
    >>> {k: (c, s >> SUM_SHIFT) for k, (c, s) in sorted(t.items(), key=str)}
    {('a', 0): (1, 1), ('a', 1): (1, 3), ('b', 0): (1, 0), (None, 0): (2, 1), (None, 1): (1, 3)}
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.exact_sums import SUM_SHIFT, exact_sums
from beam_prep.analyzers.vocab.partition import token_hashes

__all__ = ["SUM_SHIFT", "TargetStatsCombineFn", "add_batch", "add_into", "columns_of",
           "count_batch", "folds_of", "merge_tables"]

Table = dict  # (token | None, fold) -> [rows, exact label sum]
_INT_LIMIT = float(1 << 31)


def folds_of(values: pa.Array, folds: int) -> np.ndarray:
    """The fold of each row: stable hash of the fold column's text modulo ``folds``.

    Example:
        >>> a = folds_of(pa.array([7, 8, 7]), 3)
        >>> bool(a[0] == a[2]) and bool((folds_of(pa.array(["7"]), 3) == a[0]).all())
        True
    """
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    text = pc.fill_null(values.cast(pa.large_string()), "")
    return (token_hashes(text) % np.uint64(folds)).astype(np.int64)


def _group_sums(keys: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """(distinct keys, rows per key, exact label sum per key)."""
    distinct, inverse, rows = np.unique(keys, return_inverse=True, return_counts=True)
    if labels.size and np.all(labels == np.round(labels)) and np.all(
            np.abs(labels) < _INT_LIMIT) and labels.size < (1 << 22):
        sums = np.bincount(inverse, weights=labels, minlength=len(distinct))  # exact < 2**53
        return distinct, rows, [int(s) << SUM_SHIFT for s in sums]
    sums = _sliced_group_sums(inverse, labels, len(distinct), int(rows.max(initial=1)))
    if sums is None:  # magnitudes near the float64 limit: one exact sum per group
        order = np.argsort(inverse, kind="stable")
        bounds = np.cumsum(rows)[:-1]
        sums = [exact_sums(part)[0] for part in np.split(labels[order], bounds)]
    return distinct, rows, sums


def _sliced_group_sums(inverse: np.ndarray, x: np.ndarray, groups: int,
                       max_rows: int) -> list | None:
    """Exact per-group sums in units of ``2**-SUM_SHIFT``, vectorised: each value is cut into
    slices on a grid common to the batch (``(r + σ) - σ``, as in
    :mod:`~beam_prep.analyzers.exact_sums`), narrow enough that a group's float64 sum of one
    slice is exact; None when the magnitudes are too close to the float64 limit."""
    top = math.frexp(float(np.max(np.abs(x), initial=0.0)))[1]
    if top > 960:
        return None
    bits = 52 - max_rows.bit_length() - 1  # max_rows * 2**(bits + 1) < 2**53
    totals = np.zeros(groups, dtype=object)
    r, e = x.copy(), top
    while e > -SUM_SHIFT and np.any(r):
        e = max(e - bits, -SUM_SHIFT)
        sigma = math.ldexp(1.5, e + 52)
        q = (r + sigma) - sigma  # r rounded to a multiple of 2**e, exactly
        r = r - q
        part = np.ldexp(np.bincount(inverse, weights=q, minlength=groups), -e)
        totals += part.astype(np.int64).astype(object) * (1 << (e + SUM_SHIFT))
    return totals.tolist()


def count_batch(values: pa.Array, labels: pa.Array, folds: np.ndarray) -> Table:
    """The table of one batch (scalar feature values, defaults filled; nulls hold no token).

    Args:
        values: The feature's values (string or integer).
        labels: The label column (read as float64).
        folds: Each row's fold (:func:`folds_of`).
    """
    y = np.asarray(pc.fill_null(labels.cast(pa.float64()), np.nan).to_numpy(
        zero_copy_only=False), dtype=np.float64)
    counted = np.isfinite(y)
    table: Table = {}
    distinct, rows, sums = _group_sums(folds[counted], y[counted])
    for fold, n, s in zip(distinct.tolist(), rows.tolist(), sums):
        table[(None, fold)] = [n, s]
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    encoded = pc.dictionary_encode(values.cast(pa.large_string()))
    codes = np.asarray(pc.fill_null(encoded.indices.cast(pa.int64()), -1).to_numpy(
        zero_copy_only=False), dtype=np.int64)
    keep = counted & (codes >= 0)
    if not keep.any():
        return table
    tokens = encoded.dictionary.to_pylist()
    width = int(folds.max(initial=0)) + 1
    key = codes[keep] * np.int64(width) + folds[keep]
    distinct, rows, sums = _group_sums(key, y[keep])
    for k, n, s in zip(distinct.tolist(), rows.tolist(), sums):
        cell = table.setdefault((tokens[k // width], k % width), [0, 0])
        cell[0] += n
        cell[1] += s
    return table


def add_into(out: Table, table: Table) -> Table:
    """Adds ``table`` into ``out`` (in place) and returns ``out``."""
    for key, (n, s) in table.items():
        cell = out.get(key)
        if cell is None:
            out[key] = [n, s]
        else:
            cell[0] += n
            cell[1] += s
    return out


def columns_of(feature: Any) -> list[str]:
    """The label and fold columns a feature's target encoding reads (none without one)."""
    te = getattr(feature, "target_encoding", None)
    return [] if te is None else [te.labels, te.fold_column]


def add_batch(table: Table, values: pa.Array, batch: pa.RecordBatch, te: Any) -> None:
    """Adds one batch of a feature's values (defaults filled) to its table, in place."""
    add_into(table, count_batch(values, batch.column(te.labels),
                                folds_of(batch.column(te.fold_column), te.folds)))


def merge_tables(tables: Iterable[Table]) -> Table:
    """Sums tables into a new one (exact: any order gives the same result)."""
    out: Table = {}
    for table in tables:
        add_into(out, table)
    return out


class TargetStatsCombineFn(beam.CombineFn):
    """Sums one feature's per-split tables (``CombinePerKey``, key = feature name)."""

    def create_accumulator(self) -> Table:
        return {}

    def add_input(self, acc: Table, table: Table) -> Table:
        return add_into(acc, table)

    def merge_accumulators(self, accs: Iterable[Table]) -> Table:
        return merge_tables(accs)

    def extract_output(self, acc: Table) -> Table:
        return acc
