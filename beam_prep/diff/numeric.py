"""Drift of a numeric feature between two manifests' statistics.

Shifts are in OLD standard deviations (population std, ``sqrt(variance)``):

* ``mean_shift = (new mean - old mean) / old std``;
* ``std_shift = (new std - old std) / old std``;
* ``boundary_shift = max_i |new boundary_i - old boundary_i| / old std`` (same number of
  boundaries only; a boundary stored as ±1.7976931348623157e308 is compared as is);
* ``rank_shift``: the largest number of positions an OLD boundary moves among NEW's
  boundaries (``|searchsorted(new, old_i) - i|``), a scale-free view of the same change;
* ``quartile_shift = max_i |new q_i - old q_i| / old std`` over ``[q25, median, q75]``
  (``scaling: robust``: the centre and scale of its layer), when both sides have quartiles;
  flagged with the boundary threshold, as the quartiles are quantile boundaries too;
* rates per row (``count + missing + nan + inf``): missing, NaN and infinite.

A shift is None when it cannot be computed: a statistic is null on either side (no finite
value), or OLD's std is 0 (then :attr:`NumericDiff.unscaled_change` says whether the value
moved at all). A shift too large for a float is also None, with ``unscaled_change`` True.

Example:
    >>> old = {"count": 4, "missing_count": 0, "nan_count": 0, "infinite_count": 0,
    ...        "mean": 1.0, "variance": 4.0, "boundaries": [0.0, 2.0]}
    >>> new = dict(old, mean=2.0, missing_count=4, boundaries=[1.0, 2.0])
    >>> d = compare_numeric(old, new)
    >>> d.mean_shift, d.boundary_shift, d.missing_rate_change
    (0.5, 0.5, 0.5)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class NumericDiff:
    """How one numeric feature's statistics changed.

    Attributes:
        old_mean: OLD mean (None without a finite value).
        new_mean: NEW mean.
        old_std: OLD population std.
        new_std: NEW population std.
        mean_shift: ``(new mean - old mean) / old std``.
        std_shift: ``(new std - old std) / old std``.
        boundary_shift: Largest absolute boundary move in OLD std units.
        rank_shift: Largest move of an OLD boundary among NEW's boundaries, in positions.
        unscaled_change: A mean, std or boundary changed where OLD std is 0 or the shift
            overflows (the shift is then None).
        missing_rate_change: NEW missing rate minus OLD's.
        nan_rate_change: NEW NaN rate minus OLD's.
        infinite_rate_change: NEW infinite rate minus OLD's.
        old_rows: Rows OLD saw (count + missing + NaN + infinite).
        new_rows: Rows NEW saw.
        old_quartiles: OLD ``[q25, median, q75]`` (None when not recorded or no value).
        new_quartiles: NEW quartiles.
        quartile_shift: Largest absolute quartile move in OLD std units.
    """

    old_mean: float | None
    new_mean: float | None
    old_std: float | None
    new_std: float | None
    mean_shift: float | None
    std_shift: float | None
    boundary_shift: float | None
    rank_shift: int | None
    unscaled_change: bool
    missing_rate_change: float | None
    nan_rate_change: float | None
    infinite_rate_change: float | None
    old_rows: int
    new_rows: int
    old_quartiles: list[float] | None = None
    new_quartiles: list[float] | None = None
    quartile_shift: float | None = None


def _float(stats: dict[str, Any], key: str) -> float | None:
    value = stats.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _std(stats: dict[str, Any]) -> float | None:
    var = _float(stats, "variance")
    return math.sqrt(var) if var is not None and var >= 0 else None


def _rows(stats: dict[str, Any]) -> int:
    return sum(int(stats.get(k) or 0)
               for k in ("count", "missing_count", "nan_count", "infinite_count"))


def _rate_change(old: dict[str, Any], new: dict[str, Any], key: str) -> float | None:
    old_rows, new_rows = _rows(old), _rows(new)
    if not old_rows or not new_rows:
        return None
    return int(new.get(key) or 0) / new_rows - int(old.get(key) or 0) / old_rows


def _scaled(delta: float | None, scale: float | None) -> tuple[float | None, bool]:
    """(delta / scale or None, whether an unscalable non-zero change happened)."""
    if delta is None or scale is None:
        return None, False
    if scale == 0.0 or not math.isfinite(delta):
        return None, delta != 0.0
    value = delta / scale
    return (value, False) if math.isfinite(value) else (None, True)


def _boundaries(stats: dict[str, Any]) -> np.ndarray | None:
    b = stats.get("boundaries")
    if not isinstance(b, list) or not b:
        return None
    return np.asarray(b, dtype=np.float64)


def _quartiles(stats: dict[str, Any]) -> list[float] | None:
    q = stats.get("quartiles")
    if not isinstance(q, list) or len(q) != 3:
        return None
    return [float(v) for v in q]


def compare_numeric(old: dict[str, Any], new: dict[str, Any]) -> NumericDiff:
    """Compares the ``stats`` of a numeric feature in two manifests (docs/artifacts.md).

    Args:
        old: OLD's statistics.
        new: NEW's statistics.

    Returns:
        The :class:`NumericDiff`; every shift is None where it is undefined.
    """
    old_mean, new_mean = _float(old, "mean"), _float(new, "mean")
    old_std, new_std = _std(old), _std(new)
    with np.errstate(over="ignore", invalid="ignore"):
        mean_delta = new_mean - old_mean if old_mean is not None and new_mean is not None \
            else None
        std_delta = new_std - old_std if old_std is not None and new_std is not None else None
        mean_shift, mean_raw = _scaled(mean_delta, old_std)
        std_shift, std_raw = _scaled(std_delta, old_std)
        ob, nb = _boundaries(old), _boundaries(new)
        boundary_shift = rank_shift = None
        bound_raw = False
        if ob is not None and nb is not None and ob.shape == nb.shape:
            delta = float(np.max(np.abs(nb - ob)))
            boundary_shift, bound_raw = _scaled(delta, old_std)
            ranks = np.searchsorted(nb, ob, side="left")
            rank_shift = int(np.max(np.abs(ranks - np.arange(len(ob)))))
        oq, nq = _quartiles(old), _quartiles(new)
        quartile_shift, quart_raw = None, False
        if oq is not None and nq is not None:
            moved = float(np.max(np.abs(np.asarray(nq) - np.asarray(oq))))
            quartile_shift, quart_raw = _scaled(moved, old_std)
    return NumericDiff(
        old_mean=old_mean, new_mean=new_mean, old_std=old_std, new_std=new_std,
        mean_shift=mean_shift, std_shift=std_shift, boundary_shift=boundary_shift,
        rank_shift=rank_shift,
        unscaled_change=mean_raw or std_raw or bound_raw or quart_raw,
        missing_rate_change=_rate_change(old, new, "missing_count"),
        nan_rate_change=_rate_change(old, new, "nan_count"),
        infinite_rate_change=_rate_change(old, new, "infinite_count"),
        old_rows=_rows(old), new_rows=_rows(new),
        old_quartiles=oq, new_quartiles=nq, quartile_shift=quartile_shift,
    )
