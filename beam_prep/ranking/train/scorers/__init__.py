"""Scorers of the ranking launcher (``model.scorer``), input transforms and ensembles.

* ``dnn``: :class:`beam_prep.ranking.train.model.FeedForwardScorer` (each entry alone).
* ``dasalc``: :class:`.dasalc.DasalcScorer` (self-attention over the list + latent cross).
* ``model.ensemble: N``: :mod:`.ensemble` (N seeds, one averaged model).
* ``model.input_transform``: :func:`input_transforms` (layers of
  :mod:`beam_prep.codegen.numeric_layers`, statistics from :mod:`.input_stats`), followed by
  :class:`.feature_embedding.FeatureEmbedding` when ``model.feature_embedding_dim > 0``, then
  :class:`.feature_dropout.FeatureDropout` when ``model.feature_dropout > 0``.

Example:
    >>> scorer_class("dasalc").__name__
    'DasalcScorer'
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import keras

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import SCORERS, ModelHparams

NEEDS_STATS: frozenset[str] = frozenset({"piecewise_linear", "robust"})


def scorer_class(name: str) -> type:
    """The scorer layer class of ``model.scorer``.

    Raises:
        SpecError: Unknown name.
    """
    if name == "dnn":
        from beam_prep.ranking.train.model import FeedForwardScorer

        return FeedForwardScorer
    if name == "dasalc":
        from beam_prep.ranking.train.scorers.dasalc import DasalcScorer

        return DasalcScorer
    raise SpecError(f"`model.scorer` must be one of {', '.join(map(repr, SCORERS))}. "
                    f"Received: scorer={name!r}")


def input_transforms(hp: ModelHparams, names: Sequence[str],
                     stats: Mapping[str, Mapping[str, Any]], *,
                     list_features: Collection[str] = ()) -> dict[Any, Callable[[Any], Any]]:
    """The input transform of every float feature in ``names`` (none: no entry).

    The transform is the ``input_transform`` layer, then (``feature_embedding_dim > 0``) a
    :class:`.feature_embedding.FeatureEmbedding` of the values, one per feature (with
    ``piecewise_linear`` the encoding is fused into it: ``FeatureEmbedding(edges=...)``), then
    (``feature_dropout > 0``) a :class:`.feature_dropout.FeatureDropout` of the feature.

    With the fused encoding, the features of ``names`` in ``list_features`` (``[B, L, D]``)
    are embedded together: one entry keyed by the tuple of their names, a
    :class:`.feature_embedding.JointEmbedding` (one layer and one dropout for all of them
    instead of one each; the same values: see its docstring), whose one output the scorer
    takes where the first of them was.

    Args:
        hp: ``ModelHparams`` (``input_transform``, ``piecewise_bins``,
            ``feature_embedding_dim``, ``feature_dropout``).
        names: Float features (after preprocessing) the scorer takes.
        stats: Feature -> ``{"median", "iqr", "edges"}`` per value of its last axis
            (:func:`.input_stats.feature_stats`), needed by ``piecewise_linear``/``robust``.
        list_features: Features with the list axis (example features).

    Raises:
        SpecError: A feature has no statistics but the transform needs them.
    """
    kind = hp.resolved_input_transform
    fused = kind == "piecewise_linear" and hp.feature_embedding_dim > 0
    out: dict[Any, Callable[[Any], Any]] = (
        {} if fused else dict(_value_transforms(kind, names, stats)))
    if hp.feature_embedding_dim:
        from beam_prep.ranking.train.scorers.feature_embedding import (
            FeatureEmbedding,
            JointEmbedding,
        )

        if fused:  # the encoding inside the embedding: bin index + one gather
            _value_transforms(kind, names, stats)  # the same checks of the statistics
            joint = tuple(n for n in names if n in list_features)
            if joint:
                out[joint] = JointEmbedding(hp.feature_embedding_dim,
                                            [stats[n]["edges"] for n in joint],
                                            dropout=hp.feature_dropout)
                names = [n for n in names if n not in joint]
        for name in names:
            embed = FeatureEmbedding(hp.feature_embedding_dim,
                                     expand=kind != "piecewise_linear",
                                     edges=stats[name]["edges"] if fused else None,
                                     name=f"{name.strip('_')}_feature_embedding")
            out[name] = _chain(out[name], embed) if name in out else embed
    if hp.feature_dropout:
        from beam_prep.ranking.train.scorers.feature_dropout import FeatureDropout

        for name in names:  # seeds from keras.utils.set_random_seed (training.seed)
            drop = FeatureDropout(hp.feature_dropout,
                                  name=f"{name.strip('_')}_feature_dropout")
            out[name] = _chain(out[name], drop) if name in out else drop
    return out


def _chain(first: Callable[[Any], Any], second: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: second(first(x))


def _value_transforms(kind: str, names: Sequence[str], stats: Mapping[str, Mapping[str, Any]]
                      ) -> dict[str, keras.layers.Layer]:
    from beam_prep.codegen.numeric_layers import PiecewiseLinear, RobustScaling, SignedLog1p

    out: dict[str, keras.layers.Layer] = {}
    for name in names:
        layer_name = f"{name.strip('_')}_{kind}"
        if kind == "none":
            continue
        if kind == "log1p":
            out[name] = SignedLog1p(name=layer_name)
            continue
        if name not in stats:
            raise SpecError(f"`model.input_transform: {kind}` needs statistics of feature "
                            f"{name!r} (computed from the training lists); none were given. "
                            "Use the launcher, or pass `input_stats` to RankingModelBuilder.")
        s = stats[name]
        if kind == "robust":
            out[name] = RobustScaling(s["median"], s["iqr"], name=layer_name)
        else:
            out[name] = PiecewiseLinear(s["edges"], name=layer_name)
    return out
