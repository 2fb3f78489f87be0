"""Ranking training with Keras 3 (TensorFlow, never Apache Beam).

``reader`` parses ELWC into dense tensors with a mask, ``hparams`` is the YAML config, ``model``,
``embeddings``, ``losses`` and ``metrics`` build the ranker, ``strategy`` makes the
``tf.distribute`` strategy, ``loop`` is the custom training loop, ``optimizers`` makes the
optimizer, ``launcher`` runs training and ``export`` writes the SavedModel.
It shares only :mod:`beam_prep.ranking.feature_spec` with the data job.
"""
