"""Masked ranking losses against independent numpy implementations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from beam_prep.errors import SpecError
from beam_prep.ranking.train.losses import get_loss

# Hand-made lists: padding (-1), graded labels, a list with no relevant doc, one fully padded.
LABELS = np.array([
    [2.0, 0.0, 1.0, -1.0, -1.0],
    [0.0, 0.0, 0.0, 0.0, -1.0],
    [1.0, 0.0, 3.0, 2.0, 0.0],
    [-1.0, -1.0, -1.0, -1.0, -1.0],
    [0.0, 1.0, -1.0, -1.0, -1.0],
], dtype=np.float32)
SCORES = np.array([
    [0.3, -1.2, 0.8, 7.0, -5.0],
    [1.0, 2.0, 0.5, -0.5, 3.0],
    [0.1, 0.4, -0.3, 1.5, 0.0],
    [0.5, 0.2, 0.1, 0.0, 1.0],
    [2.0, -1.0, 4.0, 4.0, 4.0],
], dtype=np.float32)


def _valid(y):
    return [i for i, v in enumerate(y) if v >= 0]


def np_softmax(y, s):
    idx = _valid(y)
    if not idx or sum(y[i] for i in idx) == 0:
        return 0.0
    z = [math.exp(s[i]) for i in idx]
    tot = sum(y[i] for i in idx)
    return -sum(y[i] / tot * math.log(zi / sum(z)) for i, zi in zip(idx, z))


def np_softmax_gains(y, s):
    """Softmax CE with targets (2^y - 1) / sum(2^y - 1) over the valid entries."""
    idx = _valid(y)
    g = {i: 2.0 ** y[i] - 1 for i in idx}
    if not idx or sum(g.values()) == 0:
        return 0.0
    log_z = math.log(sum(math.exp(s[i]) for i in idx))
    return -sum(g[i] / sum(g.values()) * (s[i] - log_z) for i in idx)


def np_pairwise_logistic(y, s):
    idx = _valid(y)
    return sum(math.log1p(math.exp(-(s[i] - s[j])))
               for i, j in itertools.permutations(idx, 2) if y[i] > y[j])


def np_list_mle(y, s):
    idx = _valid(y)
    if not idx:
        return 0.0
    order = sorted(idx, key=lambda i: -y[i])  # stable: ties keep list order
    nll = 0.0
    for pos, i in enumerate(order):
        rest = order[pos:]
        nll -= s[i] - math.log(sum(math.exp(s[j]) for j in rest))
    return nll


def np_approx_ndcg(y, s, t):
    idx = _valid(y)
    gains = {i: 2.0 ** y[i] - 1 for i in idx}
    ideal = sorted(gains.values(), reverse=True)
    idcg = sum(g / math.log2(2 + r) for r, g in enumerate(ideal))
    if idcg == 0:
        return 0.0
    dcg = 0.0
    for i in idx:
        rank = 1 + sum(1 / (1 + math.exp(-(s[j] - s[i]) / t)) for j in idx if j != i)
        dcg += gains[i] / math.log2(1 + rank)
    return -dcg / idcg


def np_lambda_ndcg(y, s):
    """Pairs y_i > y_j weighted by |NDCG(order) - NDCG(order with i, j swapped)|."""
    idx = _valid(y)
    gain = {i: 2.0 ** y[i] - 1 for i in idx}
    idcg = sum(g / math.log2(2 + r) for r, g in enumerate(sorted(gain.values(), reverse=True)))
    if idcg == 0:
        return 0.0
    order = sorted(idx, key=lambda i: (-s[i], i))  # ties: earlier entry first

    def dcg(seq):
        return sum(gain[i] / math.log2(2 + r) for r, i in enumerate(seq))

    base, total = dcg(order), 0.0
    for i, j in itertools.permutations(idx, 2):
        if y[i] > y[j]:
            swapped = list(order)
            a, b = swapped.index(i), swapped.index(j)
            swapped[a], swapped[b] = j, i
            weight = abs(base - dcg(swapped)) / idcg
            total += weight * math.log1p(math.exp(-(s[i] - s[j])))
    return total


@pytest.mark.parametrize("name,ref", [
    ("softmax", np_softmax),
    ("lambda_ndcg", np_lambda_ndcg),
    ("pairwise_logistic", np_pairwise_logistic),
    ("list_mle", np_list_mle),
    ("approx_ndcg", lambda y, s: np_approx_ndcg(y, s, 0.1)),
])
def test_loss_matches_numpy_per_list_and_mean(name, ref):
    loss = get_loss(name, reduction=None)
    got = np.asarray(loss(LABELS, SCORES)).reshape(-1)
    want = np.array([ref(y, s) for y, s in zip(LABELS, SCORES)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    mean = float(get_loss(name)(LABELS, SCORES))
    assert mean == pytest.approx(want.mean(), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", ["softmax", "pairwise_logistic", "list_mle", "approx_ndcg",
                                  "lambda_ndcg"])
def test_padded_entries_never_count(name):
    # Changing the scores of padded entries must not change the loss.
    other = SCORES.copy()
    other[LABELS < 0] = 123.0
    loss = get_loss(name, reduction=None)
    np.testing.assert_allclose(np.asarray(loss(LABELS, SCORES)),
                               np.asarray(loss(LABELS, other)), rtol=1e-6, atol=1e-6)


def test_approx_ndcg_tends_to_ndcg_at_low_temperature():
    y = np.array([[3.0, 0.0, 1.0, -1.0]], np.float32)
    s = np.array([[0.1, 0.9, 0.5, 0.0]], np.float32)  # order: doc1(0), doc2(1), doc0(3)
    gains_sorted = [7.0, 1.0, 0.0]
    idcg = sum(g / math.log2(2 + r) for r, g in enumerate(gains_sorted))
    dcg = 0 / math.log2(2) + 1 / math.log2(3) + 7 / math.log2(4)
    got = float(get_loss("approx_ndcg", temperature=1e-3)(y, s))
    assert got == pytest.approx(-dcg / idcg, abs=1e-4)


def test_softmax_gain_targets_match_numpy():
    loss = get_loss("softmax", softmax_targets="gains", reduction=None)
    got = np.asarray(loss(LABELS, SCORES)).reshape(-1)
    want = np.array([np_softmax_gains(y, s) for y, s in zip(LABELS, SCORES)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Differs from label targets where labels are graded (list 0: labels 2, 1 -> gains 3, 1).
    plain = np.asarray(get_loss("softmax", reduction=None)(LABELS, SCORES)).reshape(-1)
    assert abs(got[0] - plain[0]) > 1e-3 and got[4] == pytest.approx(plain[4], abs=1e-6)
    with pytest.raises(SpecError, match=r"softmax_targets.*Received: softmax_targets='exp'"):
        get_loss("softmax", softmax_targets="exp")


def test_unknown_loss_names_the_field():
    with pytest.raises(SpecError, match=r"training.loss.*Received: loss='hinge'"):
        get_loss("hinge")


def test_lambda_ndcg_shifts_the_push_towards_the_top_of_the_list():
    import tensorflow as tf

    # Relevant docs at ranks 2 and 10 of 10, under irrelevant ones.
    y = np.zeros((1, 10), np.float32)
    y[0, 1] = y[0, 9] = 1.0
    s = tf.Variable(-np.arange(10, dtype=np.float32)[None, :])

    def grad(name):
        with tf.GradientTape() as tape:
            value = get_loss(name, reduction=None)(y, s)[0]
        return tape.gradient(value, s).numpy()[0]

    plain, weighted = grad("pairwise_logistic"), grad("lambda_ndcg")
    assert plain[1] < 0 and plain[9] < 0 and weighted[1] < 0 and weighted[9] < 0
    # Plain pairs push the rank-10 doc about 6x harder than the rank-2 one (it loses 8
    # pairs, rank 2 loses 1); weighting by NDCG change raises the rank-2 share by > 1.5x.
    assert weighted[1] / weighted[9] > 1.5 * plain[1] / plain[9]
    # Irrelevant docs are pushed down: plain pairs push the one at rank 1 about 2x harder
    # than the one at rank 9; the weights make that > 20x (rank 1 is what NDCG sees).
    assert weighted[0] > 0 and weighted[8] > 0
    assert plain[0] / plain[8] < 3 and weighted[0] / weighted[8] > 20
