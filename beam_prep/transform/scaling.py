"""The numeric scaling layers (``scaling: log1p | robust | piecewise_linear``) in numpy.

The same float32 operations, in the same order, as the Keras layers of
:mod:`beam_prep.codegen.numeric_layers` (which the generated module copies); checked against
them in ``tests/transform/test_equality.py`` (within 1 ulp: ``log1p`` is libm's, not
TensorFlow's). Input: a float32 ``(n,)`` array of a numeric feature's values (NaN = missing).

Example:
    >>> import numpy as np
    >>> signed_log1p(np.array([-1.0, 0.0], np.float32)).tolist()
    [-0.6931471824645996, 0.0]
    >>> piecewise_linear(np.array([2.0], np.float32), [[0.0, 1.0, 3.0]]).tolist()
    [[1.0, 0.5]]
"""

from __future__ import annotations

from typing import Any

import numpy as np


def signed_log1p(x: np.ndarray) -> np.ndarray:
    """``sign(x) * log1p(|x|)`` in float32."""
    x = np.asarray(x, np.float32)
    return (np.sign(x) * np.log1p(np.abs(x))).astype(np.float32)


def robust(x: np.ndarray, median: Any, iqr: Any) -> np.ndarray:
    """``(x - float32(median)) * float32(1 / iqr)``; an IQR of 0 or non-finite divides by 1."""
    spread = float(iqr) if np.isfinite(iqr) and float(iqr) > 0 else 1.0
    x = np.asarray(x, np.float32)
    return ((x - np.float32(median)) * np.float32(1.0 / spread)).astype(np.float32)


def piecewise_linear(x: np.ndarray, edges: list[list[float]]) -> np.ndarray:
    """``(n, T)`` piecewise linear encoding of ``(n,)`` values over one row of ``T + 1`` edges.

    Empty bins (equal edges) are steps (1 at or above the edge); the first bin is not
    clipped below, the last not above; NaN gives NaN.
    """
    # Edges of ±1.7976931348623157e308 (a column of many infinite values) overflow float32
    # and their widths; inf * 0 is NaN: TensorFlow computes the same values without a word,
    # so numpy's RuntimeWarnings are silenced here.
    with np.errstate(over="ignore", invalid="ignore"):
        row = np.asarray(edges[0], np.float64)
        width = np.diff(row)
        left = row[:-1].astype(np.float32)
        inv = np.where(width > 0, 1.0 / np.where(width > 0, width, 1.0), 0.0).astype(np.float32)
        is_step = (width <= 0).astype(np.float32)
        bins = len(width)
        low = np.where(np.arange(bins) == 0, -np.inf, 0.0).astype(np.float32)
        high = np.where(np.arange(bins) == bins - 1, np.inf, 1.0).astype(np.float32)
        v = np.asarray(x, np.float32)[:, None]
        # ramp * (1 - is_step) + step * is_step, in place (same float32 ops, fewer copies)
        value = np.subtract(v, left)
        value *= inv
        value *= np.float32(1.0) - is_step
        step = np.greater_equal(v, left).astype(np.float32)
        step *= is_step
        value += step
        np.maximum(value, low, out=value)
        return np.minimum(value, high, out=value)
