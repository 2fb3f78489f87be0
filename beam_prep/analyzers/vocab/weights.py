"""Exact, order-free weighted token counts, carried in ordinary vocabulary tables.

A weighted count is a sum of float64 weights, and float addition depends on its order. So
weights are never added as floats before the very end: each weight ``w = m · 2**(e - 1127)``
(``m`` its 53-bit mantissa) goes to the *band* ``e // 8`` as the integer ``M = m << (e % 8)``
(below ``2**60``), cut into two limbs ``hi = M >> 30`` and ``lo = M % 2**30``. Limbs of one
token and band are summed as int64, which is exact and order-free, so the per-band sums
depend only on the multiset of (token, weight) pairs, never on batches, splits or merges.

Each band travels as a vocabulary table (:data:`~beam_prep.analyzers.vocab.count.SCHEMA`:
``count`` = the ``hi`` sum, ``df`` = the ``lo`` sum) under the key :func:`band_key`
(``<feature>.w<band>``: a feature name never holds a dot), through the same per-split
accumulator, hash partitions, spill files, analysis cache and keyed combine as unweighted
counts (all sum int64 columns exactly). :func:`combine_bands` then reads a token's bands
back as one float64: the float64 nearest to the exact sum of its weights (vectorised for a
token whose weights share one band, with Python integers for the others).

Limits: int64 limb sums hold 2**33 occurrences of one token in one band. Weights must be
finite, >= 0 and at most :data:`MAX_WEIGHT` (:func:`valid_weights`).

Example:
    >>> import numpy as np, pyarrow as pa
    >>> tables = band_tables(pa.array(["a", "b", "a", None]), np.array([0.5, 2.0, 0.25, 9.0]))
    >>> t = combine_bands([tables])
    >>> sorted(zip(t.column("token").to_pylist(), t.column("count").to_pylist()))
    [('a', 0.75), ('b', 2.0)]
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.exact_sums import ratio_to_float
from beam_prep.analyzers.vocab.count import SCHEMA, table_from_counts

__all__ = ["BAND_BITS", "MAX_WEIGHT", "WEIGHTED_SCHEMA", "band_key", "band_tables",
           "check_weights", "combine_bands", "parse_band_key", "valid_weights", "weight_limbs"]

#: Exponents per band: ``M = m << (e % 8)`` stays below 2**60.
BAND_BITS = 8
#: Largest valid weight (2**900): sums of any realistic number of rows stay finite.
MAX_WEIGHT = 2.0 ** 900
#: A weighted vocabulary table: ``count`` is the float64 weighted count, ``df`` is 0.
WEIGHTED_SCHEMA = pa.schema([("token", pa.large_string()), ("count", pa.float64()),
                             ("df", pa.int64())])

_OFFSET = 1127  # frexp exponent - 53 + 1127 >= 1 for every float64 (subnormals too)
_LIMB = 30
_MASK = (1 << _LIMB) - 1
_SEP = ".w"
_EXACT_BINCOUNT = 1 << 23
_EXACT_HI = 1 << 53
_MIN_SIMPLE_BASE = -960  # above: hi·2**30·2**base and lo·2**base are normal floats


def band_key(name: str, band: int) -> str:
    """The vocabulary key of one band of a weighted feature (``price.w0134``)."""
    return f"{name}{_SEP}{band:04d}"


def parse_band_key(key: str) -> tuple[str, int] | None:
    """``(feature, band)`` of a :func:`band_key`, None for a plain feature name.

    Example:
        >>> parse_band_key(band_key("city", 134)), parse_band_key("city")
        (('city', 134), None)
    """
    name, sep, band = key.rpartition(_SEP)
    if not sep or not band.isdigit():
        return None
    return name, int(band)


def valid_weights(weights: np.ndarray) -> np.ndarray:
    """Mask of usable weights: finite, >= 0 and <= :data:`MAX_WEIGHT` (NaN is invalid)."""
    with np.errstate(invalid="ignore"):
        return (weights >= 0) & (weights <= MAX_WEIGHT)


def check_weights(name: str, size: int, weights: np.ndarray) -> None:
    """Refuses weights that are not one valid weight per value (a caller's bug: the split
    DoFn sets rows with an invalid weight aside before it adds a batch).

    Raises:
        ValueError: Wrong length, or a weight that is missing, NaN, negative, infinite or
            above :data:`MAX_WEIGHT`.

    Example:
        >>> check_weights("f", 2, np.array([1.0, -1.0]))
        Traceback (most recent call last):
        ...
        ValueError: f: 1 of 2 weights are not valid (finite, >= 0, <= 2**900), e.g. -1.0
    """
    weights = np.asarray(weights)
    if weights.shape != (size,):
        raise ValueError(f"{name}: {weights.shape} weights for {size} values: give one "
                         "weight per value")
    bad = ~valid_weights(weights)
    if bad.any():
        raise ValueError(f"{name}: {int(bad.sum())} of {size} weights are not valid "
                         f"(finite, >= 0, <= 2**900), e.g. {float(weights[bad][0])!r}")


def weight_limbs(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(band, hi, lo)`` int64 arrays with ``w = (hi · 2**30 + lo) · 2**(8·band - 1127)``.

    Args:
        weights: Valid weights (:func:`valid_weights`); a zero goes to band 0 as (0, 0).

    Example:
        >>> band, hi, lo = weight_limbs(np.array([1.0, 0.0]))
        >>> [(int(b), (int(h) << 30) + int(l)) for b, h, l in zip(band, hi, lo)]
        [(134, 36028797018963968), (0, 0)]
    """
    mantissa, exponent = np.frexp(np.asarray(weights, dtype=np.float64))
    m = np.ldexp(mantissa, 53).astype(np.int64)
    e = exponent.astype(np.int64) - 53 + _OFFSET
    e[m == 0] = 0
    band = e // BAND_BITS
    big = m << (e - band * BAND_BITS)
    return band, big >> _LIMB, big & _MASK


def band_tables(tokens: pa.Array, weights: np.ndarray) -> dict[int, pa.Table]:
    """Per band: a vocabulary table of the limb sums of each token's weights.

    Args:
        tokens: Flat tokens (strings or integers; nulls are skipped).
        weights: One valid weight per token.

    Returns:
        ``{band: table}`` (:data:`~beam_prep.analyzers.vocab.count.SCHEMA`, ``count`` = hi
        sum, ``df`` = lo sum), bands ascending.
    """
    keep = np.asarray(pc.is_valid(tokens).to_numpy(zero_copy_only=False), dtype=bool)
    if not keep.all():
        tokens = tokens.filter(pa.array(keep))
        weights = weights[keep]
    if len(tokens) == 0:
        return {}
    if pa.types.is_dictionary(tokens.type):
        tokens = tokens.dictionary_decode()
    band, hi, lo = weight_limbs(weights)
    if len(tokens) >= _EXACT_BINCOUNT:  # float64 bincount sums could round: Arrow int64
        t = pa.table({"token": tokens.cast(pa.large_string()), "band": band, "hi": hi,
                      "lo": lo})
        g = t.group_by(["band", "token"]).aggregate([("hi", "sum"), ("lo", "sum")])
        return {int(b): _table(g.filter(pc.equal(g.column("band"), b)), "hi_sum", "lo_sum")
                for b in np.unique(g.column("band").to_numpy()).tolist()}
    # One hash pass over the tokens, then (token id, band) pairs summed with bincount:
    # limbs are below 2**30, so fewer than 2**23 of them sum exactly in float64.
    encoded = pc.dictionary_encode(tokens.cast(pa.large_string()))
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    bands = np.flatnonzero(np.bincount(band))  # bands are below 2**8
    lookup = np.zeros(int(bands[-1]) + 1, np.int64)
    lookup[bands] = np.arange(len(bands))
    pair = ids * len(bands) + lookup[band]
    space = len(encoded.dictionary) * len(bands)
    if space <= 4 * len(pair):  # dense: no sort
        hi_sum = np.bincount(pair, weights=hi, minlength=space)
        lo_sum = np.bincount(pair, weights=lo, minlength=space)
        keys = np.flatnonzero(np.bincount(pair, minlength=space))
        hi_sum, lo_sum = hi_sum[keys].astype(np.int64), lo_sum[keys].astype(np.int64)
    else:
        keys, inverse = np.unique(pair, return_inverse=True)
        hi_sum = np.bincount(inverse, weights=hi, minlength=len(keys)).astype(np.int64)
        lo_sum = np.bincount(inverse, weights=lo, minlength=len(keys)).astype(np.int64)
    key_band = keys % len(bands)
    out: dict[int, pa.Table] = {}
    for j, b in enumerate(bands.tolist()):
        rows = np.flatnonzero(key_band == j)
        out[int(b)] = table_from_counts(encoded.dictionary.take(pa.array(keys[rows] // len(bands))),
                                        hi_sum[rows], lo_sum[rows])
    return out


def _table(g: pa.Table, hi: str, lo: str) -> pa.Table:
    return table_from_counts(g.column("token").combine_chunks(), g.column(hi).combine_chunks(),
                             g.column(lo).combine_chunks())


def combine_bands(parts: Iterable[dict[int, pa.Table]]) -> pa.Table:
    """One weighted table (:data:`WEIGHTED_SCHEMA`, unsorted) from band tables.

    Args:
        parts: ``{band: table}`` dicts (of the same tokens' partition); a band may repeat
            across dicts (its limb sums are added, exactly).
    """
    tables = [t.append_column("band", pa.array(np.full(t.num_rows, b, np.int64)))
              for part in parts for b, t in part.items() if t.num_rows]
    if not tables:
        return WEIGHTED_SCHEMA.empty_table()
    t = pa.concat_tables([x.cast(SCHEMA.append(pa.field("band", pa.int64())))
                          for x in tables])
    t = t.group_by(["token", "band"]).aggregate([("count", "sum"), ("df", "sum")])
    t = t.sort_by([("token", "ascending"), ("band", "ascending")])
    hi = t.column("count_sum").to_numpy()
    lo = t.column("df_sum").to_numpy()
    hi = hi + (lo >> _LIMB)  # carry: lo below 2**30
    lo = lo & _MASK
    band = t.column("band").to_numpy()
    tokens = t.column("token").combine_chunks()
    starts = np.flatnonzero(np.concatenate(
        ([True], pc.not_equal(tokens.slice(1), tokens.slice(0, len(tokens) - 1))
         .to_numpy(zero_copy_only=False))))
    ends = np.append(starts[1:], len(band))
    base = band[starts] * BAND_BITS - _OFFSET
    # One band, hi below 2**53, no subnormal: hi·2**30 and lo are exact floats, so their
    # float sum is the exact value rounded once. Else the exact integer, in Python.
    simple = (ends - starts == 1) & (hi[starts] < _EXACT_HI) & (base > _MIN_SIMPLE_BASE)
    counts = (np.ldexp(hi[starts].astype(np.float64), base + _LIMB)
              + np.ldexp(lo[starts].astype(np.float64), base))
    hard = np.flatnonzero(~simple)
    if hard.size:
        rows = np.concatenate([np.arange(starts[k], ends[k]) for k in hard.tolist()])
        bl, hl, ll = band[rows].tolist(), hi[rows].tolist(), lo[rows].tolist()
        at = 0
        for k, size in zip(hard.tolist(), (ends[hard] - starts[hard]).tolist()):
            counts[k] = _exact_value(bl[at:at + size], hl[at:at + size], ll[at:at + size])
            at += size
    return pa.Table.from_arrays(
        [tokens.take(pa.array(starts)), pa.array(counts, pa.float64()),
         pa.array(np.zeros(len(starts), np.int64))], schema=WEIGHTED_SCHEMA)


def _exact_value(bands: list[int], hi: list[int], lo: list[int]) -> float:
    """Σ (hi·2**30 + lo)·2**(8·band - 1127), correctly rounded (Python integers)."""
    low = bands[0]
    total = 0
    for b, h, rest in zip(bands, hi, lo):
        total += ((h << _LIMB) + rest) << (BAND_BITS * (b - low))
    e = BAND_BITS * low - _OFFSET
    return ratio_to_float(total << max(e, 0), 1 << max(-e, 0))
