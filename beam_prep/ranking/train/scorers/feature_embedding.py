"""``model.feature_embedding_dim``: a learned embedding of every numeric value, on its own.

Gorishniy, Rubachev & Babenko (2022, "On Embeddings for Numerical Features in Tabular Deep
Learning") found that encoding each numeric value piecewise-linearly and then mapping it
through **its own** small linear layer + ReLU (not shared with the other values) before the
network is what lets an MLP approach gradient-boosted trees on tabular data. Each value gets a
learned one-dimensional nonlinearity with ``dim`` outputs; the network then only has to
combine them. :class:`FeatureEmbedding` is that layer:

``[..., D, T] -> [..., D, dim]``, ``out[..., d, :] = act(x[..., d, :] @ W[d] + b[d])``

with one weight matrix ``W[d]`` (``T x dim``) and bias ``b[d]`` per value ``d``. ``T`` is the
number of piecewise-linear bins (``model.input_transform: piecewise_linear``); with another
transform each value is a scalar (``expand=True``: ``[..., D] -> [..., D, 1]`` first).

On the synthetic 5k-query benchmark (BENCHMARKS.md §12) it is the change that closes most of
the gap to LightGBM.

Example:
    >>> layer = FeatureEmbedding(4)
    >>> tuple(layer(np.ones((2, 3, 5, 8), "float32")).shape)
    (2, 3, 5, 4)
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np  # noqa: F401  (doctest)
from keras import ops

from beam_prep.errors import SpecError


@keras.saving.register_keras_serializable(package="beam_prep")
class FeatureEmbedding(keras.layers.Layer):
    """Per-value Dense + activation: ``[..., D, T] -> [..., D, dim]`` (weights not shared).

    Args:
        dim: Outputs per value.
        activation: Keras activation name applied to every output (``relu``).
        expand: The input is ``[..., D]`` (one scalar per value): add ``T = 1`` first.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).
    """

    def __init__(self, dim: int, *, activation: str = "relu", expand: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise SpecError("`model.feature_embedding_dim` must be a positive integer (0 = "
                            f"off). Received: feature_embedding_dim={dim!r}")
        self.dim = dim
        self.activation_name = activation
        self.activation = keras.activations.get(activation)
        self.expand = bool(expand)

    def build(self, input_shape: Any) -> None:  # noqa: D102
        shape = (*input_shape, 1) if self.expand else tuple(input_shape)
        if len(shape) < 3 or shape[-1] is None or shape[-2] is None:
            raise SpecError(f"FeatureEmbedding needs a static [..., D, T] input. Received: "
                            f"{tuple(input_shape)}")
        values, width = int(shape[-2]), int(shape[-1])
        self.kernel = self.add_weight(name="kernel", shape=(values, width, self.dim),
                                      initializer="glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(values, self.dim), initializer="zeros")

    def call(self, x: Any) -> Any:  # noqa: D102
        x = ops.cast(x, self.compute_dtype)
        if self.expand:
            x = ops.expand_dims(x, -1)
        lead = ops.shape(x)[:-2]
        values, width = x.shape[-2], x.shape[-1]
        flat = ops.reshape(x, (-1, values, width))
        y = ops.einsum("nvt,vtk->nvk", flat, self.kernel) + self.bias
        return self.activation(ops.reshape(y, (*lead, values, self.dim)))

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        shape = (*input_shape, 1) if self.expand else tuple(input_shape)
        return (*shape[:-1], self.dim)

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "dim": self.dim, "activation": self.activation_name,
                "expand": self.expand}
