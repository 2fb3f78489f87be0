"""Exact weighted moments: the numeric statistics of a feature with ``weights``.

With weights ``w`` (valid: finite, >= 0, see :mod:`~beam_prep.analyzers.vocab.weights`)
over the finite values ``x`` of a feature:

* ``mean = Σwx / Σw`` and the weighted *population* variance
  ``variance = Σw(x - mean)² / Σw = (Σw · Σwx² - (Σwx)²) / (Σw)²``
  (``numpy.average(x, weights=w)`` and ``numpy.average((x - mean)**2, weights=w)``), each
  correctly rounded from exact sums; null when ``Σw = 0``;
* ``count``, ``min`` and ``max`` are over the values with a valid weight (weights do not
  change them);
* quantile boundaries come from tfx-bsl's ``QuantilesSketch`` given the weights (TFT's
  ``tft.quantiles(weights=...)``; :class:`~beam_prep.analyzers.numeric.NumericAccumulator`
  with ``weighted=True``); zero-weight values do not move them.

Sums are exact integers, as unweighted moments (:mod:`exact_sums`): each product ``w·x`` is
split into two floats with no rounding (Dekker's two-product), ``w·x²`` into four, and
their exact sums are added; values or weights beyond ``2**±300`` (where a product's error
term would underflow) are summed as Python fractions, one row at a time. So the statistics
are the same bits whatever the splits, batches and merge order.

Example:
    >>> import numpy as np
    >>> m = WeightedMoments.of(np.array([1.0, 2.0, 4.0]), np.array([1.0, 0.5, 0.5]))
    >>> m.mean, m.variance
    (2.0, 1.5)
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from beam_prep.analyzers.exact_sums import (
    SUM_SHIFT,
    exact_mean,
    exact_sum,
    exact_variance,
    ratio_to_float,
)

__all__ = ["WeightedMoments", "weighted_sums"]

WX_SHIFT = 2 * SUM_SHIFT
"""``Σwx`` is held in units of ``2**-WX_SHIFT``."""
WXX_SHIFT = 3 * SUM_SHIFT
"""``Σwx²`` is held in units of ``2**-WXX_SHIFT``."""
_SAFE = (2.0 ** -300, 2.0 ** 300)
_VELTKAMP = float((1 << 27) + 1)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = a * _VELTKAMP
    hi = c - (c - a)
    return hi, a - hi


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a·b = p + e`` exactly (no underflow in the safe range)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _exact(*parts: np.ndarray) -> int:
    """Exact Σ of float arrays in units of ``2**-SUM_SHIFT``."""
    return sum(exact_sum(p) for p in parts)


def _fraction_sums(x: np.ndarray, w: np.ndarray) -> tuple[int, int, int]:
    sw = swx = swxx = Fraction(0)
    for xi, wi in zip(x.tolist(), w.tolist()):
        fx, fw = Fraction(xi), Fraction(wi)
        sw += fw
        swx += fw * fx
        swxx += fw * fx * fx
    return (int(sw * (1 << SUM_SHIFT)), int(swx * (1 << WX_SHIFT)),
            int(swxx * (1 << WXX_SHIFT)))


def weighted_sums(x: np.ndarray, w: np.ndarray) -> tuple[int, int, int]:
    """Exact ``(Σw, Σwx, Σwx²)`` in units of ``2**-SUM_SHIFT``, ``2**-WX_SHIFT``,
    ``2**-WXX_SHIFT`` for finite ``x`` and valid weights ``w``."""
    ax, aw = np.abs(x), np.abs(w)
    safe = (((ax >= _SAFE[0]) & (ax <= _SAFE[1])) | (x == 0)) & (
        ((aw >= _SAFE[0]) & (aw <= _SAFE[1])) | (w == 0))
    rest = (0, 0, 0)
    if not safe.all():  # rare: products whose error terms would underflow or overflow
        rest = _fraction_sums(x[~safe], w[~safe])
        x, w = x[safe], w[safe]
    p, e = _two_product(w, x)
    sq, sq_e = _two_product(x, x)
    a, b = _two_product(w, sq)
    c, d = _two_product(w, sq_e)
    return (_exact(w) + rest[0], (_exact(p, e) << SUM_SHIFT) + rest[1],
            (_exact(a, b, c, d) << WX_SHIFT) + rest[2])


@dataclasses.dataclass(frozen=True)
class WeightedMoments:
    """Count, exact weighted sums, min and max of the finite values with a valid weight.

    Attributes:
        count: Number of finite values (any weight, zero included).
        weight: ``Σw`` in units of ``2**-SUM_SHIFT``.
        total: ``Σwx`` in units of ``2**-WX_SHIFT``.
        total_sq: ``Σwx²`` in units of ``2**-WXX_SHIFT``.
        minimum: Smallest value (+inf when count is 0).
        maximum: Largest value (-inf when count is 0).
    """

    count: int = 0
    weight: int = 0
    total: int = 0
    total_sq: int = 0
    minimum: float = math.inf
    maximum: float = -math.inf

    def __post_init__(self) -> None:  # one zero: see numeric.Moments
        object.__setattr__(self, "minimum", float(self.minimum) + 0.0)
        object.__setattr__(self, "maximum", float(self.maximum) + 0.0)

    @classmethod
    def of(cls, values: np.ndarray, weights: np.ndarray) -> WeightedMoments:
        """Moments of finite float64 values with their valid weights."""
        if values.size == 0:
            return cls()
        sw, swx, swxx = weighted_sums(values, weights)
        return cls(int(values.size), sw, swx, swxx, float(values.min()), float(values.max()))

    def merge(self, other: WeightedMoments) -> WeightedMoments:
        """Both sets of values (exact: any order gives the same result)."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        return WeightedMoments(self.count + other.count, self.weight + other.weight,
                               self.total + other.total, self.total_sq + other.total_sq,
                               min(self.minimum, other.minimum),
                               max(self.maximum, other.maximum))

    @property
    def weight_total(self) -> float:
        """``Σw`` as the nearest float64."""
        return ratio_to_float(self.weight, 1 << SUM_SHIFT)

    @property
    def mean(self) -> float:
        """``Σwx / Σw`` correctly rounded (0 when ``Σw = 0``)."""
        return exact_mean(self.total, self.weight)

    @property
    def variance(self) -> float:
        """``(Σw·Σwx² - (Σwx)²) / (Σw)²`` correctly rounded (0 when ``Σw = 0``)."""
        return exact_variance(self.weight, self.total, self.total_sq)
