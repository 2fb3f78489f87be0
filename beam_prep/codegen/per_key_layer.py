"""The ``PerKeyScaling`` Keras layer, copied into the generated module (per_key_plan).

``beam-prep generate`` copies ``_key_tensor``, ``PerKeyScaling`` and ``PerKeyCount`` into the
generated module from this file's source text (``beam_prep.codegen.layer_source``): one
definition. Imports Keras and TensorFlow (import lazily).

Example:
    >>> layer = PerKeyScaling(["a"], [0.0, 2.0], [1.0, 4.0], [False, False])  # doctest: +SKIP
    >>> layer((tf.constant([[6.0]]), tf.constant([["a"]]))).numpy().tolist()  # doctest: +SKIP
    [[1.0]]
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


def _key_tensor(keys: Any) -> Any:
    """The keys' UTF-8 bytes as a 1-D string tensor (from strings, or already a tensor)."""
    if isinstance(keys, tf.Tensor):
        return keys
    # Exact UTF-8 bytes (an object array: numpy's text dtypes drop trailing NULs).
    return tf.constant([k.encode("utf-8") for k in keys], tf.string, shape=[len(keys)])


class PerKeyScaling(keras.layers.Layer):
    """Scales a value by the statistics of its row's key: ``(x - shift) / scale`` or sigmoid.

    ``keys`` are the per-key file's keys (strings, or a string tensor of their UTF-8
    bytes); row 0 of ``shifts``, ``scales`` and ``sigmoid``
    serves an unknown or missing key (the global statistics), row ``i + 1`` the key ``i``.
    Inputs: the tuple ``(value, key)`` of ``(batch, 1)`` float and string tensors; output
    float32 ``(batch, 1)``. The sigmoid is computed in float64 and rounded to float32.

    Example:
        >>> layer = PerKeyScaling(["a"], [0.0, 2.0], [1.0, 4.0], [False, False])
        >>> layer((tf.constant([[6.0], [6.0]]), tf.constant([["a"], ["?"]]))).numpy().tolist()
        [[1.0], [6.0]]
    """

    def __init__(
        self, keys: Any, shifts: Any, scales: Any, sigmoid: Any, **kwargs: Any
    ) -> None:
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)
        encoded = _key_tensor(keys)
        self.key_count = int(encoded.shape[0])
        positions = tf.range(1, self.key_count + 1, dtype=tf.int64)
        if not self.key_count:  # a table needs one entry: b"" -> the default
            encoded, positions = tf.constant([b""]), tf.zeros([1], "int64")
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(encoded, positions), default_value=0
        )
        # float64 rows rounded once to float32 (lists or arrays: millions of keys)
        self.shifts = tf.constant(shifts, tf.float32)
        self.scales = tf.constant(scales, tf.float32)
        self.sigmoid = tf.constant(sigmoid, tf.bool)

    def build(self, input_shape: Any) -> None:
        self.built = True  # no weights: the table and rows are built in __init__

    def call(self, inputs: Any) -> Any:
        value, key = inputs
        index = self.table.lookup(tf.convert_to_tensor(key, tf.string))
        x = tf.cast(value, tf.float32)
        scaled = (x - tf.gather(self.shifts, index)) / tf.gather(self.scales, index)
        squashed = tf.cast(tf.sigmoid(tf.cast(x, tf.float64)), tf.float32)
        return tf.where(tf.gather(self.sigmoid, index), squashed, scaled)

    def compute_output_spec(self, inputs: Any) -> Any:
        return keras.KerasTensor(inputs[0].shape, dtype="float32")


class PerKeyCount(keras.layers.Layer):
    """The number of values the analysis saw for the row's key (0 for an unknown key).

    ``keys`` are the per-key file's keys and ``counts`` their counts. Inputs: the tuple
    ``(value, key)`` (the value is not used); output int64 ``(batch, 1)``.

    Example:
        >>> layer = PerKeyCount(["a"], [3])
        >>> layer((tf.constant([[0.0], [0.0]]), tf.constant([["a"], ["?"]]))).numpy().tolist()
        [[3], [0]]
    """

    def __init__(self, keys: Any, counts: Any, **kwargs: Any) -> None:
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)
        encoded = _key_tensor(keys)
        values = tf.constant(counts, tf.int64, shape=[int(encoded.shape[0])])
        if not int(encoded.shape[0]):  # a table needs one entry: b"" -> the default
            encoded, values = tf.constant([b""]), tf.zeros([1], "int64")
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(encoded, values), default_value=0
        )

    def build(self, input_shape: Any) -> None:
        self.built = True  # no weights: the table is built in __init__

    def call(self, inputs: Any) -> Any:
        return self.table.lookup(tf.convert_to_tensor(inputs[1], tf.string))

    def compute_output_spec(self, inputs: Any) -> Any:
        return keras.KerasTensor(inputs[1].shape, dtype="int64")

