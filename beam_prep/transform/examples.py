"""Columnar ``tf.train.Example`` serialization: whole batches of encoded outputs to bytes.

Every row becomes one Example whose features are the encoded outputs in plan order (a
fixed order, so the bytes are deterministic): integer outputs as ``int64_list``, float
outputs as ``float_list``, packed (as proto3 writes repeated numbers). A fixed-width output
of width ``w`` holds ``w`` values per row; a ragged one the row's values
(``tf.io.parse_example`` reads it with ``tf.io.RaggedFeature`` or ``VarLenFeature``). The
messages are written by one C call per batch (``_hashes.serialize``): no per-row Python.

Example:
    >>> data, offsets = serialize_examples(
    ...     [("a", Encoded("int64", np.array([[1], [300]])))], 2)
    >>> offsets.tolist()
    [0, 14, 29]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from beam_prep.transform import hashing
from beam_prep.transform.layers import Encoded


def _columns(encoded: Encoded, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(flat values, row splits)`` of one output."""
    dtype = np.float32 if encoded.dtype == "float32" else np.int64
    values = np.ascontiguousarray(encoded.values, dtype=dtype).reshape(-1)
    if encoded.row_splits is not None:
        return values, np.ascontiguousarray(encoded.row_splits, np.int64)
    width = encoded.values.shape[1] if encoded.values.ndim == 2 else 1
    return values, np.arange(n + 1, dtype=np.int64) * width


def serialize_examples(outputs: Sequence[tuple[str, Encoded]], n: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Serialized Examples of ``n`` rows: ``(bytes as uint8, n + 1 int64 offsets)``.

    Args:
        outputs: ``(feature key, encoded output)`` in the order to write.
        n: Rows.
    """
    hashing.require()
    specs = []
    for key, encoded in outputs:
        values, splits = _columns(encoded, n)
        specs.append((key.encode("utf-8"), values, splits, encoded.dtype == "float32"))
    data, offsets = hashing.native().serialize(n, specs)
    return np.frombuffer(data, np.uint8), np.frombuffer(offsets, np.int64)
