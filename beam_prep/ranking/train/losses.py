"""Masked listwise ranking losses.

Conventions (all losses): ``y_true`` and ``y_pred`` are ``[batch, list_size]``; an entry whose
label is negative (the reader pads lists with label ``-1``) is not part of the list: it takes
no probability mass, forms no pair and has no rank. Each loss returns one value per list and
Keras reduces them (``sum_over_batch_size`` by default). A list with no valid entry, or (for
``softmax``, ``approx_ndcg`` and ``lambda_ndcg``) no relevant entry, contributes 0.

=====================  ===========================================================  =========
name                   per-list value                                               source
=====================  ===========================================================  =========
``softmax``            ``-sum_i p_i log softmax(s)_i`` with ``p = g / sum(g)``,     here
                       ``g = y`` (``targets="labels"``, TF Ranking's) or
                       ``g = 2^y - 1`` (``targets="gains"``, NDCG's gain)
``approx_ndcg``        ``-ApproxDCG / IDCG``; ``rank_i = 1 + sum_j sigmoid((s_j -   here
                       s_i) / T)``, gain ``2^y - 1``
``pairwise_logistic``  ``sum_{y_i > y_j} log(1 + exp(-(s_i - s_j)))``                keras-rs
``lambda_ndcg``        ``sum_{y_i > y_j} |dNDCG_ij| log(1 + exp(-(s_i - s_j)))``,    here
                       ``dNDCG_ij`` = the NDCG change of swapping i and j in the
                       order of the current scores (LambdaRank's weight, LightGBM's
                       ``lambdarank`` objective); weights carry no gradient
``list_mle``           ``-log P(permutation sorted by label | softmax of s)``       keras-rs
=====================  ===========================================================  =========

keras-rs's pairwise and ListMLE losses already ignore entries with negative labels (checked
against numpy in ``tests/ranking/test_losses.py``), so they are used as they are.

Example:
    >>> loss = get_loss("softmax")
    >>> float(loss([[1.0, 0.0, -1.0]], [[0.0, 0.0, 5.0]]))  # padded entry ignored
    0.6931471...
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import LOSSES, SOFTMAX_TARGETS

_NEG = -1e9


def _valid(y_true: Any) -> Any:
    return ops.greater_equal(y_true, 0.0)


@keras.saving.register_keras_serializable(package="beam_prep")
class SoftmaxLoss(keras.losses.Loss):
    """Listwise softmax cross-entropy over the valid entries of each list.

    The target distribution of a list is its labels normalised to sum 1 (``targets="labels"``,
    TF Ranking's definition) or its NDCG gains ``2^label - 1`` normalised to sum 1
    (``targets="gains"``: a label-2 document then weighs 3x a label-1 one, as in NDCG).

    Args:
        targets: ``"labels"`` or ``"gains"``.
        name: Loss name.
        **kwargs: ``reduction``, ``dtype`` of ``keras.losses.Loss``.

    Example:
        >>> float(SoftmaxLoss()([[2.0, 0.0]], [[0.0, 0.0]]))
        0.6931471...
        >>> round(float(SoftmaxLoss(targets="gains")([[2.0, 1.0]], [[0.0, 0.0]])), 4)
        0.6931
    """

    def __init__(self, targets: str = "labels", name: str = "softmax_loss",
                 **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        if targets not in SOFTMAX_TARGETS:
            raise SpecError(f"`training.softmax_targets` must be one of "
                            f"{', '.join(map(repr, SOFTMAX_TARGETS))}. Received: "
                            f"softmax_targets={targets!r}")
        self.targets = targets

    def call(self, y_true: Any, y_pred: Any) -> Any:  # noqa: D102
        y_pred = ops.convert_to_tensor(y_pred)
        y_true = ops.cast(ops.convert_to_tensor(y_true), y_pred.dtype)
        valid = _valid(y_true)
        labels = ops.where(valid, y_true, 0.0)
        if self.targets == "gains":
            labels = ops.power(2.0, labels) - 1.0
        total = ops.sum(labels, axis=-1, keepdims=True)
        p = ops.divide_no_nan(labels, total)
        logits = ops.where(valid, y_pred, _NEG)
        log_p = ops.log_softmax(logits, axis=-1)
        return -ops.sum(ops.where(valid, p * log_p, 0.0), axis=-1)

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "targets": self.targets}


@keras.saving.register_keras_serializable(package="beam_prep")
class ApproxNDCGLoss(keras.losses.Loss):
    """Negative approximate NDCG (Qin, Liu & Li 2010) with gain ``2^label - 1``.

    The rank of entry ``i`` is smoothed as ``1 + sum_{j != i, j valid} sigmoid((s_j - s_i) /
    temperature)``; the ideal DCG uses the exact sorted labels.

    Args:
        temperature: Smoothing of the rank (smaller = closer to the true rank).
        name: Loss name.
        **kwargs: ``reduction``, ``dtype`` of ``keras.losses.Loss``.

    Example:
        >>> round(float(ApproxNDCGLoss(temperature=0.01)([[1.0, 0.0]], [[5.0, 0.0]])), 4)
        -1.0
    """

    def __init__(self, temperature: float = 0.1, name: str = "approx_ndcg_loss",
                 **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        if temperature <= 0:
            raise SpecError(f"`temperature` must be > 0. Received: temperature={temperature}")
        self.temperature = float(temperature)

    def call(self, y_true: Any, y_pred: Any) -> Any:  # noqa: D102
        y_pred = ops.convert_to_tensor(y_pred)
        y_true = ops.cast(ops.convert_to_tensor(y_true), y_pred.dtype)
        valid = _valid(y_true)
        validf = ops.cast(valid, y_pred.dtype)
        labels = ops.where(valid, y_true, 0.0)
        gains = ops.where(valid, ops.power(2.0, labels) - 1.0, 0.0)
        # diff[b, i, j] = s_j - s_i
        diff = ops.expand_dims(y_pred, 1) - ops.expand_dims(y_pred, 2)
        pair = ops.sigmoid(diff / self.temperature) * ops.expand_dims(validf, 1)
        size = ops.shape(y_pred)[-1]
        pair = pair * (1.0 - ops.eye(size, dtype=y_pred.dtype))
        ranks = 1.0 + ops.sum(pair, axis=-1)
        dcg = ops.sum(gains / (ops.log2(1.0 + ranks)), axis=-1)
        idcg = _ideal_dcg(gains, size, y_pred.dtype)
        return -ops.divide_no_nan(dcg, idcg)

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "temperature": self.temperature}


def _ideal_dcg(gains: Any, size: Any, dtype: Any) -> Any:
    """DCG of ``gains`` (``[batch, list_size]``, 0 for padding) sorted best first."""
    ideal = ops.flip(ops.sort(gains, axis=-1), axis=-1)
    positions = ops.cast(ops.arange(1, size + 1), dtype)
    return ops.sum(ideal / ops.log2(1.0 + positions), axis=-1)


@keras.saving.register_keras_serializable(package="beam_prep")
class LambdaNDCGLoss(keras.losses.Loss):
    """Pairwise logistic loss, each pair weighted by the NDCG change of swapping it.

    For every valid pair with ``y_i > y_j`` the loss adds ``|ΔNDCG_ij| · log(1 + exp(-(s_i -
    s_j)))`` where ``|ΔNDCG_ij| = |g_i - g_j| · |1/log2(1 + r_i) - 1/log2(1 + r_j)| / IDCG``,
    ``g = 2^y - 1`` and ``r`` the 1-based rank of each entry in the current scores (ties
    broken by position in the list). This is LambdaRank's weighting (Burges 2010; LambdaLoss,
    Wang et al. 2018, frames it as a loss), the objective of LightGBM's ``lambdarank``: pairs
    that move documents across the top of the list count most, so long lists are trained
    for their top, as NDCG@k scores them. The ranks and weights are constants of the
    gradient.

    Args:
        name: Loss name.
        **kwargs: ``reduction``, ``dtype`` of ``keras.losses.Loss``.

    Example:
        >>> loss = LambdaNDCGLoss(reduction=None)
        >>> # one pair, tied: weight 1 - 1/log2(3), loss log(2)
        >>> [round(float(v), 4) for v in loss([[1.0, 0.0]], [[0.0, 0.0]])]
        [0.2558]
    """

    def __init__(self, name: str = "lambda_ndcg_loss", **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)

    def call(self, y_true: Any, y_pred: Any) -> Any:  # noqa: D102
        y_pred = ops.convert_to_tensor(y_pred)
        dtype = y_pred.dtype
        y_true = ops.cast(ops.convert_to_tensor(y_true), dtype)
        valid = _valid(y_true)
        gains = ops.where(valid, ops.power(2.0, ops.where(valid, y_true, 0.0)) - 1.0, 0.0)
        size = ops.shape(y_pred)[-1]
        # rank_i = 1 + #{valid j scored above i, or tied and earlier}: padding never ranks.
        s = ops.stop_gradient(y_pred)
        s_i, s_j = ops.expand_dims(s, 2), ops.expand_dims(s, 1)
        index = ops.arange(size)
        earlier = ops.expand_dims(index, 0) < ops.expand_dims(index, 1)  # [i, j]: j < i
        above = ops.logical_or(s_j > s_i, ops.logical_and(ops.equal(s_j, s_i), earlier))
        above = ops.logical_and(above, ops.expand_dims(valid, 1))
        ranks = 1.0 + ops.sum(ops.cast(above, dtype), axis=-1)
        discount = 1.0 / ops.log2(1.0 + ranks)
        idcg = _ideal_dcg(gains, size, dtype)
        delta = (ops.abs(ops.expand_dims(gains, 2) - ops.expand_dims(gains, 1))
                 * ops.abs(ops.expand_dims(discount, 2) - ops.expand_dims(discount, 1)))
        weight = ops.divide_no_nan(delta, ops.reshape(idcg, (-1, 1, 1)))
        pairs = ops.logical_and(
            ops.logical_and(ops.expand_dims(valid, 2), ops.expand_dims(valid, 1)),
            ops.expand_dims(y_true, 2) > ops.expand_dims(y_true, 1))
        margin = ops.expand_dims(y_pred, 2) - ops.expand_dims(y_pred, 1)  # s_i - s_j
        terms = ops.stop_gradient(weight) * ops.softplus(-margin)
        return ops.sum(ops.where(pairs, terms, 0.0), axis=(-2, -1))


_PAIRWISE: list[type] = []


def _pairwise_logistic_cls() -> type:
    """keras-rs pairwise logistic loss, summed to one value per list.

    keras-rs returns one value per *item* (the sum over its pairs), so its default reduction
    divides by ``batch * list_size``; summing per list first makes the reduced value the mean
    over lists, like the other losses.
    """
    if not _PAIRWISE:
        import keras_rs

        @keras.saving.register_keras_serializable(package="beam_prep")
        class PairwiseLogisticLoss(keras_rs.losses.PairwiseLogisticLoss):
            def __init__(self, name: str = "pairwise_logistic_loss", **kwargs: Any) -> None:
                super().__init__(name=name, **kwargs)

            def call(self, y_true: Any, y_pred: Any) -> Any:
                per_item = super().call(y_true, y_pred)
                return ops.sum(per_item, axis=-1) if len(per_item.shape) > 1 else per_item

        _PAIRWISE.append(PairwiseLogisticLoss)
    return _PAIRWISE[0]


def get_loss(name: str, *, softmax_targets: str = "labels", **kwargs: Any) -> keras.losses.Loss:
    """The loss called ``name`` (one of ``hparams.LOSSES``).

    Args:
        name: ``training.loss``.
        softmax_targets: ``training.softmax_targets`` (``softmax`` only).
        **kwargs: Passed to the loss (``reduction``, ``temperature`` for ``approx_ndcg``).

    Raises:
        SpecError: Unknown name.
    """
    if name == "softmax":
        return SoftmaxLoss(targets=softmax_targets, **kwargs)
    if name == "approx_ndcg":
        return ApproxNDCGLoss(**kwargs)
    if name == "lambda_ndcg":
        return LambdaNDCGLoss(**kwargs)
    if name == "pairwise_logistic":
        return _pairwise_logistic_cls()(**kwargs)
    if name == "list_mle":
        import keras_rs

        return keras_rs.losses.ListMLELoss(name="list_mle_loss", **kwargs)
    raise SpecError(f"`training.loss` must be one of {', '.join(map(repr, LOSSES))}. "
                    f"Received: loss={name!r}")
