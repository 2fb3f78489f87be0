"""NDCG@k (gain 2^l - 1) and MRR@k against independent numpy implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from beam_prep.ranking.train.metrics import mrr, ndcg, ranking_metrics

LABELS = np.array([
    [2.0, 0.0, 1.0, -1.0, -1.0],   # padded
    [0.0, 0.0, 0.0, 0.0, -1.0],    # no relevant doc -> 0, still counted
    [1.0, 0.0, 3.0, 2.0, 0.0],
    [0.0, 1.0, -1.0, -1.0, -1.0],
    [4.0, 1.0, 0.0, 2.0, 1.0],
], dtype=np.float32)
SCORES = np.array([
    [0.3, -1.2, 0.8, 7.0, 9.0],    # padded entries have the highest scores: must be ignored
    [1.0, 2.0, 0.5, -0.5, 3.0],
    [0.1, 0.4, -0.3, 1.5, 0.0],
    [2.0, -1.0, 4.0, 4.0, 4.0],
    [0.5, 0.9, 0.3, 0.7, 0.1],
], dtype=np.float32)


def np_ndcg(y, s, k):
    idx = [i for i in range(len(y)) if y[i] >= 0]
    order = sorted(idx, key=lambda i: -s[i])[:k]
    dcg = sum((2 ** y[i] - 1) / math.log2(r + 2) for r, i in enumerate(order))
    ideal = sorted((y[i] for i in idx), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def np_mrr(y, s, k):
    idx = [i for i in range(len(y)) if y[i] >= 0]
    order = sorted(idx, key=lambda i: -s[i])[:k]
    for r, i in enumerate(order):
        if y[i] >= 1:
            return 1.0 / (r + 1)
    return 0.0


@pytest.mark.parametrize("k", [1, 2, 3, 5, 10])
def test_ndcg_matches_numpy(k):
    m = ndcg(k)
    m.update_state(LABELS, SCORES)
    want = np.mean([np_ndcg(y, s, k) for y, s in zip(LABELS, SCORES)])
    assert float(m.result()) == pytest.approx(want, abs=1e-6)
    assert m.name == f"ndcg_{k}"


@pytest.mark.parametrize("k", [1, 2, 3, 10])
def test_mrr_matches_numpy(k):
    m = mrr(k)
    m.update_state(LABELS, SCORES)
    want = np.mean([np_mrr(y, s, k) for y, s in zip(LABELS, SCORES)])
    assert float(m.result()) == pytest.approx(want, abs=1e-6)


def test_metric_accumulates_over_batches_as_mean_over_lists():
    m = ndcg(3)
    m.update_state(LABELS[:2], SCORES[:2])
    m.update_state(LABELS[2:], SCORES[2:])
    want = np.mean([np_ndcg(y, s, 3) for y, s in zip(LABELS, SCORES)])
    assert float(m.result()) == pytest.approx(want, abs=1e-6)


def test_hand_values():
    # list 0, k=5: order by score among valid = doc2(1), doc0(2), doc1(0)
    dcg = 1 / math.log2(2) + 3 / math.log2(3)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    m = ndcg(5)
    m.update_state(LABELS[:1], SCORES[:1])
    assert float(m.result()) == pytest.approx(dcg / idcg, abs=1e-6)
    m = ndcg(5)
    m.update_state(LABELS[1:2], SCORES[1:2])
    assert float(m.result()) == 0.0


def test_ranking_metrics_names():
    assert [m.name for m in ranking_metrics((5, 10))] == ["ndcg_5", "mrr_5", "ndcg_10", "mrr_10"]
