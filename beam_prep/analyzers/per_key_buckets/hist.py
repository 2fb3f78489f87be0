"""Per-key quantiles (``per_key`` + ``num_buckets``): a bounded, exactly mergeable histogram.

:class:`KeyHist` holds, for a set of keys, a histogram of each key's finite values on a
nested grid: a value's *code* is its float64 bits mapped to an unsigned integer of the
same order (:func:`sortable`); at *level* ``r`` a bin is the codes sharing all but their
``r`` low bits. A key's level is the smallest ``r`` at which its values fill at most
:data:`MAX_BINS` bins, so

* a key with at most :data:`MAX_BINS` distinct values is held exactly (level 0: one bin
  per distinct value, with its count), and its boundaries are exact;
* a key with more is held at the first level where it fits: memory per key is at most
  :data:`MAX_BINS` bins (16 bytes each) whatever its number of rows.

The histogram is a function of the key's multiset of values alone: merging coarsens both
sides to the larger level, adds counts (integers) and coarsens further while the key has
too many bins, which gives the same level and bins as building it from all values at
once. So the result is independent of batches, splits, partitions and merge order (no
floating-point sum, no order-dependent compaction).

:func:`boundaries` reads ``num_buckets - 1`` quantiles per key with tfx-bsl's rule on
exact data (``sorted_values[min(i * n // num_buckets, n - 1)]``, checked against
``QuantilesSketch.GetQuantiles``); a bin above level 0 gives the value at the middle of
its code range, so a boundary lies in the same grid cell as the exact quantile.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> h = merge([batch_hist(pa.array(["a", "b", "a", "a"]), np.array([1.0, 5.0, 2.0, 3.0]))])
    >>> h.keys.to_pylist(), boundaries(h, 3).tolist()
    (['a', 'b'], [[2.0, 3.0], [5.0, 5.0]])
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAX_BINS = 2048
"""Bins per key; a key with at most this many distinct finite values is exact."""
_SIGN = np.uint64(1 << 63)
_ONE = np.uint64(1)


@dataclasses.dataclass
class KeyHist:
    """Per-key histograms (see the module docstring).

    Attributes:
        keys: Keys (large_string); unique and sorted by UTF-8 bytes after :func:`merge`.
        level: Grid level per key (int64).
        offsets: Key ``i``'s bins are ``offsets[i]:offsets[i + 1]`` (int64, keys + 1).
        codes: Bin codes (uint64, the low ``level`` bits zero), increasing per key.
        counts: Values per bin (int64, >= 1).
    """

    keys: pa.Array
    level: np.ndarray
    offsets: np.ndarray
    codes: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)

    def key_counts(self) -> np.ndarray:
        """Finite values per key (int64)."""
        if not len(self):
            return np.zeros(0, np.int64)
        cs = np.concatenate([[0], np.cumsum(self.counts)])
        return cs[self.offsets[1:]] - cs[self.offsets[:-1]]

    def take(self, rows: np.ndarray) -> KeyHist:
        """The given keys (int indices, increasing), with their bins."""
        rows = np.asarray(rows, np.int64)
        sizes = self.offsets[rows + 1] - self.offsets[rows]
        starts = np.repeat(self.offsets[rows] - np.concatenate([[0], np.cumsum(sizes)[:-1]]),
                           sizes)
        picked = np.arange(int(sizes.sum()), dtype=np.int64) + starts
        return KeyHist(self.keys.take(pa.array(rows, pa.int64())), self.level[rows],
                       np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                       self.codes[picked], self.counts[picked])


def empty() -> KeyHist:
    """No key."""
    return KeyHist(pa.array([], pa.large_string()), np.zeros(0, np.int64),
                   np.zeros(1, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64))


def sortable(values: np.ndarray) -> np.ndarray:
    """float64 -> uint64 codes in the same order (``-0.0`` is ``0.0``; no NaN).

    Example:
        >>> bool(np.all(np.diff(sortable(np.array([-2.0, -0.5, 0.0, 1e-300, 3.0]))) > 0))
        True
    """
    bits = (np.asarray(values, np.float64) + 0.0).view(np.uint64)
    return np.where(bits >= _SIGN, ~bits, bits | _SIGN)


def unsortable(codes: np.ndarray) -> np.ndarray:
    """The inverse of :func:`sortable`."""
    codes = np.asarray(codes, np.uint64)
    return np.where(codes >= _SIGN, codes & ~_SIGN, ~codes).view(np.float64) + 0.0


_TOP = sortable(np.array([-np.finfo(np.float64).max, np.finfo(np.float64).max]))


def _coarsen(codes: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Codes with their low ``level`` bits cleared (per code)."""
    mask = (np.left_shift(_ONE, level.astype(np.uint64)) - _ONE)
    return codes & ~mask


def _reduce(owner: np.ndarray, codes: np.ndarray, counts: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Adjacent equal ``(owner, code)`` bins added (input sorted by owner, then code)."""
    if codes.size == 0:
        return owner, codes, counts
    new = np.ones(codes.size, bool)
    new[1:] = (owner[1:] != owner[:-1]) | (codes[1:] != codes[:-1])
    starts = np.flatnonzero(new)
    return owner[starts], codes[starts], np.add.reduceat(counts, starts)


def _build(keys: pa.Array, level: np.ndarray, owner: np.ndarray, codes: np.ndarray,
           counts: np.ndarray) -> KeyHist:
    """Bins sorted by (owner, code) at their owner's level, coarsened until each key fits."""
    k = len(keys)
    codes = _coarsen(codes, level[owner])
    order = np.lexsort((codes, owner))
    owner, codes, counts = _reduce(owner[order], codes[order], counts[order])
    while True:
        over = np.bincount(owner, minlength=k) > MAX_BINS
        if not over.any():
            break
        level = level + over
        hit = over[owner]
        codes = np.where(hit, _coarsen(codes, level[owner]), codes)  # order is kept
        owner, codes, counts = _reduce(owner, codes, counts)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=k))])
    return KeyHist(keys, level.astype(np.int64), offsets.astype(np.int64), codes,
                   counts.astype(np.int64))


def batch_hist(keys: pa.Array, values: np.ndarray) -> KeyHist:
    """The histograms of one batch; rows with a null or ``""`` key or a non-finite value
    are skipped. Keys are unique, not sorted (:func:`merge` sorts).

    Args:
        keys: String keys, one per row.
        values: float64 values, one per row.
    """
    keys = keys.cast(pa.large_string())
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    valid = np.isfinite(values) & pc.fill_null(pc.not_equal(keys, ""), False).to_numpy(
        zero_copy_only=False)
    if not valid.any():
        return empty()
    encoded = pc.dictionary_encode(keys.filter(pa.array(valid)))
    owner = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    k = len(encoded.dictionary)
    codes = sortable(np.asarray(values, np.float64)[valid])
    return _build(encoded.dictionary, np.zeros(k, np.int64), owner, codes,
                  np.ones(codes.size, np.int64))


def merge(parts: list[KeyHist]) -> KeyHist:
    """One histogram per key, keys sorted by UTF-8 bytes; the same result for any order
    of ``parts`` (and any split of the values into parts)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return empty()
    keys = pa.concat_arrays([p.keys.cast(pa.large_string()) for p in parts])
    order = pc.sort_indices(keys).to_numpy()
    sorted_keys = keys.take(pa.array(order))
    change = np.ones(len(keys), bool)
    if len(keys) > 1:
        change[1:] = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, len(keys) - 1)
                                  ).to_numpy(zero_copy_only=False)
    group = np.empty(len(keys), np.int64)
    group[order] = np.cumsum(change) - 1
    starts = np.flatnonzero(change)
    levels = np.concatenate([p.level for p in parts])
    level = np.maximum.reduceat(levels[order], starts)
    sizes = np.concatenate([np.diff(p.offsets) for p in parts])
    owner = np.repeat(group, sizes)
    codes = np.concatenate([p.codes for p in parts])
    counts = np.concatenate([p.counts for p in parts])
    return _build(sorted_keys.take(pa.array(starts)), level, owner, codes, counts)


def boundaries(hist: KeyHist, num_buckets: int) -> np.ndarray:
    """``(keys, num_buckets - 1)`` float64 boundaries (see the module docstring)."""
    k = len(hist)
    if not k:
        return np.zeros((0, num_buckets - 1), np.float64)
    cs = np.cumsum(hist.counts)
    before = np.concatenate([[0], cs])[hist.offsets[:-1]]
    n = hist.key_counts()
    i = np.arange(1, num_buckets, dtype=np.int64)
    rank = np.minimum((i[None, :] * n[:, None]) // num_buckets, n[:, None] - 1)
    bins = np.searchsorted(cs, before[:, None] + rank, side="right")
    level = hist.level[np.repeat(np.arange(k), num_buckets - 1)].reshape(k, -1)
    codes = hist.codes[bins]
    half = np.where(level > 0, np.left_shift(_ONE, np.maximum(level, 1).astype(np.uint64)
                                             - _ONE), np.uint64(0))
    middle = np.clip(codes + half, _TOP[0], _TOP[1])
    return unsortable(middle)


def split_by_partition(hist: KeyHist, hashes: np.ndarray, n: int) -> list[tuple[int,
                                                                              KeyHist]]:
    """``(partition, keys)`` for every non-empty ``hash % n`` partition."""
    if not len(hist):
        return []
    part = (hashes % np.uint64(n)).astype(np.int64)
    return [(p, hist.take(np.flatnonzero(part == p))) for p in np.unique(part).tolist()]


def to_table(hist: KeyHist) -> pa.Table:
    """The histograms as an Arrow table (one row per key, bins as lists)."""
    offsets = pa.array(hist.offsets.astype(np.int32) if hist.offsets[-1] < 2 ** 31
                       else hist.offsets, pa.int32() if hist.offsets[-1] < 2 ** 31
                       else pa.int64())
    lists = pa.ListArray if offsets.type == pa.int32() else pa.LargeListArray
    return pa.table({"key": hist.keys.cast(pa.large_string()), "level": hist.level,
                     "codes": lists.from_arrays(offsets, pa.array(hist.codes, pa.uint64())),
                     "counts": lists.from_arrays(offsets, pa.array(hist.counts, pa.int64()))})


def from_table(table: pa.Table) -> KeyHist:
    """The inverse of :func:`to_table`."""
    codes = table.column("codes").combine_chunks()
    counts = table.column("counts").combine_chunks()
    offsets = np.asarray(codes.offsets.to_numpy(), np.int64)
    return KeyHist(table.column("key").combine_chunks(),
                   np.asarray(table.column("level").to_numpy(), np.int64),
                   offsets - offsets[0],
                   np.asarray(codes.flatten().to_numpy(zero_copy_only=False), np.uint64),
                   np.asarray(counts.flatten().to_numpy(zero_copy_only=False), np.int64))
