"""Exact validation: every validation list once, ``val_loss`` and metrics as means over lists.

One definition serves Keras ``fit`` (through :func:`validation_callback`, TensorFlow and JAX)
and the custom loop (:class:`~.loop.CustomLoop`), so ``val_*`` values do not depend on the
loop, the backend or ``data.valid_batch_size``:

* The validation dataset (``launcher.DatasetBuilder``) keeps its last partial batch; where
  static shapes are needed (``data.drop_remainder: true``) it pads that batch with empty
  lists, which parse to all-padding entries (label ``-1``).
* A list **counts** when at least one of its entries has a label ``>= 0``
  (:func:`list_weights`); padding lists weigh 0.
* ``val_loss`` = sum of the per-list losses of the counted lists / their number, summed in
  float64 on the host. Keras' own ``evaluate`` weighs each batch by its size and, on a
  dataset of unknown length, adds an empty last step, so its ``val_loss`` changed with the
  batch size; it is not used.
* ``val_<metric>``: the metrics (keras-rs NDCG / MRR, already means over lists) updated with
  the same per-list weights.
* ``training.validation_steps`` caps the number of batches (None = the whole set).

Example:
    >>> v = Validation(loss=get_loss("softmax", reduction=None),            # doctest: +SKIP
    ...                make_metrics=lambda: ranking_metrics([10]))
    >>> v.evaluate(model_scorer(model), valid_ds)                            # doctest: +SKIP
    {'val_loss': 1.3253, 'val_ndcg_10': 0.81, 'val_mrr_10': 0.77}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras
import numpy as np

Scorer = Callable[[Any], Any]


def list_weights(labels: Any) -> np.ndarray:
    """Per-list weights ``[B]``: 1.0 for a list with an entry labelled ``>= 0``, else 0.0.

    Example:
        >>> list_weights(np.array([[1.0, 0.0, -1.0], [-1.0, -1.0, -1.0]]))
        array([1., 0.])
    """
    labels = np.asarray(labels)
    return np.any(labels >= 0, axis=-1).astype(np.float64).reshape(-1)


def model_scorer(model: keras.Model) -> Scorer:
    """Inference scores of ``model`` for a batch of preprocessed numpy features.

    TensorFlow: the model's call in one ``tf.function`` (retraced only for a new shape);
    no collective, so every worker of a multi-worker strategy can run it alone. JAX:
    ``predict_on_batch`` (jit-compiled, follows ``keras.distribution``).
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        call = tf.function(lambda features: model(features, training=False),
                           reduce_retracing=True)
        return lambda features: call(features)
    return model.predict_on_batch


def _batches(dataset: Any) -> Iterator[tuple[Any, np.ndarray]]:
    it = dataset.as_numpy_iterator() if hasattr(dataset, "as_numpy_iterator") else dataset
    for features, labels in it:
        yield features, np.asarray(labels)


@dataclasses.dataclass(frozen=True)
class Validation:
    """Computes ``val_loss`` and ``val_<metric>`` exactly (see the module docstring).

    Attributes:
        loss: The training loss with ``reduction=None`` (one value per list).
        make_metrics: Returns fresh Keras ranking metrics; called once per evaluation.
        steps: At most this many batches (None = the whole dataset).
    """

    loss: Callable[[Any, Any], Any]
    make_metrics: Callable[[], Sequence[keras.metrics.Metric]]
    steps: int | None = None

    def evaluate(self, score: Scorer, dataset: Any) -> dict[str, float]:
        """``{"val_loss": ..., "val_<metric>": ...}`` of ``score`` over ``dataset``.

        Args:
            score: Preprocessed features -> scores ``[B, L]`` (:func:`model_scorer`).
            dataset: Yields ``(features, labels)`` batches (a ``tf.data.Dataset`` or an
                iterable of numpy batches).
        """
        metrics = list(self.make_metrics())
        total, counted = 0.0, 0.0
        for i, (features, labels) in enumerate(_batches(dataset)):
            if self.steps is not None and i >= self.steps:
                break
            scores = np.asarray(score(features), dtype=np.float32)
            weights = list_weights(labels)
            per_list = np.asarray(self.loss(labels, scores), dtype=np.float64).reshape(-1)
            total += float(np.sum(np.where(weights > 0, per_list, 0.0)))
            counted += float(weights.sum())
            for m in metrics:
                m.update_state(labels, scores, sample_weight=weights.astype(np.float32))
        out = {"val_loss": total / counted if counted else float("nan")}
        out.update({f"val_{m.name}": float(m.result()) for m in metrics})
        return out


def validation_callback(validation: Validation, dataset: Any) -> keras.callbacks.Callback:
    """A Keras callback adding :meth:`Validation.evaluate`'s values to each epoch's logs.

    Put it first in ``fit``'s callbacks: the ones after it (``EarlyStopping``,
    ``TensorBoard``, the epoch printer, Keras' ``History``) see the ``val_*`` values.
    """

    class _ExactValidation(keras.callbacks.Callback):
        def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
            self.score = model_scorer(self.model)  # traced once per fit

        def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            if logs is not None:
                logs.update(validation.evaluate(self.score, dataset))

    return _ExactValidation()
