"""``model.feature_dropout``: drop whole features of a list while training.

Ordinary dropout (``model.dropout``) zeroes single hidden units. Many ranking data sets carry
features that are mostly noise; a network that can lean on every one of them overfits the
noisy labels. :class:`FeatureDropout` zeroes a **whole float feature for a whole list** (every
entry, every value and every embedding output of it) with probability ``rate`` while training,
and scales the kept ones by ``1 / (1 - rate)``, so the network learns to rank without any one
feature and leans less on the ones that carry little signal. At inference it is the identity
(nothing to export beyond the layer's configuration).

Placement: after ``model.input_transform`` and ``model.feature_embedding_dim`` (the last of the
feature's input layers), on every float feature the scorer takes; id features (embeddings) and
the list mask are left alone. The decision is drawn per list (the first axis) and per feature.

On the synthetic 5k-query benchmark (BENCHMARKS.md §12), chosen on a holdout of the training
lists: rate 0.1 on top of dropout 0.3.

Example:
    >>> layer = FeatureDropout(0.5, seed=0)
    >>> x = np.ones((4, 3, 2), "float32")
    >>> bool(np.all(np.asarray(layer(x)) == x))     # inference: identity
    True
    >>> kept = np.asarray(layer(x, training=True))  # each list: all 0 or all 2
    >>> sorted(set(kept.reshape(4, -1).std(axis=1).tolist()))
    [0.0]
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np  # noqa: F401  (doctest)
from keras import ops

from beam_prep.errors import SpecError


@keras.saving.register_keras_serializable(package="beam_prep")
class FeatureDropout(keras.layers.Layer):
    """Zeroes the whole input of a list (first axis) with probability ``rate`` while training.

    With ``widths`` the input holds several features side by side on axis ``-2`` (``[B, ...,
    sum(widths), dim]``, what the joint piecewise-linear embedding outputs): feature ``i``
    spans ``widths[i]`` entries of that axis, and each feature of each list is dropped on its
    own.

    Args:
        rate: Probability of dropping the feature for one list, ``0 <= rate < 1``.
        seed: Seed of the layer's random generator.
        widths: Entries of axis ``-2`` per feature (None: the input is one feature).
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).
    """

    def __init__(self, rate: float, *, seed: int | None = None,
                 widths: tuple[int, ...] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if (isinstance(rate, bool) or not isinstance(rate, (int, float))
                or not 0.0 <= rate < 1.0):
            raise SpecError("`model.feature_dropout` must be a number >= 0 and < 1 (0 = off). "
                            f"Received: feature_dropout={rate!r}")
        self.rate = float(rate)
        self.seed = seed
        self.widths = tuple(int(w) for w in widths) if widths is not None else None
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, x: Any, training: bool | None = None) -> Any:  # noqa: D102
        if not training or self.rate == 0.0:
            return x
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        if self.widths is not None:
            shape = (*shape[:-2], len(self.widths), 1)
        keep = keras.random.uniform(shape, seed=self.seed_generator) >= self.rate
        if self.widths is not None and set(self.widths) != {1}:
            keep = ops.repeat(keep, self.widths, axis=-2)
        return ops.where(keep, x / (1.0 - self.rate), ops.zeros_like(x))

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return input_shape

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "widths": self.widths}
