"""The transform (materialize) job: encode data exactly as the generated Keras layers do.

* :mod:`~beam_prep.transform.values`: a feature's value before its layers, from an Arrow
  batch (missing values, fills, derived features, lists).
* :mod:`~beam_prep.transform.layers`: one numpy/Arrow function per planned Keras layer;
  :class:`~beam_prep.transform.layers.BatchEncoder` encodes whole batches.
* :mod:`~beam_prep.transform.hashing`: TensorFlow's string hashes and TFRecord framing (C).
* :mod:`~beam_prep.transform.examples`: columnar ``tf.train.Example`` serialization.
* :mod:`~beam_prep.transform.job`: the Beam transforms and the output folder policy.

Never imports TensorFlow or Keras (an import-linter contract). See docs/transform.md.

Example:
    >>> from beam_prep.transform.job import shard_relpath
    >>> shard_relpath(0, 1, "parquet")
    'data/part-00000-of-00001.parquet'
"""
