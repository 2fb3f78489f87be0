"""Ranking training with Keras 3 (TensorFlow, never Apache Beam).

``reader`` parses ELWC into dense tensors with a mask, ``hparams`` is the YAML config, ``model``,
``embeddings``, ``losses`` and ``metrics`` build the ranker, ``strategy`` makes the
``tf.distribute`` strategy, ``loop`` is the custom training loop, ``optimizers`` makes the
optimizer, ``launcher`` runs training and ``export`` writes the SavedModel.
``backend`` picks the Keras backend before Keras is imported; on JAX, ``jax_backend`` (the
launcher), ``jax_distribution`` (``keras.distribution``) and ``jax_export`` (``jax2tf``) are the
only modules that import jax.
It shares only :mod:`beam_prep.ranking.feature_spec` with the data job.
"""
