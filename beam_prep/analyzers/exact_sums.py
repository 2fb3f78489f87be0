"""Exact sums of float64 values and of their squares, as Python integers (vectorised).

Every finite float64 is an integer multiple of ``2**-1074``, and its square one of
``2**-2148``. :func:`exact_sums` returns ``Σx`` and ``Σx²`` in those units with no rounding
at all, so adding the sums of any partition of a set of values gives the same integers,
whatever the partition and the order: moments read from them are byte-identical however
the input was split into files, byte ranges and batches. The one rounding happens when a
mean or a variance is read out (:func:`ratio_to_float`, correctly rounded).

Three exact paths (the choice cannot change the result, only the time):

* integers below ``2**31`` (counts, codes, labels): int64 sums of ``x`` and ``x²``, for the
  whole batch at once when every value is such an integer (pieces sized so that no int64
  sum can overflow; 16-bit limbs for the squares from ``2**26``), else per chunk of
  :data:`CHUNK` values as are the two other paths;
* magnitudes within ``[2**-480, 2**500]`` (almost all data): ``x² = p + e`` exactly
  (Dekker's product with Veltkamp's split; ``e = 0`` is skipped when every value has at
  most 26 significant bits, e.g. float32 data), then each of ``x``, ``p``, ``e`` is cut into
  slices of :data:`SLICE_BITS` bits on a grid set by the chunk's largest magnitude
  (``(r + σ) - σ``, Rump-Ogita-Oishi's extraction); a slice sums exactly in float64;
* anything else (near the float64 limits): integer mantissas from :func:`numpy.frexp`,
  summed in int64 limbs per band of :data:`BAND` exponents.

Measured (CPU ms per 65,536 values, best of 5-9, on 2 cores shared at load average 7-14, so
±2x; float64 Chan moments are the former code): Chan 0.2-0.4; integers 0..999 0.5-1.1 with
8,192-value chunks, 0.47-0.69 whole-batch; the 2M-row Criteo benchmark's 13 integer columns
(up to 2**24) 0.53-1.95 chunked, 0.39-0.64 whole-batch; two-decimal prices 2.6-6;
float32-exact lognormal 4.6 -> 3.2 without Dekker's error term; lognormal(sigma 5) 3.5-11;
values over 1e-300..1e300 14-15 (band path). Adding the same batch to the quantile sketch
took 8.5-15. End to end (BENCHMARKS.md §10c, "Exact moments"): the Criteo analysis's child CPU is
within the run-to-run noise (±10%) before and after, the micro numbers put the extra cost at
0.1-0.65 s of ~35 s before the whole-batch path and 0.05-0.15 s after.

Example:
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> total, total_sq = exact_sums(np.array([0.1, 0.2, -0.3]))
    >>> Fraction(total, 1 << SUM_SHIFT) == Fraction(0.1) + Fraction(0.2) + Fraction(-0.3)
    True
    >>> Fraction(total_sq, 1 << SQUARE_SHIFT) == sum(Fraction(v) ** 2 for v in (0.1, 0.2, 0.3))
    True
"""

from __future__ import annotations

import math

import numpy as np

SUM_SHIFT = 1074
"""``Σx`` is returned in units of ``2**-SUM_SHIFT`` (the smallest subnormal)."""
SQUARE_SHIFT = 2 * SUM_SHIFT
"""``Σx²`` is returned in units of ``2**-SQUARE_SHIFT``."""
CHUNK = 1 << 13
"""Values per pass: temporaries of 64 KiB are reused from the heap (2**16-value passes spent
most of their time in page faults of fresh arrays), and 2**13 bounds every partial sum."""
SLICE_BITS = 37
"""Bits per slice: ``2**37`` times :data:`CHUNK` values stays below ``2**53``, so a float64
sum of one slice is exact."""
BAND = 7
"""Exponents per band on the fallback path: a square limb (< 2**37) shifted by up to 2 * 6
bits, times :data:`CHUNK` values, stays below 2**63 in int64."""
_INT_LIMIT = float(1 << 31)  # integers below: x² < 2**62 fits in int64
_ONE_LIMB = float(1 << 26)  # integers below: pieces of >= 2**11 values sum x² exactly
_INT64_BOUND = (1 << 63) - 1
_LIMB_PIECE = 1 << 24
_FLOAT_PATH = (2.0 ** -480, 2.0 ** 500)  # no overflow of x², no underflow of e in x² = p + e
_VELTKAMP = float((1 << 27) + 1)
_MANTISSA_SHIFT = 1126  # frexp mantissas: x = m * 2**(exponent - 53), exponent >= -1073
_MASK18 = (1 << 18) - 1
_MASK27 = (1 << 27) - 1


def _sliced_sum(r: np.ndarray, top: int) -> int:
    """Exact ``Σr · 2**SQUARE_SHIFT`` for ``|r| < 2**top``; ``r`` is overwritten."""
    total = 0
    q = top - SLICE_BITS
    while True:
        sigma = 3.0 * 2.0 ** (q + 51)  # ulp(sigma) = 2**q: (r + sigma) - sigma rounds r to it
        p = r + sigma
        p -= sigma
        r -= p  # exact: the part of r below 2**q
        s = float(np.sum(p))  # multiples of 2**q below 2**(q + 37 + 13): exact
        if s:
            total += int(math.ldexp(s, -q)) << (q + SQUARE_SHIFT)
        if not r.any():
            return total
        q -= SLICE_BITS


def _float_path(x: np.ndarray) -> tuple[int, int]:
    top = math.frexp(float(np.max(np.abs(x))))[1]  # |x| < 2**top
    total = _sliced_sum(x.copy(), top) >> SUM_SHIFT  # units 2**-2148 -> 2**-1074: exact
    c = x * _VELTKAMP  # Veltkamp: x = hi + lo, each with at most 26 significant bits
    hi = c - (c - x)
    lo = x - hi
    p = x * x
    if not lo.any():  # every x has at most 26 significant bits (float32 data): x² = p
        return total, _sliced_sum(p, 2 * top)
    e = hi * hi
    e -= p
    cross = hi * lo
    e += cross
    e += cross
    lo *= lo
    e += lo  # x² = p + e exactly (Dekker)
    total_sq = _sliced_sum(p, 2 * top) + _sliced_sum(e, 2 * top - 52)
    return total, total_sq


def _band_sums(m: np.ndarray, shift: np.ndarray) -> tuple[int, int]:
    """Exact ``Σ m·2**shift`` and ``Σ m²·2**(2·shift)`` for ``0 <= shift < BAND``."""
    hi, lo = m >> 27, m & _MASK27  # m = hi * 2**27 + lo
    total = (int(np.sum(hi << shift)) << 27) + int(np.sum(lo << shift))
    # m = a * 2**36 + b * 2**18 + c with |a| <= 2**17, 0 <= b, c < 2**18, so m² is
    # a²·2**72 + 2ab·2**54 + (2ac + b²)·2**36 + 2bc·2**18 + c², every term below 2**37.
    a, b, c = m >> 36, (m >> 18) & _MASK18, m & _MASK18
    s2 = 2 * shift
    limbs = [int(np.sum(t << s2)) for t in (a * a, 2 * a * b, 2 * a * c + b * b, 2 * b * c,
                                             c * c)]
    total_sq = ((limbs[0] << 72) + (limbs[1] << 54) + (limbs[2] << 36) + (limbs[3] << 18)
                + limbs[4])
    return total, total_sq


def _band_path(x: np.ndarray) -> tuple[int, int]:
    mantissa, exponent = np.frexp(x)
    m = np.ldexp(mantissa, 53).astype(np.int64)  # |m| < 2**53
    group = exponent.astype(np.int64) + (_MANTISSA_SHIFT - 53)  # x = m * 2**(group - 1126)
    low = int(group.min())
    offset = group - low
    band = offset // BAND
    total = total_sq = 0
    for k in np.flatnonzero(np.bincount(band)).tolist():
        chosen = band == k
        t, s = _band_sums(m[chosen], offset[chosen] - k * BAND)
        base = low + k * BAND
        total += t << base
        total_sq += s << (2 * base)
    # units 2**-1126 / 2**-2252 -> 2**-1074 / 2**-2148 (every value is a multiple: exact)
    return total >> 52, total_sq >> 104


def _integer_sums(x: np.ndarray) -> tuple[int, int] | None:
    """Exact sums when every value is an integer below ``2**31`` in magnitude, else None.

    ``x²`` fits in int64; pieces of ``⌊2**63 / top²⌋`` values keep every int64 sum below
    ``2**63`` (one piece for a whole batch of integers below ``2**23``, e.g. counts); for
    ``top >= 2**26`` the squares are summed in 16-bit limbs instead.
    """
    top = max(float(x.max()), -float(x.min()))
    if not top < _INT_LIMIT or not np.array_equal(x, np.trunc(x)):
        return None
    n = x.astype(np.int64)
    if top < _ONE_LIMB:
        step = _INT64_BOUND // max(int(top) ** 2, 1)  # >= 2**11
        total = total_sq = 0
        for start in range(0, n.size, step):
            piece = n[start:start + step]
            total += int(piece.sum())  # |piece| · top <= step · top² < 2**63
            total_sq += int((piece * piece).sum())
        return total << SUM_SHIFT, total_sq << SQUARE_SHIFT
    total = total_sq = 0
    for start in range(0, n.size, _LIMB_PIECE):
        piece = n[start:start + _LIMB_PIECE]
        # n = a·2**16 + b, |a| <= 2**15, 0 <= b < 2**16: a², 2ab/2, b² < 2**32 each, so
        # 2**24 of them sum below 2**56.
        a, b = piece >> 16, piece & 0xFFFF
        total += int(piece.sum())
        total_sq += ((int((a * a).sum()) << 32) + (int((a * b).sum()) << 17)
                     + int((b * b).sum()))
    return total << SUM_SHIFT, total_sq << SQUARE_SHIFT


def _maybe_integer_sums(x: np.ndarray) -> tuple[int, int] | None:
    """:func:`_integer_sums`, skipped at once when one of the first 64 values has a fraction."""
    head = x[:64]
    return _integer_sums(x) if np.array_equal(head, np.trunc(head)) else None


def _chunk_sums(x: np.ndarray) -> tuple[int, int]:
    sums = _maybe_integer_sums(x)
    if sums is not None:
        return sums
    x = x[x != 0]
    if not x.size:
        return 0, 0
    magnitude = np.abs(x)
    if _FLOAT_PATH[0] <= float(magnitude.min()) and float(magnitude.max()) <= _FLOAT_PATH[1]:
        return _float_path(x)
    return _band_path(x)


def exact_sums(values: np.ndarray) -> tuple[int, int]:
    """``(Σx · 2**SUM_SHIFT, Σx² · 2**SQUARE_SHIFT)`` exactly, for finite float64 values.

    Args:
        values: A float64 array without NaN or ±inf.

    Returns:
        Two Python integers (0, 0 for an empty array).
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if not values.size:
        return 0, 0
    sums = _maybe_integer_sums(values)  # integers in one go, without per-chunk passes
    if sums is not None:
        return sums
    total = total_sq = 0
    for start in range(0, values.size, CHUNK):
        t, s = _chunk_sums(values[start:start + CHUNK])
        total += t
        total_sq += s
    return total, total_sq


def exact_sum(values: np.ndarray) -> int:
    """``Σx · 2**SUM_SHIFT`` exactly, for finite float64 values: :func:`exact_sums` without
    the squares (about half the time off the integer path; the weighted moments sum six
    arrays of products).

    Example:
        >>> exact_sum(np.array([0.5, 0.25])) == exact_sums(np.array([0.5, 0.25]))[0]
        True
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if not values.size:
        return 0
    sums = _maybe_integer_sums(values)
    if sums is not None:
        return sums[0]
    total = 0
    for start in range(0, values.size, CHUNK):
        x = values[start:start + CHUNK]
        x = x[x != 0]
        if not x.size:
            continue
        magnitude = np.abs(x)
        if _FLOAT_PATH[0] <= float(magnitude.min()) and float(magnitude.max()) <= _FLOAT_PATH[1]:
            top = math.frexp(float(magnitude.max()))[1]
            total += _sliced_sum(x.copy(), top) >> SUM_SHIFT
        else:
            total += _band_path(x)[0]
    return total


def ratio_to_float(numerator: int, denominator: int) -> float:
    """``numerator / denominator`` (``denominator > 0``) correctly rounded (CPython's integer
    true division), ``±inf`` when the quotient is beyond float64."""
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if numerator > 0 else -math.inf


def exact_mean(total: int, count: int) -> float:
    """The mean ``total / count`` of a :func:`exact_sums` total (``count`` values, or a weight
    total in the same units as ``Σw`` is kept) correctly rounded; 0 when ``count`` is 0.

    Example:
        >>> exact_mean(exact_sums(np.array([0.1, 0.2]))[0], 2) == (0.1 + 0.2) / 2
        True
    """
    return ratio_to_float(total, count << SUM_SHIFT) if count else 0.0


def exact_variance(count: int, total: int, total_sq: int) -> float:
    """Population variance ``(nΣx² - (Σx)²) / n²`` of :func:`exact_sums` totals, correctly
    rounded (0 when ``count`` is 0; ``inf`` when beyond float64). ``count`` may be a weight
    total ``Σw`` with ``Σwx``, ``Σwx²`` (the weighted moments).

    Example:
        >>> exact_variance(3, *exact_sums(np.array([1.0, 2.0, 3.0])))
        0.6666666666666666
    """
    if not count:
        return 0.0
    spread = count * total_sq - total * total  # >= 0 (exact; clamped for safety)
    return ratio_to_float(max(spread, 0), (count * count) << SQUARE_SHIFT)
