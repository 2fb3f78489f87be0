"""Position of strings in a large fixed key set, built once and looked up per batch.

``pyarrow.compute.index_in`` builds its hash set from the value set on every call: with a
per-key file of millions of keys that is seconds per batch. :class:`KeyIndex` hashes the
keys once (:func:`~beam_prep.analyzers.vocab.partition.token_hashes`, 64 bits, numpy over
the Arrow buffers) and sorts the hashes; a batch is hashed, found by ``np.searchsorted``
and every hit is confirmed by comparing the strings themselves, so the answer is exactly
``index_in``'s (a key set with two equal hashes uses ``index_in``).

Example:
    >>> import pyarrow as pa
    >>> KeyIndex(pa.array(["a", "b"]))(pa.array(["b", "x", None, "a"])).tolist()
    [1, -1, -1, 0]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.vocab.partition import token_hashes


class KeyIndex:
    """Positions of values in ``keys`` (unique strings), ``-1`` when absent or null.

    Args:
        keys: The key set, a string or large_string array.
    """

    def __init__(self, keys: pa.Array) -> None:
        self._keys = keys.cast(pa.large_string())
        hashes = token_hashes(self._keys)
        self._order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[self._order]
        self._exact = len(hashes) < 2 or bool((np.diff(self._hashes) != 0).all())

    def __call__(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if pa.types.is_dictionary(values.type):
            mapped = np.concatenate([self(values.dictionary), [-1]])
            indices = pc.fill_null(values.indices, len(values.dictionary))
            return mapped[np.asarray(indices.to_numpy(zero_copy_only=False), np.int64)]
        values = values.cast(pa.large_string())
        if not self._exact:
            found = pc.index_in(values, value_set=self._keys)
            return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), np.int64)
        if len(self._keys) == 0 or len(values) == 0:
            return np.full(len(values), -1, np.int64)
        hashes = token_hashes(values)
        at = np.minimum(np.searchsorted(self._hashes, hashes), len(self._hashes) - 1)
        candidate = self._order[at]
        same = pc.fill_null(pc.equal(values, self._keys.take(pa.array(candidate))), False)
        hit = (self._hashes[at] == hashes) & same.to_numpy(zero_copy_only=False)
        return np.where(hit, candidate, -1).astype(np.int64)
