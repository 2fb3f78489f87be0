"""Masked ranking metrics: NDCG@k and MRR@k (keras-rs, deterministic tie handling).

Definitions used everywhere in beam_prep (and in the quality benchmark):

* Entries with a negative label (padding, label ``-1``) are removed from the list first.
* **NDCG@k** = DCG@k / IDCG@k with **gain 2^label − 1** and discount ``1 / log2(1 + rank)``;
  IDCG@k sorts the true labels. A list with no relevant entry (all labels 0) scores **0** and
  still counts in the mean (keras-rs / TF Ranking convention).
* **MRR@k** = ``1 / rank`` of the first entry with label >= 1 within the top k, 0 if none.
* Ties in the scores keep list order (``shuffle_ties=False``), so results are reproducible.
* The value reported is the mean over lists.

Example:
    >>> m = ndcg(2)
    >>> m.update_state([[0.0, 1.0, -1.0]], [[2.0, 1.0, 9.0]])
    >>> round(float(m.result()), 4)  # relevant doc at rank 2: 1/log2(3)
    0.6309
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras


def ndcg(k: int, *, name: str | None = None) -> keras.metrics.Metric:
    """NDCG@k, gain ``2^label - 1``, named ``ndcg_<k>`` unless ``name`` is given."""
    import keras_rs

    return keras_rs.metrics.NDCG(k=k, shuffle_ties=False, name=name or f"ndcg_{k}")


def mrr(k: int, *, name: str | None = None) -> keras.metrics.Metric:
    """MRR@k, named ``mrr_<k>`` unless ``name`` is given."""
    import keras_rs

    return keras_rs.metrics.MeanReciprocalRank(k=k, shuffle_ties=False,
                                               name=name or f"mrr_{k}")


def ranking_metrics(ks: Sequence[int]) -> list[Any]:
    """NDCG@k then MRR@k for every k, in order (names ``ndcg_5``, ``mrr_5``, ...)."""
    return [m for k in ks for m in (ndcg(k), mrr(k))]
