"""Per-key statistics of a numeric feature (``per_key:``): exact, columnar, mergeable.

:class:`KeyStats` holds, for a set of keys, the count, min, max and the exact sums ``Σx`` and
``Σx²`` of the finite values of each key. The sums are integers held as *limbs*: int64
columns of a ``(keys, levels)`` matrix, column ``c`` weighing ``2**(BASE + 32 * (lo + c))``.
Every step is vectorised over keys (numpy and Arrow; no Python object per key):

* one batch (:func:`batch_stats`): ``x`` and the exact ``x² = p + e`` (Dekker, as in
  :mod:`~beam_prep.analyzers.exact_sums`) are cut into 32-bit slices on the absolute grid of
  levels (``(r + σ) - σ``), each slice summed per key by ``np.bincount`` (exact: at most
  ``2**16`` values of 33 bits per pass). Values outside ``[2**-240, 2**480]`` in magnitude
  (rare) are added exactly through :func:`~beam_prep.analyzers.exact_sums.exact_sums`, one
  by one;
* merging (:func:`merge`): matrices aligned on the grid, rows sorted by key (UTF-8 bytes),
  ``np.add.reduceat`` per key, then carries propagated so that every limb but the top one
  is in ``[0, 2**32)``.

Integer sums make the result independent of batches, splits, partitions and merge order.
:func:`moments` turns one row back into :class:`~beam_prep.analyzers.numeric.Moments`, so a
key's mean and variance are read out by the same correctly rounded division as the global
statistics (a key holding every row has exactly the global mean and variance).

Example:
    >>> import numpy as np, pyarrow as pa
    >>> s = merge([batch_stats(pa.array(["a", "b", "a"]), np.array([1.0, 5.0, 2.0]))])
    >>> s.keys.to_pylist(), [moments(s, i).mean for i in range(2)]
    (['a', 'b'], [1.5, 5.0])
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.exact_sums import SQUARE_SHIFT, SUM_SHIFT, exact_sums
from beam_prep.analyzers.numeric import Moments

LEVEL_BITS = 32
BASE = -2176
"""Level ``j`` of the grid weighs ``2**(BASE + 32 j)`` (level 0 is below every square)."""
ROWS_PER_PASS = 1 << 16
_FAST = (2.0 ** -240, 2.0 ** 480)  # x and x² slice on a grid of normal floats
_VELTKAMP = float((1 << 27) + 1)
_MASK = (1 << LEVEL_BITS) - 1


@dataclasses.dataclass
class KeyStats:
    """Per-key partial statistics (see the module docstring).

    Attributes:
        keys: Keys (large_string), unique and sorted after :func:`merge`.
        count: Finite values per key (int64).
        minimum: Smallest value per key (float64).
        maximum: Largest value per key (float64).
        sum_lo: Grid level of the first column of ``sums``.
        sums: ``Σx`` limbs, int64 ``(keys, levels)``.
        sq_lo: Grid level of the first column of ``squares``.
        squares: ``Σx²`` limbs, int64 ``(keys, levels)``.
    """

    keys: pa.Array
    count: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    sum_lo: int
    sums: np.ndarray
    sq_lo: int
    squares: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, rows: np.ndarray) -> KeyStats:
        """The given rows (int indices), same grid."""
        return KeyStats(self.keys.take(pa.array(rows, pa.int64())), self.count[rows],
                        self.minimum[rows], self.maximum[rows], self.sum_lo, self.sums[rows],
                        self.sq_lo, self.squares[rows])


def empty() -> KeyStats:
    """No key."""
    z = np.zeros(0, np.int64)
    f = np.zeros(0, np.float64)
    return KeyStats(pa.array([], pa.large_string()), z, f, f.copy(), 0,
                    np.zeros((0, 0), np.int64), 0, np.zeros((0, 0), np.int64))


def _levels(values: np.ndarray, codes: np.ndarray, k: int) -> tuple[int, np.ndarray]:
    """Exact per-code sums of float64 values in ``[2**-600, 2**960]`` as limbs."""
    r = values.copy()
    if not r.any():
        return 0, np.zeros((k, 0), np.int64)
    top = math.frexp(float(np.max(np.abs(r))))[1]  # |r| < 2**top
    j = -((BASE + LEVEL_BITS - top) // LEVEL_BITS)  # smallest j with BASE+32j+32 >= top
    columns: list[np.ndarray] = []
    while True:
        q = BASE + LEVEL_BITS * j
        sigma = 1.5 * 2.0 ** (q + 52)  # ulp(sigma) = 2**q and |r| <= 2**(q + 32)
        p = r + sigma
        p -= sigma
        r -= p
        limb = np.bincount(codes, weights=p, minlength=k)  # < 2**(q + 49): exact
        columns.append(np.ldexp(limb, -q).astype(np.int64))
        if not r.any():
            break
        j -= 1
    return j, np.stack(columns[::-1], axis=1)


def _align(lo_a: int, a: np.ndarray, lo_b: int, b: np.ndarray) -> tuple[int, np.ndarray,
                                                                         np.ndarray]:
    """Both limb matrices on one range of levels (zero columns added)."""
    if a.shape[1] == 0:
        lo_a = lo_b
    if b.shape[1] == 0:
        lo_b = lo_a
    lo = min(lo_a, lo_b)
    hi = max(lo_a + a.shape[1], lo_b + b.shape[1])

    def pad(start: int, m: np.ndarray) -> np.ndarray:
        if start == lo and m.shape[1] == hi - lo:
            return m
        out = np.zeros((m.shape[0], hi - lo), np.int64)
        out[:, start - lo:start - lo + m.shape[1]] = m
        return out

    return lo, pad(lo_a, a), pad(lo_b, b)


def _normalize(lo: int, m: np.ndarray) -> tuple[int, np.ndarray]:
    """Carries propagated: limbs in ``[0, 2**32)`` but the top one, in ``[-2**31, 2**31)``;
    all-zero low columns dropped."""
    m = m.copy()
    if m.shape[1] == 0 or m.shape[0] == 0:
        return lo, m
    for c in range(m.shape[1] - 1):
        carry = m[:, c] >> LEVEL_BITS
        m[:, c] &= _MASK
        m[:, c + 1] += carry
    while True:
        carry = (m[:, -1] + (1 << (LEVEL_BITS - 1))) >> LEVEL_BITS
        if not carry.any():
            break
        m[:, -1] -= carry << LEVEL_BITS
        m = np.concatenate([m, carry[:, None]], axis=1)
    first = 0
    while first < m.shape[1] - 1 and not m[:, first].any():
        first += 1
    return lo + first, m[:, first:]


def _slow_rows(values: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """Limb matrices ``(sum_lo, sums, sq_lo, squares)`` of values outside the fast range,
    one exact Python integer each (rare: subnormals, tiny or huge magnitudes)."""
    sums, squares = np.zeros((k, 0), np.int64), np.zeros((k, 0), np.int64)
    s_lo = q_lo = 0
    for x, code in zip(values.tolist(), codes.tolist()):
        t, s = exact_sums(np.array([x]))
        for shift, v, which in ((-BASE - SUM_SHIFT, t, 0), (-BASE - SQUARE_SHIFT, s, 1)):
            v <<= shift  # units 2**BASE
            width = (abs(v).bit_length() + LEVEL_BITS - 1) // LEVEL_BITS + 1
            sign = -1 if v < 0 else 1
            row = np.zeros((k, width), np.int64)
            row[code] = [sign * ((abs(v) >> (LEVEL_BITS * i)) & _MASK) for i in range(width)]
            if which == 0:
                s_lo, a, b = _align(s_lo, sums, 0, row)
                sums = a + b
            else:
                q_lo, a, b = _align(q_lo, squares, 0, row)
                squares = a + b
    return s_lo, sums, q_lo, squares


def batch_stats(keys: pa.Array, values: np.ndarray) -> KeyStats:
    """Per-key statistics of one batch; rows with a null or ``""`` key or a non-finite value
    are skipped. Keys are unique, not sorted (:func:`merge` sorts).

    Args:
        keys: String keys, one per row.
        values: float64 values, one per row.
    """
    keys = keys.cast(pa.large_string())
    valid = np.isfinite(values) & pc.fill_null(pc.not_equal(keys, ""), False).to_numpy(
        zero_copy_only=False)
    if not valid.any():
        return empty()
    keys = keys.filter(pa.array(valid))
    x = values[valid] + 0.0
    encoded = pc.dictionary_encode(keys).combine_chunks() if isinstance(
        keys, pa.ChunkedArray) else pc.dictionary_encode(keys)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp)
    k = len(encoded.dictionary)
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.diff(codes[order], prepend=-1))
    sorted_x = x[order]
    out = KeyStats(encoded.dictionary, np.bincount(codes, minlength=k).astype(np.int64),
                   np.minimum.reduceat(sorted_x, starts) + 0.0,
                   np.maximum.reduceat(sorted_x, starts) + 0.0,
                   0, np.zeros((k, 0), np.int64), 0, np.zeros((k, 0), np.int64))
    magnitude = np.abs(x)
    fast = (magnitude == 0) | ((magnitude >= _FAST[0]) & (magnitude <= _FAST[1]))
    for start in range(0, x.size, ROWS_PER_PASS):
        part, part_codes = x[start:start + ROWS_PER_PASS], codes[start:start + ROWS_PER_PASS]
        ok = fast[start:start + ROWS_PER_PASS]
        v, c = part[ok], part_codes[ok]
        big = v * _VELTKAMP  # Veltkamp: v = hi + low, each of at most 26 significant bits
        hi = big - (big - v)
        low = v - hi
        p = v * v
        cross = hi * low
        e = hi * hi
        e -= p
        e += cross
        e += cross
        e += low * low  # v² = p + e exactly (Dekker)
        pieces = [(*_levels(v, c, k), *_levels(p, c, k)), (0, None, *_levels(e, c, k))]
        if not ok.all():
            pieces.append(_slow_rows(part[~ok], part_codes[~ok], k))
        for s_lo, s, q_lo, q in pieces:
            if s is not None:
                out.sum_lo, a, b = _align(out.sum_lo, out.sums, s_lo, s)
                out.sums = a + b
            out.sq_lo, a, b = _align(out.sq_lo, out.squares, q_lo, q)
            out.squares = a + b
    out.sum_lo, out.sums = _normalize(out.sum_lo, out.sums)
    out.sq_lo, out.squares = _normalize(out.sq_lo, out.squares)
    return out


def merge(parts: list[KeyStats]) -> KeyStats:
    """One row per key, sorted by the keys' UTF-8 bytes (exact: any order of ``parts`` and of
    their rows gives the same result)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return empty()
    s_lo, q_lo = parts[0].sum_lo, parts[0].sq_lo
    sums, squares = parts[0].sums, parts[0].squares
    for p in parts[1:]:
        s_lo, sums, b = _align(s_lo, sums, p.sum_lo, p.sums)
        sums = np.concatenate([sums, b])
        q_lo, squares, b = _align(q_lo, squares, p.sq_lo, p.squares)
        squares = np.concatenate([squares, b])
    keys = pa.concat_arrays([p.keys.cast(pa.large_string()) for p in parts])
    order = pc.sort_indices(keys).to_numpy()
    keys = keys.take(pa.array(order))
    if len(keys) > 1:
        change = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)).to_numpy(
            zero_copy_only=False)
        starts = np.concatenate([[0], np.flatnonzero(change) + 1])
    else:
        starts = np.zeros(1, np.int64)

    def reduce(fn, arrays: list[np.ndarray]) -> np.ndarray:
        return fn.reduceat(np.concatenate(arrays)[order], starts, axis=0)

    out = KeyStats(keys.take(pa.array(starts)), reduce(np.add, [p.count for p in parts]),
                   reduce(np.minimum, [p.minimum for p in parts]),
                   reduce(np.maximum, [p.maximum for p in parts]), 0, sums, 0, squares)
    out.sum_lo, out.sums = _normalize(s_lo, np.add.reduceat(sums[order], starts, axis=0)
                                      if sums.shape[1] else sums[starts])
    out.sq_lo, out.squares = _normalize(q_lo, np.add.reduceat(squares[order], starts, axis=0)
                                        if squares.shape[1] else squares[starts])
    return out


def _as_int(row: np.ndarray, lo: int, shift: int) -> int:
    """The exact integer of one normalized limb row, in units of ``2**-shift``."""
    if row.size == 0:
        return 0
    v = int.from_bytes(row.astype("<u4").tobytes(), "little", signed=True)
    exponent = BASE + LEVEL_BITS * lo + shift
    return v << exponent if exponent >= 0 else v >> -exponent  # exact: a multiple


def moments(stats: KeyStats, i: int) -> Moments:
    """Row ``i`` as :class:`~beam_prep.analyzers.numeric.Moments` (exact sums)."""
    return Moments(int(stats.count[i]), _as_int(stats.sums[i], stats.sum_lo, SUM_SHIFT),
                   _as_int(stats.squares[i], stats.sq_lo, SQUARE_SHIFT),
                   float(stats.minimum[i]), float(stats.maximum[i]))


def split_by_partition(stats: KeyStats, hashes: np.ndarray, n: int) -> list[tuple[int,
                                                                                  KeyStats]]:
    """``(partition, rows)`` for every non-empty ``hash % n`` partition."""
    if not len(stats):
        return []
    part = (hashes % np.uint64(n)).astype(np.int64)
    return [(p, stats.take(np.flatnonzero(part == p))) for p in np.unique(part).tolist()]


def to_table(stats: KeyStats) -> pa.Table:
    """The stats as an Arrow table (limbs as fixed-size lists; grid levels in metadata)."""
    def limbs(m: np.ndarray) -> pa.Array:
        width = m.shape[1]
        return pa.FixedSizeListArray.from_arrays(pa.array(m.reshape(-1), pa.int64()), width)

    table = pa.table({"key": stats.keys.cast(pa.large_string()), "count": stats.count,
                      "min": stats.minimum, "max": stats.maximum,
                      "sums": limbs(stats.sums), "squares": limbs(stats.squares)})
    return table.replace_schema_metadata({"sum_lo": str(stats.sum_lo),
                                          "sq_lo": str(stats.sq_lo)})


def from_table(table: pa.Table) -> KeyStats:
    """The inverse of :func:`to_table`."""
    meta = table.schema.metadata or {}
    n = table.num_rows

    def limbs(name: str) -> np.ndarray:
        col = table.column(name).combine_chunks()
        width = col.type.list_size
        return np.asarray(col.flatten().to_numpy(zero_copy_only=False), np.int64).reshape(
            n, width)

    return KeyStats(table.column("key").combine_chunks(),
                    np.asarray(table.column("count").to_numpy(), np.int64),
                    np.asarray(table.column("min").to_numpy(), np.float64),
                    np.asarray(table.column("max").to_numpy(), np.float64),
                    int(meta[b"sum_lo"]), limbs("sums"), int(meta[b"sq_lo"]), limbs("squares"))


def _scaled(numerator: int, exponent: int, denominator: int) -> float:
    """``numerator * 2**exponent / denominator`` correctly rounded (inf beyond float64)."""
    try:
        if exponent >= 0:
            return (numerator << exponent) / denominator
        return numerator / (denominator << -exponent)
    except OverflowError:
        return math.inf if numerator > 0 else -math.inf


def means_and_variances(stats: KeyStats) -> tuple[list[float], list[float]]:
    """Every key's mean and population variance, as :func:`moments` gives them.

    The same correctly rounded ratios of exact integers, with the integers kept in their
    grid units (smaller than in :class:`~beam_prep.analyzers.numeric.Moments`): a power of
    two on both sides of a ratio does not change its rounding.
    """
    w1, w2 = stats.sums.shape[1], stats.squares.shape[1]
    sums = stats.sums.astype("<u4").tobytes()
    squares = stats.squares.astype("<u4").tobytes()
    k1 = BASE + LEVEL_BITS * stats.sum_lo  # Σx = t * 2**k1, Σx² = q * 2**k2
    k2 = BASE + LEVEL_BITS * stats.sq_lo
    d = min(k2, 2 * k1)
    means, variances = [], []
    for i, c in enumerate(stats.count.tolist()):
        t = int.from_bytes(sums[4 * w1 * i:4 * w1 * (i + 1)], "little", signed=True)
        q = int.from_bytes(squares[4 * w2 * i:4 * w2 * (i + 1)], "little", signed=True)
        means.append(_scaled(t, k1, c))
        # c²·var = c·Σx² - (Σx)² = 2**d · (c·q·2**(k2-d) - t²·2**(2k1-d)), exact and >= 0
        spread = ((c * q) << (k2 - d)) - ((t * t) << (2 * k1 - d))
        variances.append(_scaled(spread, d, c * c))
    return means, variances
