"""Ranking: ELWC datasets with Beam, a tf.data reader, and a Keras 3 ranking launcher.

Names are imported lazily (TensorFlow and Beam load only when used):

* data (issue "make-elwc"): :class:`ConvertToELWC`, :class:`WriteELWC` (Beam transforms),
  :class:`ElwcFeatureSpec` (``feature_spec.json``), :func:`make_dataset` (tf.data reader,
  mask under ``features["__mask__"]``), :func:`parse_elwc_batch`;
* training: :class:`RankingHparams` (YAML config), :func:`build_launcher`,
  :class:`RankingModelBuilder`, :func:`export_ranker`, :func:`get_loss`, :func:`ndcg`,
  :func:`mrr`, :func:`make_strategy`.

Example:
    >>> from beam_prep import ranking
    >>> ds = ranking.make_dataset("elwc/train-*.tfrecord", feature_spec="elwc/feature_spec.json",
    ...                           list_size=32, batch_size=16)       # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ConvertToELWC": "beam_prep.ranking.data.transforms",
    "WriteELWC": "beam_prep.ranking.data.transforms",
    "ElwcFeatureSpec": "beam_prep.ranking.feature_spec",
    "make_dataset": "beam_prep.ranking.train.reader",
    "parse_elwc_batch": "beam_prep.ranking.train.reader",
    "RankingHparams": "beam_prep.ranking.train.hparams",
    "build_launcher": "beam_prep.ranking.train.launcher",
    "RankingModelBuilder": "beam_prep.ranking.train.model",
    "export_ranker": "beam_prep.ranking.train.export",
    "get_loss": "beam_prep.ranking.train.losses",
    "ndcg": "beam_prep.ranking.train.metrics",
    "mrr": "beam_prep.ranking.train.metrics",
    "make_strategy": "beam_prep.ranking.train.strategy",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'beam_prep.ranking' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
