"""The ``PerKeyBucketize`` Keras layer, copied into the generated module (per_key_plan).

``beam-prep generate`` copies this class into the generated module from this file's source
text (``beam_prep.codegen.layer_source``): one definition. Imports Keras and TensorFlow
(import lazily).

Example:
    >>> layer = PerKeyBucketize(["a"], [[5.0], [1.0]], [1, 1])  # doctest: +SKIP
    >>> layer((tf.constant([[2.0]]), tf.constant([["a"]]))).numpy().tolist()  # doctest: +SKIP
    [[1]]
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


class PerKeyBucketize(keras.layers.Layer):
    """The bucket of a value among its row's key's boundaries (TFT's bucketize_per_key).

    ``keys`` are the bucket file's keys; row 0 of ``boundaries`` (the global boundaries)
    serves an unknown or missing key, row ``i + 1`` the key ``i``; ``lengths`` is the
    number of real boundaries of each row (the rest is padding). The bucket is the number
    of a row's boundaries ``b`` with ``not x < b`` (as ``Discretization``: NaN lands in the
    last bucket), compared in float32. Inputs: the tuple ``(value, key)`` of ``(batch, 1)``
    float and string tensors; output int32 ``(batch, 1)``.

    Example:
        >>> layer = PerKeyBucketize(["a"], [[5.0], [1.0]], [1, 1])
        >>> layer((tf.constant([[2.0], [2.0]]), tf.constant([["a"], ["?"]]))).numpy().tolist()
        [[1], [0]]
    """

    def __init__(
        self, keys: list[str], boundaries: list[list[float]], lengths: list[int], **kwargs: Any
    ) -> None:
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)
        self.key_count = len(keys)
        # Exact UTF-8 bytes (an object array: numpy's text dtypes drop trailing NULs).
        encoded = tf.constant(
            [k.encode("utf-8") for k in keys] or [b""], tf.string, shape=[max(len(keys), 1)]
        )
        positions = tf.range(1, len(keys) + 1, dtype=tf.int64) if keys else tf.zeros([1], "int64")
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(encoded, positions), default_value=0
        )
        width = max(len(row) for row in boundaries)
        self.boundaries = tf.constant(boundaries, tf.float32, shape=[len(boundaries), width])
        self.valid = tf.sequence_mask(tf.constant(lengths, tf.int32), width)

    def build(self, input_shape: Any) -> None:
        self.built = True  # no weights: the table and rows are built in __init__

    def call(self, inputs: Any) -> Any:
        value, key = inputs
        index = self.table.lookup(tf.convert_to_tensor(key, tf.string))
        x = tf.expand_dims(tf.cast(value, tf.float32), -1)
        rows = tf.gather(self.boundaries, index)
        # not x < b, written so that grappler cannot turn it into x >= b (false for NaN)
        reached = tf.logical_or(x >= rows, tf.math.is_nan(x))
        above = tf.logical_and(tf.gather(self.valid, index), reached)
        return tf.reduce_sum(tf.cast(above, tf.int32), axis=-1)

    def compute_output_spec(self, inputs: Any) -> Any:
        return keras.KerasTensor(inputs[0].shape, dtype="int32")
