"""The ``DerivedFeature`` Keras layer (copied into the generated module): raw inputs -> a value.

A derived feature (``expr:``) has no raw input of its own: this layer applies a plain
function over the raw inputs of its expression's columns (``beam_prep.expr.tf``) and
casts the result to the dtype the feature's layers take. ``beam-prep generate`` copies
this class into the generated module from this file's source text
(``beam_prep.codegen.layer_source``) and gives it the rendered ``derive_<feature>``
function (the runtime twin runs that module too).
Imports Keras and TensorFlow.

Example:
    >>> layer = DerivedFeature(fn, ["price", "qty"], "float32", name="r_expr")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf


class DerivedFeature(keras.layers.Layer):
    """Computes a derived feature (``expr``) from its raw inputs, cast to the layers' dtype.

    ``function`` is a plain named function over a dict of input tensors (TensorFlow ops
    only); ``columns`` are the raw inputs it reads. Numeric results (float64) are cast to
    ``output_dtype``; strings pass through. With ``list_output`` (``split``) the ragged result
    becomes ``(batch, None)`` padded with ``""``, the form of a list raw input.

    Example:
        >>> layer = DerivedFeature(derive_r, ["a", "b"], "float32")  # doctest: +SKIP
        >>> layer({"a": tf.constant([[3.0]]), "b": tf.constant([[2]], tf.int64)})  # doctest: +SKIP
    """

    def __init__(
        self, function: Callable[..., Any], columns: list[str], output_dtype: str, *,
        list_output: bool = False, **kwargs: Any
    ) -> None:
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)
        self.function = function
        self.columns = tuple(columns)
        self.output_dtype = output_dtype
        self.list_output = list_output

    def call(self, inputs: dict[str, Any]) -> Any:
        value = self.function({name: inputs[name] for name in self.columns})
        if isinstance(value, tf.RaggedTensor):
            value = value.merge_dims(1, -1).to_tensor(default_value="")
        if value.dtype != tf.as_dtype(self.output_dtype):
            value = tf.cast(value, self.output_dtype)
        return value

    def compute_output_spec(self, inputs: dict[str, Any]) -> Any:
        shape = inputs[self.columns[0]].shape
        if self.list_output:
            shape = (shape[0], None)
        return keras.KerasTensor(shape, dtype=self.output_dtype)
