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

The layers use ``keras.ops`` only (no TensorFlow call), so they run on the TensorFlow and the
JAX backends, inside ``tf.data``, in a generated module or inside a model, and serialise with
``get_config``. The statistics (medians, quartiles, quantile edges) come from the analysed
artifacts (a numeric feature's quantile boundaries) or from training data
(:func:`edges_from_boundaries`, :func:`numpy_stats`); the layers hold them as constants.

Example:
    >>> import numpy as np
    >>> SignedLog1p()(np.array([[-1.0, 0.0, 3.0]])).numpy().round(4).tolist()
    [[-0.6931, 0.0, 1.3863]]
    >>> PiecewiseLinear([[0.0, 1.0, 3.0]])(np.array([[2.0]])).numpy().tolist()
    [[[1.0, 0.5]]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
from keras import ops

from beam_prep.errors import SpecError


@keras.saving.register_keras_serializable(package="beam_prep")
class SignedLog1p(keras.layers.Layer):
    """``sign(x) * log1p(|x|)``, elementwise (shape unchanged).

    Example:
        >>> float(SignedLog1p()(np.array([-(np.e - 1)]))[0])
        -1.0
    """

    def call(self, x: Any) -> Any:  # noqa: D102
        x = ops.cast(x, self.compute_dtype)
        return ops.sign(x) * ops.log1p(ops.abs(x))

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return input_shape


@keras.saving.register_keras_serializable(package="beam_prep")
class RobustScaling(keras.layers.Layer):
    """``(x - median) / iqr`` per position of the last axis.

    Args:
        median: One value per position of the last axis (or a scalar).
        iqr: Interquartile range ``q75 - q25`` per position; 0 (a constant feature) and
            non-finite values are replaced by 1, so the output stays finite.

    Example:
        >>> RobustScaling(median=[1.0, 0.0], iqr=[2.0, 0.0])(np.array([[5.0, 3.0]])).numpy()
        array([[2., 3.]], dtype=float32)
    """

    def __init__(self, median: Any, iqr: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        med = np.asarray(median, dtype="float64")
        spread = np.asarray(iqr, dtype="float64")
        if med.shape != spread.shape or med.ndim > 1:
            raise SpecError("RobustScaling: `median` and `iqr` must be scalars or 1-D of the "
                            f"same length. Received: shapes {med.shape} and {spread.shape}")
        if not np.all(np.isfinite(med)):
            raise SpecError(f"RobustScaling: `median` must be finite. Received: {med.tolist()}")
        spread = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)
        self.median = med.tolist()
        self.iqr = spread.tolist()
        self._median = med.astype("float32")
        self._scale = (1.0 / spread).astype("float32")

    def call(self, x: Any) -> Any:  # noqa: D102
        x = ops.cast(x, self.compute_dtype)
        return (x - ops.convert_to_tensor(self._median, x.dtype)) * ops.convert_to_tensor(
            self._scale, x.dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return input_shape

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "median": self.median, "iqr": self.iqr}


@keras.saving.register_keras_serializable(package="beam_prep")
class PiecewiseLinear(keras.layers.Layer):
    """Piecewise linear encoding (Gorishniy, Rubachev & Babenko 2022): ``[..., D] -> [..., D, T]``.

    Args:
        edges: ``D`` rows of ``T + 1`` non-decreasing bin edges (one row per position of the
            input's last axis; ``T >= 1``). Equal neighbouring edges (a repeated quantile)
            make an empty bin whose value is a step: 1 at or above the edge, else 0.

    Example:
        >>> PiecewiseLinear([[0.0, 1.0, 2.0]])(np.array([[-1.0], [3.0]])).numpy().tolist()
        [[[-1.0, 0.0]], [[1.0, 2.0]]]
    """

    def __init__(self, edges: Sequence[Sequence[float]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        e = np.asarray(edges, dtype="float64")
        if e.ndim != 2 or e.shape[1] < 2:
            raise SpecError("PiecewiseLinear: `edges` must be D rows of T + 1 >= 2 bin edges. "
                            f"Received: shape {e.shape}")
        if not np.all(np.isfinite(e)) or np.any(np.diff(e, axis=1) < 0):
            raise SpecError("PiecewiseLinear: every row of `edges` must be finite and "
                            "non-decreasing (sorted quantile boundaries).")
        self.edges = e.tolist()
        width = np.diff(e, axis=1)
        self._left = e[:, :-1].astype("float32")
        self._inv = np.where(width > 0, 1.0 / np.where(width > 0, width, 1.0), 0.0
                             ).astype("float32")
        self._step = (width <= 0).astype("float32")
        bins = e.shape[1] - 1
        low = np.zeros(bins, "float32")
        high = np.ones(bins, "float32")
        self._low = np.where(np.arange(bins) == 0, -np.inf, low).astype("float32")
        self._high = np.where(np.arange(bins) == bins - 1, np.inf, high).astype("float32")

    def call(self, x: Any) -> Any:  # noqa: D102
        x = ops.expand_dims(ops.cast(x, self.compute_dtype), -1)
        dt = x.dtype
        left = ops.convert_to_tensor(self._left, dt)
        ramp = (x - left) * ops.convert_to_tensor(self._inv, dt)
        step = ops.cast(ops.greater_equal(x, left), dt)
        is_step = ops.convert_to_tensor(self._step, dt)
        value = ramp * (1.0 - is_step) + step * is_step
        return ops.clip(value, ops.convert_to_tensor(self._low, dt),
                        ops.convert_to_tensor(self._high, dt))

    def compute_output_shape(self, input_shape: Any) -> Any:  # noqa: D102
        return (*input_shape, len(self.edges[0]) - 1)

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "edges": self.edges}


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
