"""``PerKeyBucketize`` of the transform job: per-key buckets in numpy/Arrow.

The key's row is found with ``pc.index_in`` in the bucket file's keys (unknown or missing:
row 0, the global boundaries); the bucket is the number of the row's real boundaries ``b``
with ``not x < b``, both sides float32, as the Keras layer
(:mod:`beam_prep.codegen.per_key_bucket_layer`) computes it.

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


class PerKeyBuckets:
    """``PerKeyBucketize`` on ``(float32 values, string keys)`` (int64 buckets).

    Args:
        state: ``bucket_keys``, ``boundaries`` (padded rows, row 0 global) and ``lengths``
            (:func:`~beam_prep.codegen.per_key_bucket_plan.bucket_state`).
    """

    def __init__(self, state: dict[str, list]) -> None:
        self.index = KeyIndex(pa.array(state["bucket_keys"], pa.string()))  # built once
        self.rows = np.asarray(state["boundaries"], np.float64).astype(np.float32)
        width = self.rows.shape[1]
        self.valid = np.arange(width)[None, :] < np.asarray(state["lengths"])[:, None]

    def __call__(self, value_and_key: tuple[np.ndarray, Any]) -> np.ndarray:
        x, keys = value_and_key
        row = self.index(keys) + 1  # unknown or missing -> row 0
        x = np.asarray(x, np.float32).reshape(-1, 1)
        above = ~(x < self.rows[row]) & self.valid[row]
        return above.sum(axis=1).astype(np.int64)
