"""Mutual information of each token with a label, as ``tft.vocabulary(labels=...)`` scores it.

Pure numpy over one feature's merged label counts (:mod:`beam_prep.analyzers.label.counts`):
``n`` rows with a label, ``y_j`` rows of label ``j``, ``x_i`` rows holding token ``i`` and
``n_ij`` of those with label ``j``. TF Transform 1.21
(``beam/analyzer_impls.py: _calculate_mutual_information_for_feature_value``) scores a token
as

``MI_i = sum_j  m_ij * (log2(m_ij) + log2(n) - log2(x_i) - log2(y_j))``

over the labels with ``y_j > 0``, where ``m_ij = clip(n_ij / x_i, 1e-6, 1 - 1e-6) * x_i``
(so a label never seen with the token still adds a small negative term) and a label adds
nothing when ``|x_i * y_j / n - m_ij| < min_diff_from_avg`` (the smoothing). The sum is not
divided by ``n``: a score reads like a count. A token present in every row scores 0. With
``adjusted`` the expected mutual information of ``(x_i, y_j)`` under the hypergeometric
distribution (the same labels as the MI sum) is subtracted: adjusted MI without its
normalisation, as TFT does. ``min_diff_from_avg=None`` is TFT's
``calculate_recommended_min_diff_from_avg(n)``.

Differences from TFT, all below float noise: counts here are exact (float64 sums of whole
numbers) where TFT keeps float32 running means, and the expected-MI sums are numpy sums.

Example:
    >>> import numpy as np
    >>> s = scores(np.array([3.0, 1.0]), {0: np.array([3.0, 0.0]), 1: np.array([0.0, 1.0])},
    ...            {0: 3.0, 1: 1.0}, min_diff_from_avg=0.0)
    >>> [round(float(v), 3) for v in s]
    [1.245, 2.0]
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["EPSILON", "expected_mutual_information", "recommended_min_diff_from_avg",
           "scores"]

#: TFT's ``_clip_probability`` epsilon.
EPSILON = 1e-6


def recommended_min_diff_from_avg(n: float) -> int:
    """TFT's ``calculate_recommended_min_diff_from_avg``: 2 up to 10,000 rows, 25 from
    1,000,000, linear (truncated to an integer) in between.

    Example:
        >>> [recommended_min_diff_from_avg(n) for n in (100, 10_000, 505_000, 2_000_000)]
        [2, 2, 13, 25]
    """
    small, large, low, high = 10_000, 1_000_000, 2, 25
    return int(min(high, max(low, (n - small) / (large - small) * (high - low) + low)))


def expected_mutual_information(n: float, x: float, y: float) -> float:
    """The expected partial MI of a token seen ``x`` times and a label seen ``y`` times
    among ``n`` rows, over the hypergeometric distribution of their co-occurrence.

    The log-probabilities follow TFT's recurrence (one ``lgamma`` at the first point, then
    ratios), vectorised; the sum is divided by the summed probabilities as TFT does.

    Example:
        >>> round(expected_mutual_information(4, 2, 2), 6)
        0.333333
    """
    if x == 0 or y == 0:
        return 0.0
    start, end = int(round(max(0, x + y - n))), int(round(min(x, y)))
    lg = math.lgamma
    numerator = lg(x + 1) + lg(y + 1) + lg(n - x + 1) + lg(n - y + 1)
    first = lg(n + 1) + lg(start + 1) + lg(x - start + 1) + lg(y - start + 1) + lg(
        n - x - y + start + 1)
    nj = np.arange(start, end + 1, dtype=np.float64)
    step = (np.log(nj[:-1] + 1) - np.log(x - nj[:-1]) - np.log(y - nj[:-1])
            + np.log(n - x - y + nj[:-1] + 1))
    denominator = first + np.concatenate([[0.0], np.cumsum(step)])
    p = np.exp(numerator - denominator)
    coefficient = -math.log2(x) - math.log2(y) + math.log2(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(nj != 0, nj * (coefficient + np.log2(nj)) * p, 0.0)
    return float(terms.sum() / p.sum())


def scores(x: np.ndarray, joint: dict[int, np.ndarray], label_rows: dict[int, float], *,
           min_diff_from_avg: float | None, adjusted: bool = False) -> np.ndarray:
    """The (adjusted) mutual information of every token with the label.

    Args:
        x: Rows holding each token (float64; weights may make them fractional later).
        joint: Label → rows holding each token with that label (aligned with ``x``; a
            label absent here co-occurs with no token).
        label_rows: Label → rows with that label (``y_j``); ``n`` is their sum.
        min_diff_from_avg: The smoothing threshold; None = :func:`recommended_min_diff_from_avg`.
        adjusted: Subtract the expected mutual information.

    Returns:
        float64 scores aligned with ``x`` (NaN for every token when ``n`` is 0).
    """
    x = np.asarray(x, dtype=np.float64)
    n = float(sum(label_rows.values()))
    if n == 0:
        return np.full(len(x), np.nan)
    if min_diff_from_avg is None:
        min_diff_from_avg = recommended_min_diff_from_avg(n)
    out = np.zeros(len(x))
    emi_cache: dict[tuple[float, float], float] = {}
    safe_x = np.where(x > 0, x, 1.0)
    for label in sorted(label_rows):
        y = float(label_rows[label])
        if y == 0:
            continue
        n_ij = joint.get(label, np.zeros(len(x)))
        m = np.clip(n_ij / safe_x, EPSILON, 1 - EPSILON) * x
        keep = np.abs(x * y / n - m) >= min_diff_from_avg
        with np.errstate(divide="ignore", invalid="ignore"):
            part = m * ((np.log2(m) + math.log2(n)) - (np.log2(safe_x) + math.log2(y)))
        out += np.where(keep & (x > 0), part, 0.0)
        if adjusted:
            emi = np.zeros(len(x))
            for i in np.flatnonzero(keep & (x > 0)):
                key = (float(x[i]), y)
                if key not in emi_cache:
                    emi_cache[key] = expected_mutual_information(n, key[0], y)
                emi[i] = emi_cache[key]
            out -= emi
    constant = np.round(x) == round(n)  # a token in every row carries no information
    out[constant] = 0.0
    return out
