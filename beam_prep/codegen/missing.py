"""The ``FillMissing`` and ``MissingIndicator`` Keras layers (copied into the generated module).

``FillMissing``: missing raw input -> default_value (or the imputed value of ``impute``);
``MissingIndicator``: 1.0 where the raw input is missing, else 0.0 (``missing_indicator``).

The analysis replaces a missing cell by the feature's ``default_value`` before counting;
this layer does the same at the layer input, so training and serving see the data the
statistics describe. "Missing" at the layer input:

=============  =========================================================================
raw dtype      missing value
=============  =========================================================================
string         ``""`` (also what ``tf.data.experimental.CsvDataset`` gives an empty field)
float32        ``NaN`` (a real NaN is indistinguishable, so it is replaced too)
int64          :data:`MISSING_INTEGER`, the smallest int64
=============  =========================================================================

``beam-prep generate`` copies these definitions (and ``_missing_mask``, their one missing
test) into the generated module from this file's source text
(:func:`beam_prep.codegen.layer_source.layer_source`): one definition for the
generated module and the runtime twin. Imports Keras and TensorFlow (import lazily).

Example:
    >>> fill = FillMissing(0.0, name="price_fill_missing")            # doctest: +SKIP
    >>> fill(tf.constant([[float("nan")], [2.0]])).numpy().tolist()   # doctest: +SKIP
    [[0.0], [2.0]]
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from beam_prep.codegen.plan import MISSING_INTEGER

MISSING_VALUES: dict[str, Any] = {"string": "", "float32": float("nan"), "int64": MISSING_INTEGER}


def _missing_mask(x: Any) -> Any:
    """True where ``x`` is missing: ``""`` (string), NaN (float), ``MISSING_INTEGER`` (int)."""
    if x.dtype == tf.string:
        return tf.equal(x, "")
    if x.dtype.is_floating:
        return tf.math.is_nan(x)
    return tf.equal(x, tf.constant(MISSING_INTEGER, x.dtype))


class FillMissing(keras.layers.Layer):
    """Replaces missing raw inputs by the feature's ``default_value``, as the analysis did.

    Missing is ``""`` for strings, ``NaN`` for floats and ``MISSING_INTEGER`` for integers.
    Other values pass through unchanged (same dtype and shape).

    Example:
        >>> fill = FillMissing("US", name="country_fill_missing")
        >>> fill(tf.constant([[""], ["DE"]])).numpy().tolist()
        [[b'US'], [b'DE']]
    """

    def __init__(self, default_value: Any, **kwargs: Any) -> None:
        # A layer without weights; `trainable` may come back from get_config().
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)
        self.default_value = default_value

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        # Keras takes only tensors positionally: a list or a NumPy array becomes one here,
        # with its own dtype (autocast=False: nothing is cast to the layer's float dtype).
        if not (tf.is_tensor(inputs) or keras.utils.is_keras_tensor(inputs)):
            inputs = tf.convert_to_tensor(inputs)
        return super().__call__(inputs, **kwargs)

    def call(self, inputs: Any) -> Any:
        x = tf.convert_to_tensor(inputs)
        return tf.where(_missing_mask(x), tf.constant(self.default_value, x.dtype), x)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def compute_output_spec(self, inputs: Any) -> Any:
        return keras.KerasTensor(inputs.shape, dtype=inputs.dtype)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "default_value": self.default_value}


class MissingIndicator(keras.layers.Layer):
    """1.0 where a raw input is missing, else 0.0 (float32, same shape): ``<name>_missing``.

    Missing is what ``FillMissing`` replaces: ``""`` for strings, ``NaN`` for floats and
    ``MISSING_INTEGER`` for integers. It reads the value before ``FillMissing``.

    Example:
        >>> flag = MissingIndicator(name="price_missing_indicator")
        >>> flag(tf.constant([[float("nan")], [2.0]])).numpy().tolist()
        [[1.0], [0.0]]
    """

    def __init__(self, **kwargs: Any) -> None:
        # A layer without weights; `trainable` may come back from get_config().
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        # Keras takes only tensors positionally: a list or a NumPy array becomes one here.
        if not (tf.is_tensor(inputs) or keras.utils.is_keras_tensor(inputs)):
            inputs = tf.convert_to_tensor(inputs)
        return super().__call__(inputs, **kwargs)

    def call(self, inputs: Any) -> Any:
        return tf.cast(_missing_mask(tf.convert_to_tensor(inputs)), "float32")

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def compute_output_spec(self, inputs: Any) -> Any:
        return keras.KerasTensor(inputs.shape, dtype="float32")
