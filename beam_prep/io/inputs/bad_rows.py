"""Rejected-row records for the rows a typed conversion refused.

:func:`beam_prep.io.inputs.readers.read_split` converts whole columns at once
(:mod:`beam_prep.io.inputs.columns`) and gets a boolean "bad" mask per column. Only the bad rows
are then touched in Python, here, to say which column refused which value.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> from beam_prep.io.inputs.formats import RawBatch
    >>> raw = RawBatch(pa.record_batch({"x": ["1", "a"]}), 1, pa.array([1, 2]), [])
    >>> [r] = describe_bad_rows("f.csv", raw, [("x", np.array([False, True]),
    ...                                             "unparsable_number")])
    >>> r.row, r.reason, r.detail
    (2, 'unparsable_number', "column 'x': cannot read a as the feature's type")
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from beam_prep.io.inputs.formats import RawBatch, RejectedRow

#: Characters of a rejected row's record kept for inspection.
RECORD_LIMIT = 2000


def describe_bad_rows(source: str, raw: RawBatch,
                      reasons: list[tuple[str, np.ndarray, str]]) -> list[RejectedRow]:
    """One RejectedRow per row marked bad in any of ``reasons``, in batch order.

    Args:
        source: File path named in the records.
        raw: The batch as read (before conversion), with its row numbers.
        reasons: ``(column, bad-row mask, reason)``; a row takes the first that marks it.

    Returns:
        The rejected rows, each with the column, its value and the whole row's text.
    """
    bad_any = np.zeros(raw.batch.num_rows, dtype=bool)
    for _, bad, _ in reasons:
        bad_any |= bad
    idx = np.nonzero(bad_any)[0]
    sub = raw.batch.take(pa.array(idx))
    numbers = (raw.row_numbers.take(pa.array(idx)).to_pylist()
               if raw.row_numbers is not None else [None] * len(idx))
    rows = sub.to_pylist()
    out = []
    for j, i in enumerate(idx):
        row_reason, detail = "", ""
        for name, bad, reason in reasons:
            if bad[i]:
                row_reason = reason
                detail = (f"column {name!r}: cannot read {show(rows[j][name])} as the "
                          "feature's type")
                break
        record = json.dumps({k: show(v) for k, v in rows[j].items()}, ensure_ascii=False,
                            default=str)
        out.append(RejectedRow(source, numbers[j], row_reason, detail,
                               record[:RECORD_LIMIT]))
    return out


def show(value: object) -> object:
    """``value`` made JSON-friendly: bytes as text (undecodable bytes escaped), recursively.

    Example:
        >>> show([b"a\\xff", {b"k": 1}])
        ['a\\\\xff', {'k': 1}]
    """
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    if isinstance(value, list):
        return [show(v) for v in value]
    if isinstance(value, dict):
        return {str(show(k)): show(v) for k, v in value.items()}
    return value
