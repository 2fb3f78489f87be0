"""Row-wise numpy helpers of the transform job: crossing, one-hot, counts and padding.

Each works on whole batches (ragged rows as ``splits`` + flat ``ids``), as the Keras layers
HashedCrossing, CategoryEncoding and the padded int outputs compute them.

Example:
    >>> import numpy as np
    >>> pad_rows(np.array([0, 1, 3]), np.array([5, 6, 7]), 2).tolist()
    [[5, 0], [6, 7]]
"""

from __future__ import annotations

import numpy as np

from beam_prep.transform import hashing


def cross_hash(values: tuple, num_bins: int) -> np.ndarray:
    """keras.layers.HashedCrossing of the columns in ``values`` (FarmHash cross, as TF)."""
    h = np.full(len(values[0]), hashing.CROSS_HASH_KEY, np.uint64)
    for v in values:
        part = v.view(np.uint64) if isinstance(v, np.ndarray) else hashing.fingerprint64(v)
        h = hashing.fingerprint_cat64(h, part)
    return (h % np.uint64(num_bins)).astype(np.int64)


def one_hot(index: np.ndarray, depth: int) -> np.ndarray:
    """``(n, depth)`` float32 one-hot rows of ``index``."""
    out = np.zeros((len(index), depth), np.float32)
    out[np.arange(len(index)), index] = 1.0
    return out


def bincount_rows(splits: np.ndarray, ids: np.ndarray, width: int, binary: bool,
                   first: int = 0) -> np.ndarray:
    """``(n, width)`` float32 counts of ``ids - first`` per row (ids below ``first`` skipped)."""
    n = len(splits) - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(splits))
    keep = ids >= first
    flat = rows[keep] * width + (ids[keep] - first)
    counts = np.bincount(flat, minlength=n * width).astype(np.float32).reshape(n, width)
    return np.minimum(counts, 1.0) if binary else counts


def pad_rows(splits: np.ndarray, ids: np.ndarray, length: int) -> np.ndarray:
    """``(n, length)`` int64 rows of a ragged ``(splits, ids)``: truncated, padded with 0."""
    n = len(splits) - 1
    out = np.zeros((n, length), np.int64)
    lengths = np.minimum(np.diff(splits), length)
    rows = np.repeat(np.arange(n), lengths)
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out[rows, cols] = ids[np.repeat(splits[:-1], lengths) + cols]
    return out
