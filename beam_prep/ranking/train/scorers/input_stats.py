"""Statistics of float features on the training lists, for ``model.input_transform``.

Median, interquartile range and ``piecewise_bins + 1`` quantile edges per value of a float
feature's last axis, over the real (non-padding) entries of the first ``max_lists`` training
lists. Computed on training data only (never on validation or test lists).

Example:
    >>> stats = feature_stats(train_ds, ["f"], bins=8)      # doctest: +SKIP
    >>> stats["f"]["edges"].shape                            # doctest: +SKIP
    (1, 9)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from beam_prep.codegen.numeric_layers import numpy_stats
from beam_prep.ranking.train.reader import MASK_KEY


def feature_stats(batches: Iterable[tuple[dict[str, Any], Any]], names: Sequence[str], *,
                  bins: int, max_lists: int = 10_000) -> dict[str, dict[str, np.ndarray]]:
    """Per-feature statistics from ``(features, labels)`` batches (labels < 0 = padding).

    Context features ``[B, ...]`` count once per list; example features ``[B, L, ...]`` once
    per real entry (label >= 0).
    """
    rows: dict[str, list[np.ndarray]] = {n: [] for n in names}
    seen = 0
    for features, labels in batches:
        valid = np.asarray(labels) >= 0
        for n in names:
            x = np.asarray(features[n], dtype="float64")
            if x.ndim >= 2 and x.shape[:2] == valid.shape:
                x = x[valid]
            rows[n].append(x.reshape(x.shape[0], -1))
        seen += valid.shape[0]
        if seen >= max_lists:
            break
    return {n: numpy_stats(np.concatenate(v), bins) for n, v in rows.items()
            if n != MASK_KEY and v}
