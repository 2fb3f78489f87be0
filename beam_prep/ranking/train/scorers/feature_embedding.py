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

**Piecewise-linear values, fused** (``edges`` given; what ``model.input_transform:
piecewise_linear`` with ``feature_embedding_dim`` builds): the layer takes the raw values
``[..., D]`` and computes ``act(PLE(x) @ W[d] + b[d])`` without the ``T``-wide encoding. A
value ``x`` in bin ``k`` encodes as ``1`` in the bins before ``k``, its ramp (or step) ``v`` in
bin ``k`` and ``0`` after, so ``PLE(x) @ W[d] = C[d, k] + v * W[d, k]`` with ``C`` the
exclusive cumulative sum of ``W[d]`` over the bins: a bin index and one gather of
``[C | W | left edge, 1 / width, step]`` instead of a ``[N, D, T]`` tensor and a product
(issue 31 measured the unfused form at 30x the dnn's device step on an H200). Same
weights, same values (float32 rounding of the sum aside;
``tests/ranking/test_feature_embedding_fused.py`` checks it against
:class:`~beam_prep.codegen.numeric_layers.PiecewiseLinear` + the unfused layer).

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
        edges: ``D`` rows of ``T + 1`` piecewise-linear bin edges: the input is the raw
            ``[..., D]`` values, encoded as ``PiecewiseLinear(edges)`` would, fused with the
            embedding (see the module docstring). Not with ``expand``.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).
    """

    def __init__(self, dim: int, *, activation: str = "relu", expand: bool = False,
                 edges: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise SpecError("`model.feature_embedding_dim` must be a positive integer (0 = "
                            f"off). Received: feature_embedding_dim={dim!r}")
        self.dim = dim
        self.activation_name = activation
        self.activation = keras.activations.get(activation)
        self.expand = bool(expand)
        self.encoding = None
        if edges is not None:
            from beam_prep.codegen.numeric_layers import PiecewiseLinear

            if self.expand:
                raise SpecError("FeatureEmbedding takes `edges` (piecewise-linear input) or "
                                "`expand` (scalar input), not both.")
            self.encoding = PiecewiseLinear([list(map(float, r)) for r in edges])

    def _weight_shape(self, input_shape: Any) -> tuple[int, ...]:
        if self.encoding is not None:
            return (*input_shape, len(self.encoding.edges[0]) - 1)
        return (*input_shape, 1) if self.expand else tuple(input_shape)

    def build(self, input_shape: Any) -> None:  # noqa: D102
        shape = self._weight_shape(input_shape)
        if len(shape) < 3 or shape[-1] is None or shape[-2] is None:
            raise SpecError(f"FeatureEmbedding needs a static [..., D, T] input. Received: "
                            f"{tuple(input_shape)}")
        values, width = int(shape[-2]), int(shape[-1])
        self.kernel = self.add_weight(name="kernel", shape=(values, width, self.dim),
                                      initializer="glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(values, self.dim), initializer="zeros")
        if self.encoding is not None:  # fused: only its constants are read, it is never called
            self.encoding.build(input_shape)  # (an unbuilt sublayer makes fit rebuild the model)

    def call(self, x: Any) -> Any:  # noqa: D102
        x = ops.cast(x, self.compute_dtype)
        if self.encoding is not None:
            return self._fused(x)
        if self.expand:
            x = ops.expand_dims(x, -1)
        lead = ops.shape(x)[:-2]
        values, width = x.shape[-2], x.shape[-1]
        flat = ops.reshape(x, (-1, values, width))
        y = ops.einsum("nvt,vtk->nvk", flat, self.kernel) + self.bias
        return self.activation(ops.reshape(y, (*lead, values, self.dim)))

    def _fused(self, x: Any) -> Any:
        """``act(PLE(x) @ W[d] + b[d])`` from the bin index and one gather (``[..., D]``)."""
        enc, dt = self.encoding, x.dtype
        values, bins = self.kernel.shape[0], self.kernel.shape[1]
        lead = ops.shape(x)[:-1]
        flat = ops.reshape(x, (-1, values))                                    # [N, D]
        if bins > 1:
            inner = ops.convert_to_tensor([row[1:-1] for row in enc.edges], dt)  # [D, T-1]
            k = ops.sum(ops.cast(ops.greater_equal(flat[..., None], inner), "int32"), -1)
        else:
            k = ops.zeros_like(ops.cast(flat, "int32"))
        before = ops.cumsum(self.kernel, axis=1) - self.kernel                 # C: [D, T, dim]
        consts = ops.stack([ops.convert_to_tensor(enc._left, dt),
                            ops.convert_to_tensor(enc._inv, dt),
                            ops.convert_to_tensor(enc._step, dt)], axis=-1)     # [D, T, 3]
        table = ops.reshape(ops.concatenate([before, self.kernel, consts], -1),
                            (values * bins, 2 * self.dim + 3))
        rows = ops.take(table, k + ops.arange(values, dtype="int32") * bins, axis=0)
        c, w = rows[..., :self.dim], rows[..., self.dim:2 * self.dim]
        left, inv, step = (rows[..., 2 * self.dim + i] for i in range(3))
        ramp = (flat - left) * inv
        v = ramp * (1.0 - step) + ops.cast(ops.greater_equal(flat, left), dt) * step
        y = c + v[..., None] * w + self.bias
        return self.activation(ops.reshape(y, (*lead, values, self.dim)))

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return (*self._weight_shape(input_shape)[:-1], self.dim)

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "dim": self.dim, "activation": self.activation_name,
                "expand": self.expand,
                "edges": self.encoding.edges if self.encoding is not None else None}


class JointEmbedding:
    """:class:`FeatureEmbedding` (fused piecewise-linear) and ``FeatureDropout`` of several
    list features at once: ``[x_1 .. x_n]`` (``[B, L, D_i]``) -> ``[B, L, sum(D_i), dim]``,
    feature ``i``'s values at its offset: what the scorer flattens into the same entry vector
    as the per-feature outputs side by side (no split: a split of ``n`` slices joined again
    costs more than the embedding itself on XLA CPU).

    One embedding layer over the features side by side (``[B, L, sum(D_i)]``: one bin index,
    one gather and, in training, one scatter for all of them) instead of one layer per
    feature: the same per-value weights (``kernel[d]`` is value ``d``'s, in feature order),
    the same outputs to float rounding; then one ``FeatureDropout(widths=D_i)`` drawing each
    feature of each list on its own (what one dropout per feature draws, from one random
    stream instead of ``n``). The per-feature layers cost a device program of ``n`` x their
    small ops (BENCHMARKS.md §15).

    Args:
        dim: Outputs per value.
        edges: Per feature, its ``[D_i, T + 1]`` bin edges (the same ``T`` for all).
        dropout: ``model.feature_dropout`` (0: none).
    """

    def __init__(self, dim: int, edges: Any, *, dropout: float = 0.0) -> None:
        from beam_prep.ranking.train.scorers.feature_dropout import FeatureDropout

        rows = [list(map(float, r)) for e in edges for r in e]
        self.widths = tuple(len(e) for e in edges)
        self.embedding = FeatureEmbedding(dim, edges=rows, name="feature_embedding")
        self.dropout = (FeatureDropout(dropout, widths=self.widths, name="feature_dropout")
                        if dropout else None)

    def __call__(self, xs: Any) -> Any:  # noqa: D102
        y = self.embedding(ops.concatenate(list(xs), axis=-1) if len(xs) > 1 else xs[0])
        return y if self.dropout is None else self.dropout(y)
