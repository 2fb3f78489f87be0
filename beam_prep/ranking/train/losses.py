"""Masked listwise ranking losses.

Conventions (all losses): ``y_true`` and ``y_pred`` are ``[batch, list_size]``; an entry whose
label is negative (the reader pads lists with label ``-1``) is not part of the list: it takes
no probability mass, forms no pair and has no rank. Each loss returns one value per list and
Keras reduces them (``sum_over_batch_size`` by default). A list with no valid entry, or (for
``softmax`` and ``approx_ndcg``) no relevant entry, contributes 0.

=====================  ===========================================================  =========
name                   per-list value                                               source
=====================  ===========================================================  =========
``softmax``            ``-sum_i p_i log softmax(s)_i`` with ``p = g / sum(g)``,     here
                       ``g = y`` (``targets="labels"``, TF Ranking's) or
                       ``g = 2^y - 1`` (``targets="gains"``, NDCG's gain)
``approx_ndcg``        ``-ApproxDCG / IDCG``; ``rank_i = 1 + sum_j sigmoid((s_j -   here
                       s_i) / T)``, gain ``2^y - 1``
``pairwise_logistic``  ``sum_{y_i > y_j} log(1 + exp(-(s_i - s_j)))``                keras-rs
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
        ideal_gains = ops.flip(ops.sort(gains, axis=-1), axis=-1)
        positions = ops.cast(ops.arange(1, size + 1), y_pred.dtype)
        idcg = ops.sum(ideal_gains / ops.log2(1.0 + positions), axis=-1)
        return -ops.divide_no_nan(dcg, idcg)

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "temperature": self.temperature}


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
    if name == "pairwise_logistic":
        return _pairwise_logistic_cls()(**kwargs)
    if name == "list_mle":
        import keras_rs

        return keras_rs.losses.ListMLELoss(name="list_mle_loss", **kwargs)
    raise SpecError(f"`training.loss` must be one of {', '.join(map(repr, LOSSES))}. "
                    f"Received: loss={name!r}")
