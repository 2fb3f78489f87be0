"""One rule for a scalar feature whose column holds lists, shared by ``analyze`` and
``transform``: a row with no value is missing, a row with one value is that value, a row
with several is rejected (:data:`REASON_MULTIPLE_VALUES`), as the generated layers take one
value per row (docs/transform.md, README "Scalar features over list columns").
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.io.inputs.formats import RejectedRow

__all__ = ["REASON_MULTIPLE_VALUES", "flatten_scalar_columns", "scalar_rows"]


#: The reject reason of a row whose scalar feature's column holds several values.
REASON_MULTIPLE_VALUES = "multiple_values"


def _is_list_type(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def flatten_scalar_columns(batch: pa.RecordBatch, lists: frozenset[str]
                           ) -> tuple[pa.RecordBatch, list[tuple[str, np.ndarray]]]:
    """``batch`` with every list-typed column outside ``lists`` made flat, and the rows that
    cannot be: ``[(column, rows with more than one value)]``.

    A scalar feature's column arrives as a list when its file stores lists (a Parquet list
    column; a tf.Example batch where some record holds several values). A row with no value
    is missing (null), a row with one value is that value; a row with more has no value the
    generated layers (input ``(batch, 1)``) could take and must be rejected by the caller
    (:func:`scalar_rows`).

    Example:
        >>> b = pa.record_batch({"a": pa.array([["x"], [], ["y", "z"]])})
        >>> flat, bad = flatten_scalar_columns(b, frozenset())
        >>> flat.column(0).to_pylist(), [(c, m.tolist()) for c, m in bad]
        (['x', None, 'y'], [('a', [False, False, True])])
    """
    arrays, bad = [], []
    for name, arr in zip(batch.schema.names, batch.columns):
        if name in lists or not _is_list_type(arr.type):
            arrays.append(arr)
            continue
        lengths = np.asarray(pc.fill_null(pc.list_value_length(arr), 0)
                             .to_numpy(zero_copy_only=False), np.int64)
        if (lengths > 1).any():
            bad.append((name, lengths > 1))
        # Each row's first value (if any) at its row: nulls where the row has none.
        starts = np.cumsum(lengths) - lengths
        take = pa.array(np.where(lengths > 0, starts, 0), mask=lengths == 0)
        arrays.append(pc.list_flatten(arr).take(take))
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names), bad


def scalar_rows(batch: pa.RecordBatch, lists: frozenset[str], source: str
                ) -> tuple[pa.RecordBatch, list[RejectedRow]]:
    """The one rule of ``analyze`` and ``transform`` for a scalar feature whose column holds
    lists: ``batch`` with such columns flat (no value: missing; one value: that value), and
    the rows holding several values rejected (reason :data:`REASON_MULTIPLE_VALUES`, naming
    the column and the fix), as the generated layers take one value per row.

    Args:
        batch: A batch as read (list features' columns, ``lists``, stay lists).
        lists: The columns read as lists (list features).
        source: The file, for the rejected rows.
    """
    flat, multi = flatten_scalar_columns(batch, lists)
    if not multi:
        return flat, []
    bad = np.zeros(batch.num_rows, bool)
    column = np.full(batch.num_rows, "", object)
    for name, rows in reversed(multi):  # the first column named wins
        bad |= rows
        column[rows] = name
    idx = np.nonzero(bad)[0]
    rows = batch.take(pa.array(idx)).to_pylist()
    out = [RejectedRow(source, None, REASON_MULTIPLE_VALUES,
                       f"column {column[i]!r} holds {len(r[column[i]])} values in this row but "
                       "a scalar feature reads it (one value per row, as the generated layers "
                       "take it). Fix: declare the feature `shape: list` in the spec, or write "
                       "one value per row", json.dumps(r, default=str)[:2000])
           for i, r in zip(idx, rows)]
    return flat.filter(pa.array(~bad)), out
