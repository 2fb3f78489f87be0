"""The ``ListEncoding`` Keras layer: a list feature's indices -> its output.

Takes the ``(batch, L)`` int64 indices of a list feature's lookup or Hashing layer, where 0
is padding (beam_prep.codegen.list_plan), and returns the output of its ``mode``: ``pad``
(the first ``max_values`` indices, then 0s), ``ragged`` (a ``tf.RaggedTensor`` of the
indices, padding removed) or ``multi_hot`` / ``count`` (per row, over indices ≥ 1; index
``i`` is column ``i - 1``, so padding never counts). ``beam-prep generate``
copies ``ListEncoding`` and ``padded_list`` (as ``_padded_list``) into the generated module
from this file's source text (``beam_prep.codegen.layer_source``). Imports Keras and
TensorFlow (import lazily).

Example:
    >>> layer = ListEncoding("pad", max_values=2, name="tags_list")
    >>> layer(tf.constant([[0, 3, 0, 4, 5]], tf.int64)).numpy().tolist()
    [[3, 4]]
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


class ListEncoding(keras.layers.Layer):
    """Turns a list feature's ``(batch, L)`` indices (0 = padding) into its output.

    ``mode``: ``pad`` -> int64 ``(batch, max_values)``; ``ragged`` -> int64 RaggedTensor
    ``(batch, None)``; ``multi_hot`` / ``count`` -> float32 ``(batch, num_tokens)``, column
    ``i - 1`` for index ``i``. Padding (0) is dropped first, wherever it is in the row.

    Example:
        >>> layer = ListEncoding("count", num_tokens=3, name="tags_list")
        >>> layer(tf.constant([[2, 2, 0, 3]], tf.int64)).numpy().tolist()
        [[0.0, 2.0, 1.0]]
    """

    def __init__(self, mode: str, *, max_values: int | None = None,
                 num_tokens: int | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)
        self.mode = mode
        self.max_values = max_values
        self.num_tokens = num_tokens

    def call(self, inputs: Any) -> Any:
        x = tf.cast(inputs, tf.int64)
        if self.mode in ("multi_hot", "count"):
            size = self.num_tokens + 1
            counts = tf.math.bincount(x, minlength=size, maxlength=size, axis=-1,
                                      binary_output=self.mode == "multi_hot", dtype=tf.float32)
            return counts[:, 1:]
        values = tf.ragged.boolean_mask(x, tf.math.greater(x, 0))
        if self.mode == "ragged":
            return values
        return values[:, : self.max_values].to_tensor(default_value=0,
                                                      shape=[None, self.max_values])

    def compute_output_spec(self, inputs: Any) -> Any:
        batch = inputs.shape[0]
        if self.mode in ("multi_hot", "count"):
            return keras.KerasTensor((batch, self.num_tokens), dtype="float32")
        if self.mode == "ragged":
            return keras.KerasTensor((batch, None), dtype="int64", ragged=True)
        return keras.KerasTensor((batch, self.max_values), dtype="int64")

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "mode": self.mode, "max_values": self.max_values,
                "num_tokens": self.num_tokens}


def padded_list(value: Any, dtype: str, padding: Any) -> Any:
    """A batch of lists as ``(batch, None)`` of ``dtype`` padded with ``padding``.

    Takes what a list column comes as in ``tf.data``: a ``tf.RaggedTensor`` (``ragged_batch``,
    ``tf.io.RaggedFeature``), a ``tf.SparseTensor`` (``tf.io.VarLenFeature``) or a dense
    tensor, already padded with ``padding`` (returned as it is). Integers are widened.

    Raises:
        TypeError: The values are strings where ``dtype`` is not, or the other way round.
    """
    target = tf.as_dtype(dtype)
    if isinstance(value, tf.SparseTensor):
        value = tf.RaggedTensor.from_sparse(value)
    if not isinstance(value, tf.RaggedTensor):
        return value
    if value.dtype != target:
        if value.dtype == tf.string or target == tf.string or not value.dtype.is_integer:
            raise TypeError(f"A list column of {target.name} values is needed. Received: "
                            f"dtype={value.dtype.name}")
        value = tf.cast(value, target)
    return value.to_tensor(default_value=tf.constant(padding, target))
