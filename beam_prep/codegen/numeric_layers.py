"""Numeric input transforms for neural rankers, as backend-neutral Keras layers.

=========================  ==============================================================
layer                      output (per input value ``x``, elementwise over the last axis)
=========================  ==============================================================
:class:`SignedLog1p`       ``sign(x) * log1p(|x|)`` (DASALC's symmetric log1p; odd,
                           monotone, compresses heavy tails)
:class:`RobustScaling`     ``(x - median) / iqr`` with ``iqr = q75 - q25`` (1 where the
                           spread is 0): outliers do not move the centre or the scale
:class:`PiecewiseLinear`   Gorishniy et al. 2022 "piecewise linear encoding": T values per
                           input from T + 1 sorted edges ``b_0 .. b_T``; value ``t`` is
                           ``(x - b_{t-1}) / (b_t - b_{t-1})`` clipped to ``[0, 1]``
                           (the first not clipped below, the last not clipped above)
=========================  ==============================================================

The layers use ``keras.ops`` (TensorFlow's own operations only for a TensorFlow value while Keras
runs another backend, as in ``tf.data`` on JAX), so they run on the TensorFlow and the JAX
backends, inside ``tf.data`` or inside a model, and serialise with ``get_config``. Their
constructors use only the standard library: ``beam-prep generate`` renders these very class
definitions (and ``_numeric_ops``) into the generated module, which imports only Keras and
TensorFlow (``beam_prep.codegen.layer_source`` copies this file's text).

The statistics (medians, quartiles, quantile edges) come from the analysed artifacts (a
numeric feature's ``quartiles``, min, max and quantile boundaries) or from training data
(:func:`edges_from_boundaries`, :func:`numpy_stats`); the layers hold them as constants.

Example:
    >>> import numpy as np
    >>> np.asarray(SignedLog1p()(np.array([[-1.0, 0.0, 3.0]])), "float64").round(4).tolist()
    [[-0.6931, 0.0, 1.3863]]
    >>> np.asarray(PiecewiseLinear([[0.0, 1.0, 3.0]])(np.array([[2.0]]))).tolist()
    [[[1.0, 0.5]]]
"""

from __future__ import annotations

import math
import sys
import types
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from beam_prep.errors import SpecError


def _numeric_ops(x: Any) -> Any:
    """``keras.ops``, or the same operations from TensorFlow for a TensorFlow value while
    Keras runs another backend (``layer.call`` inside ``tf.data`` on JAX)."""
    tf = sys.modules.get("tensorflow")
    if tf is None or keras.backend.backend() == "tensorflow" or not tf.is_tensor(x):
        return keras.ops
    return types.SimpleNamespace(
        cast=tf.cast, sign=tf.sign, log1p=tf.math.log1p, abs=tf.abs, minimum=tf.minimum,
        maximum=tf.maximum, expand_dims=tf.expand_dims, greater_equal=tf.greater_equal,
        convert_to_tensor=tf.convert_to_tensor)


class SignedLog1p(keras.layers.Layer):
    """``sign(x) * log1p(|x|)``, elementwise (shape unchanged).

    Example:
        >>> x = keras.ops.convert_to_tensor([-(math.e - 1), 0.0])
        >>> [round(float(v), 6) for v in SignedLog1p()(x)]
        [-1.0, 0.0]
    """

    def call(self, x: Any) -> Any:  # noqa: D102
        ops = _numeric_ops(x)
        x = ops.cast(x, self.compute_dtype)
        return ops.sign(x) * ops.log1p(ops.abs(x))

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return input_shape


class RobustScaling(keras.layers.Layer):
    """``(x - median) / iqr`` per position of the last axis.

    Args:
        median: One value per position of the last axis (or a scalar).
        iqr: Interquartile range ``q75 - q25`` per position; 0 (a constant feature) and
            non-finite values are replaced by 1, so the output stays finite.

    Computed in float32 as ``(x - float32(median)) * float32(1 / iqr)``.

    Example:
        >>> layer = RobustScaling(median=[1.0, 0.0], iqr=[2.0, 0.0])
        >>> keras.ops.convert_to_numpy(layer(keras.ops.convert_to_tensor([[5.0, 3.0]]))).tolist()
        [[2.0, 3.0]]
    """

    def __init__(self, median: Any, iqr: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)

        def values(v: Any) -> tuple[list[float], bool]:
            try:
                return [float(x) for x in v], False
            except TypeError:  # a number, or a 0-d array
                return [float(v)], True

        (med, scalar), (spread, scalar_iqr) = values(median), values(iqr)
        if len(med) != len(spread) or scalar != scalar_iqr:
            raise ValueError("RobustScaling: `median` and `iqr` must be scalars or 1-D of the "
                             f"same length. Received: median={med}, iqr={spread}")
        if not all(math.isfinite(v) for v in med):
            raise ValueError(f"RobustScaling: `median` must be finite. Received: {med}")
        spread = [v if math.isfinite(v) and v > 0 else 1.0 for v in spread]
        self.median = med[0] if scalar else med
        self.iqr = spread[0] if scalar else spread
        self._median = med
        self._scale = [1.0 / v for v in spread]

    def call(self, x: Any) -> Any:  # noqa: D102
        ops = _numeric_ops(x)
        x = ops.cast(x, self.compute_dtype)
        return (x - ops.convert_to_tensor(self._median, x.dtype)) * ops.convert_to_tensor(
            self._scale, x.dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return input_shape

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "median": self.median, "iqr": self.iqr}


class PiecewiseLinear(keras.layers.Layer):
    """Piecewise linear encoding (Gorishniy, Rubachev & Babenko 2022): ``[..., D] -> [..., D, T]``.

    Args:
        edges: ``D`` rows of ``T + 1`` non-decreasing bin edges (one row per position of the
            input's last axis; ``T >= 1``). Equal neighbouring edges (a repeated quantile)
            make an empty bin whose value is a step: 1 at or above the edge, else 0.

    Computed in float32: ramp ``(x - float32(b_{t-1})) * float32(1 / (b_t - b_{t-1}))``,
    then ``maximum(., 0)`` (not for the first bin) and ``minimum(., 1)`` (not for the last).
    NaN gives NaN.

    Example:
        >>> layer = PiecewiseLinear([[0.0, 1.0, 2.0]])
        >>> keras.ops.convert_to_numpy(layer(keras.ops.convert_to_tensor([[-1.0], [3.0]]))
        ... ).tolist()
        [[[-1.0, 0.0]], [[1.0, 2.0]]]
    """

    def __init__(self, edges: Sequence[Sequence[float]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        try:
            rows = [[float(v) for v in row] for row in edges]
        except TypeError:  # a flat list or a number
            rows = []
        if not rows or len({len(row) for row in rows}) != 1 or len(rows[0]) < 2:
            raise ValueError("PiecewiseLinear: `edges` must be D rows of T + 1 >= 2 bin edges. "
                             f"Received: row lengths {[len(row) for row in rows][:8]}")
        if not all(math.isfinite(v) for row in rows for v in row) or any(
                b < a for row in rows for a, b in zip(row, row[1:])):
            raise ValueError("PiecewiseLinear: every row of `edges` must be finite and "
                             "non-decreasing (sorted quantile boundaries).")
        self.edges = rows
        bins = len(rows[0]) - 1
        widths = [[b - a for a, b in zip(row, row[1:])] for row in rows]
        self._left = [row[:-1] for row in rows]
        self._inv = [[1.0 / w if w > 0 else 0.0 for w in row] for row in widths]
        self._step = [[0.0 if w > 0 else 1.0 for w in row] for row in widths]
        self._low = [-math.inf] + [0.0] * (bins - 1)
        self._high = [1.0] * (bins - 1) + [math.inf]

    def call(self, x: Any) -> Any:  # noqa: D102
        ops = _numeric_ops(x)
        x = ops.expand_dims(ops.cast(x, self.compute_dtype), -1)
        dt = x.dtype
        left = ops.convert_to_tensor(self._left, dt)
        ramp = (x - left) * ops.convert_to_tensor(self._inv, dt)
        step = ops.cast(ops.greater_equal(x, left), dt)
        is_step = ops.convert_to_tensor(self._step, dt)
        value = ramp * (1.0 - is_step) + step * is_step
        value = ops.maximum(value, ops.convert_to_tensor(self._low, dt))
        return ops.minimum(value, ops.convert_to_tensor(self._high, dt))

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return (*input_shape, len(self.edges[0]) - 1)

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "edges": self.edges}


# Registered here, not by decorators: the generated module renders these classes' source
# (beam_prep.codegen.render) and its allow-list refuses decorators.
LAYER_CLASSES = (SignedLog1p, RobustScaling, PiecewiseLinear)
for _cls in LAYER_CLASSES:
    keras.saving.register_keras_serializable(package="beam_prep")(_cls)


def edges_from_boundaries(boundaries: Sequence[float], low: float, high: float) -> list[float]:
    """Bin edges for :class:`PiecewiseLinear` from quantile boundaries and the data's range.

    ``boundaries`` are the inner quantile boundaries a numeric feature's artifacts hold
    (``num_buckets - 1`` values); ``low``/``high`` are its min and max. Values outside the
    range are dropped, duplicates kept (they make step bins).

    Example:
        >>> edges_from_boundaries([1.0, 2.0], 0.0, 5.0)
        [0.0, 1.0, 2.0, 5.0]
    """
    inner = [float(b) for b in boundaries if low < float(b) < high]
    if high <= low:
        return [float(low), float(low) + 1.0]
    return [float(low), *inner, float(high)]


def numpy_stats(values: np.ndarray, bins: int) -> dict[str, np.ndarray]:
    """Per-column median, IQR and ``bins + 1`` quantile edges of a ``[N, D]`` sample.

    The statistics the launcher uses when no artifact holds them (computed on training data
    only). Quantiles use numpy's default (linear) interpolation.

    Example:
        >>> s = numpy_stats(np.arange(5.0)[:, None], bins=2)
        >>> s["median"].tolist(), s["iqr"].tolist(), s["edges"].tolist()
        ([2.0], [2.0], [[0.0, 2.0, 4.0]])
    """
    v = np.asarray(values, dtype="float64")
    if v.ndim != 2 or v.shape[0] == 0:
        raise SpecError(f"numpy_stats needs a non-empty [N, D] sample. Received: {v.shape}")
    q25, med, q75 = np.quantile(v, [0.25, 0.5, 0.75], axis=0)
    edges = np.quantile(v, np.linspace(0.0, 1.0, bins + 1), axis=0).T
    return {"median": med, "iqr": q75 - q25, "edges": np.maximum.accumulate(edges, axis=1)}
