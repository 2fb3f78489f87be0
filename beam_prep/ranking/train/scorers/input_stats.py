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
from beam_prep.ranking.train.mask import MASK_KEY


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


def model_parts(launcher: Any) -> dict[str, Any]:
    """``RankingModelBuilder`` arguments for a ``RankingLauncher``: ``scorer_cls``, ``transforms``.

    ``transforms`` are the ``model.input_transform`` layers of its float features; their
    statistics (``piecewise_linear``, ``robust``) come from one pass over its training lists.
    """
    from beam_prep.ranking.train.scorers import NEEDS_STATS, input_transforms, scorer_class

    hp, pre = launcher.hp, launcher.preprocessor
    names = [n for n in (*pre.context_names, *pre.example_names) if n not in pre.id_rows]
    stats = {}
    if hp.model.resolved_input_transform in NEEDS_STATS:
        batches = launcher.datasets.build(hp.data.train_pattern, hp.data.train_batch_size,
                                          training=False)
        stats = feature_stats(batches.as_numpy_iterator(), names, bins=hp.model.piecewise_bins)
    return {"scorer_cls": scorer_class(hp.model.scorer),
            "transforms": input_transforms(hp.model, names, stats,
                                           list_features=pre.example_names)}
