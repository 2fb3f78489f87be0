"""The parity test's rows as TensorFlow sees them, without tensorflow_transform.

Used by ``tft_reference.py`` (run as a script, TFT imported) to build the rows TFT analyses,
and by ``test_tft_parity.py`` to write the same rows as ``tf.Example`` records.

Example:
    >>> spec = feature_spec({"vocabularies": [], "numerics": [{"column": "x"}]})
    >>> instances({"x": [1.5]}, spec)
    [{'x': 1.5}]
"""

from __future__ import annotations

import tensorflow as tf

DTYPES = {"string": tf.string, "integer": tf.int64, "float": tf.float32}


def feature_spec(config: dict) -> dict[str, tf.io.FixedLenFeature]:
    """One scalar feature per vocabulary column (its dtype) and per numeric (float32)."""
    spec: dict[str, tf.io.FixedLenFeature] = {}
    for v in config["vocabularies"]:
        spec[v["column"]] = tf.io.FixedLenFeature([], DTYPES[v["dtype"]])
    for n in config["numerics"]:
        spec[n["column"]] = tf.io.FixedLenFeature([], tf.float32)
    return spec


def instances(columns: dict[str, list], spec: dict) -> list[dict]:
    """The columns as rows of ``{column: value}``, strings as UTF-8 bytes."""
    names = list(spec)
    encoded = {}
    for c in names:
        if spec[c].dtype == tf.string:
            encoded[c] = [s.encode("utf-8") for s in columns[c]]
        else:
            encoded[c] = columns[c]
    return [dict(zip(names, row)) for row in zip(*(encoded[c] for c in names))]


def write_tfrecord(rows: list[dict], spec: dict, path: str) -> None:
    """Same rows as tf.Example: bytes_list, int64_list and float_list (float32) features."""
    def feature(value, dtype) -> tf.train.Feature:
        if dtype == tf.string:
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        if dtype == tf.int64:
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
        return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))

    with tf.io.TFRecordWriter(path) as w:
        for row in rows:
            ex = tf.train.Example(features=tf.train.Features(
                feature={c: feature(row[c], spec[c].dtype) for c in spec}))
            w.write(ex.SerializeToString())


