"""The ``PerKeyScaling`` Keras layer of the runtime twin (beam_prep.codegen.per_key_plan).

The generated module renders the same class from ``templates/per_key_scaling.py.j2``; a
test checks the two definitions are identical. Imports Keras and TensorFlow (import lazily).

Example:
    >>> layer = PerKeyScaling(["a"], [0.0, 2.0], [1.0, 4.0], [False, False])  # doctest: +SKIP
    >>> layer((tf.constant([[6.0]]), tf.constant([["a"]]))).numpy().tolist()  # doctest: +SKIP
    [[1.0]]
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


class PerKeyScaling(keras.layers.Layer):
    """Scales a value by the statistics of its row's key: ``(x - shift) / scale`` or sigmoid.

    ``keys`` are the per-key file's keys; row 0 of ``shifts``, ``scales`` and ``sigmoid``
    serves an unknown or missing key (the global statistics), row ``i + 1`` the key ``i``.
    Inputs: the tuple ``(value, key)`` of ``(batch, 1)`` float and string tensors; output
    float32 ``(batch, 1)``. The sigmoid is computed in float64 and rounded to float32.

    Example:
        >>> layer = PerKeyScaling(["a"], [0.0, 2.0], [1.0, 4.0], [False, False])
        >>> layer((tf.constant([[6.0], [6.0]]), tf.constant([["a"], ["?"]]))).numpy().tolist()
        [[1.0], [6.0]]
    """

    def __init__(
        self, keys: list[str], shifts: list[float], scales: list[float], sigmoid: list[bool],
        **kwargs: Any
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

    def __init__(self, keys: list[str], counts: list[int], **kwargs: Any) -> None:
        kwargs.setdefault("trainable", False)
        super().__init__(autocast=False, **kwargs)
        encoded = tf.constant(
            [k.encode("utf-8") for k in keys] or [b""], tf.string, shape=[max(len(keys), 1)]
        )
        values = tf.constant(list(counts) or [0], tf.int64, shape=[max(len(keys), 1)])
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(encoded, values), default_value=0
        )

    def build(self, input_shape: Any) -> None:
        self.built = True  # no weights: the table is built in __init__

    def call(self, inputs: Any) -> Any:
        return self.table.lookup(tf.convert_to_tensor(inputs[1], tf.string))

    def compute_output_spec(self, inputs: Any) -> Any:
        return keras.KerasTensor(inputs[1].shape, dtype="int64")
