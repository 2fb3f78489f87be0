"""``PerKeyBucketize`` of the transform job: per-key buckets in numpy/Arrow.

The key's row is found with ``pc.index_in`` in the bucket file's keys (unknown or missing:
row 0, the global boundaries); the bucket is the number of the row's real boundaries ``b``
with ``not x < b``, both sides float32, as the Keras layer
(:mod:`beam_prep.codegen.per_key_bucket_layer`) computes it. TensorFlow's CPU kernels flush
float32 subnormals to zero (inputs and results), so :func:`flush32` does the same to the
values and the boundaries.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> enc = PerKeyBuckets({"bucket_keys": ["a"], "boundaries": [[5.0], [1.0]],
    ...                      "lengths": [1, 1]})
    >>> enc((np.array([2.0, 2.0], np.float32), pa.array(["a", "?"]))).tolist()
    [1, 0]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from beam_prep.transform.key_index import KeyIndex

_TINY = np.float32(np.finfo(np.float32).tiny)


def to_float32(x: Any) -> np.ndarray:
    """``x`` rounded to float32 as TensorFlow's cast rounds it: a value beyond float32's
    range (a boundary stored as ±1.7976931348623157e308 for a column of many infinite
    values, a raw value of 1e300) becomes ±inf, silently (numpy's cast would print a
    RuntimeWarning with a source path).

    Example:
        >>> to_float32([1.7976931348623157e308, -1e300, 0.5]).tolist()
        [inf, -inf, 0.5]
    """
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float64).astype(np.float32)


def flush32(x: Any) -> np.ndarray:
    """float32 ``x`` with subnormals flushed to a zero of their sign (as TensorFlow's CPU
    kernels read and write float32).

    Example:
        >>> flush32(np.array([1e-40, -1e-40, 1.0], np.float32)).tolist()
        [0.0, -0.0, 1.0]
    """
    x = x if isinstance(x, np.ndarray) and x.dtype == np.float32 else to_float32(x)
    return np.where(np.abs(x) < _TINY, np.copysign(np.float32(0), x), x).astype(np.float32)


class PerKeyBuckets:
    """``PerKeyBucketize`` on ``(float32 values, string keys)`` (int64 buckets).

    Args:
        state: ``bucket_keys``, ``boundaries`` (padded rows, row 0 global) and ``lengths``
            (:func:`~beam_prep.codegen.per_key_bucket_plan.bucket_state`).
    """

    def __init__(self, state: dict[str, list]) -> None:
        self.index = KeyIndex(pa.array(state["bucket_keys"], pa.string()))  # built once
        self.rows = flush32(state["boundaries"])
        width = self.rows.shape[1]
        self.valid = np.arange(width)[None, :] < np.asarray(state["lengths"])[:, None]

    def __call__(self, value_and_key: tuple[np.ndarray, Any]) -> np.ndarray:
        x, keys = value_and_key
        row = self.index(keys) + 1  # unknown or missing -> row 0
        x = flush32(x).reshape(-1, 1)
        above = ~(x < self.rows[row]) & self.valid[row]
        return above.sum(axis=1).astype(np.int64)
