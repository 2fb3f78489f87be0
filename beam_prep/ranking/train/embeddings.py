"""Embedding tables sized from vocabulary files, on TPU SparseCore when they are large.

Table rows are never hard-coded: they come from the artifact directory (the vocabulary size the
analysis wrote) plus the slots the Keras layer adds in front of the file's tokens:

==========================  ==================================================
feature kind                rows
==========================  ==================================================
string / integer (lookup)   vocabulary_size + num_oov_indices (+ 1 with a mask)
text (TextVectorization)    vocabulary_size + 2 (0 = padding, 1 = ``[UNK]``)
hashed                      num_bins
==========================  ==================================================

Tables with at least ``min_rows`` rows go into one ``keras_rs.layers.DistributedEmbedding``
(TPU embedding / SparseCore under ``TPUStrategy``; plain lookups elsewhere, same weights and
results); smaller ones are ordinary ``keras.layers.Embedding``. Either way a feature of ids
``[..., T]`` is embedded and averaged over its non-zero ids (id 0 = padding, as produced by
TextVectorization and by StringLookup with a mask token); a feature ``[...]`` of single ids is
embedded as is (id 0 is then a real id, e.g. the OOV slot).

Example:
    >>> emb = RankingEmbeddings({"query": 12, "doc": 12}, dim=4, min_rows=0,
    ...                         sequence_features=("query", "doc"))
    >>> out = emb({"query": np.array([[3, 4, 0]]), "doc": np.array([[[1, 0], [2, 5]]])})
    >>> tuple(out["query"].shape), tuple(out["doc"].shape)
    ((1, 4), (1, 2, 4))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
from keras import ops

from beam_prep.errors import ArtifactError, SpecError
from beam_prep.input_names import input_name


def table_rows(artifacts: Any, name: str) -> int:
    """Rows of the embedding table of feature ``name``, from an ``Artifacts`` reader.

    Raises:
        ArtifactError: The feature has no vocabulary size in the artifacts.
        SpecError: The feature kind has no integer ids (numeric).
    """
    feature = artifacts.feature(name)
    kind = feature.kind
    if kind == "hashed":
        return int(feature.num_bins)
    if kind not in ("string", "integer", "text"):
        raise SpecError(f"Feature {name!r} of kind {kind!r} has no embedding table; only "
                        "string, integer, text and hashed features are embedded.")
    stats = artifacts.stats(name)
    if "vocabulary_size" not in stats:
        raise ArtifactError(f"Feature {name!r} has no `vocabulary_size` in the artifact "
                            f"statistics of {artifacts.path}. Re-run `beam-prep analyze`.")
    size = int(stats["vocabulary_size"])
    if kind == "text":
        return size + 2
    return size + int(feature.num_oov_indices) + (1 if feature.mask_token is not None else 0)


def table_rows_from_layer(layer: Any) -> int:
    """Rows needed by the ids a Keras lookup/TextVectorization/Hashing layer emits."""
    if hasattr(layer, "vocabulary_size"):
        return int(layer.vocabulary_size())
    if hasattr(layer, "num_bins"):
        return int(layer.num_bins)
    raise SpecError(f"Cannot size an embedding table from layer {layer!r}: it has neither "
                    "`vocabulary_size()` nor `num_bins`.")


@keras.saving.register_keras_serializable(package="beam_prep")
class RankingEmbeddings(keras.layers.Layer):
    """Embeds a dict of integer id features; large tables via keras-rs DistributedEmbedding.

    Args:
        rows: Feature name -> table rows (see :func:`table_rows`).
        dim: Embedding width.
        min_rows: Tables with ``rows >= min_rows`` use ``DistributedEmbedding``.
        sequence_features: Features whose last axis is a sequence of ids, averaged over the
            non-zero ids; other features hold one id per list entry.
        input_shapes: Optional feature name -> static 2-D shape ``(N, T)`` of the ids as
            ``DistributedEmbedding`` receives them (N = global batch x list size for
            example features). Needed on TPU, where keras-rs fixes the shapes up front.
        name: Layer name.
        **kwargs: ``keras.layers.Layer`` arguments.
    """

    def __init__(self, rows: Mapping[str, int], *, dim: int, min_rows: int = 100_000,
                 sequence_features: Any = (),
                 input_shapes: Mapping[str, tuple[int, int]] | None = None,
                 name: str = "ranking_embeddings", **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        for feat, r in rows.items():
            if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 1:
                raise SpecError(f"Embedding table rows must be a positive integer. "
                                f"Received: rows={r!r} for feature {feat!r}")
        self.rows = {k: int(v) for k, v in rows.items()}
        self.dim = int(dim)
        self.min_rows = int(min_rows)
        self.input_shapes = {k: tuple(v) for k, v in (input_shapes or {}).items()}
        self.sequence_features = frozenset(sequence_features)
        self.distributed_names = tuple(sorted(k for k, v in self.rows.items() if v >= min_rows))
        self.small = {k: keras.layers.Embedding(v, self.dim, name=f"{input_name(k)}_embedding")
                      for k, v in sorted(self.rows.items()) if k not in self.distributed_names}
        self.distributed = None
        # Our own copy of what we pass to keras-rs (it keeps them under a private name).
        self._feature_configs: dict[str, Any] = {}
        if self.distributed_names:
            self._feature_configs = self._build_feature_configs()
            self.distributed = self._make_distributed(self._feature_configs)

    def _build_feature_configs(self) -> dict[str, Any]:
        import keras_rs

        configs = {}
        for feat in self.distributed_names:
            table = keras_rs.layers.TableConfig(
                name=f"{input_name(feat)}_table", vocabulary_size=self.rows[feat],
                embedding_dim=self.dim, combiner="sum", optimizer="adam", placement="auto")
            shape = self.input_shapes.get(feat, (None, None))
            configs[feat] = keras_rs.layers.FeatureConfig(
                name=feat, table=table, input_shape=tuple(shape),
                output_shape=(shape[0], self.dim))
        return configs

    @staticmethod
    def _make_distributed(configs: Mapping[str, Any]) -> Any:
        import keras_rs

        return keras_rs.layers.DistributedEmbedding(dict(configs), name="distributed_embedding")

    def feature_configs(self) -> dict[str, Any]:
        """keras-rs FeatureConfigs of the distributed tables, as built here (empty if none)."""
        return dict(self._feature_configs)

    def call(self, inputs: Mapping[str, Any]) -> dict[str, Any]:  # noqa: D102
        flat: dict[str, Any] = {}
        weights: dict[str, Any] = {}
        lead: dict[str, tuple[Any, ...]] = {}  # output axes before dim (list axis dynamic)
        for feat in self.rows:
            ids = ops.cast(inputs[feat], "int32")
            if feat in self.sequence_features:
                lead[feat] = tuple(ops.shape(ids)[:-1])
                ids2 = ops.reshape(ids, (-1, ids.shape[-1]))
                m = ops.cast(ops.not_equal(ids2, 0), self.compute_dtype)
                w = ops.divide_no_nan(m, ops.sum(m, axis=-1, keepdims=True))
            else:
                lead[feat] = tuple(ops.shape(ids))
                ids2 = ops.reshape(ids, (-1, 1))
                w = ops.ones_like(ops.cast(ids2, self.compute_dtype))
            flat[feat], weights[feat] = ids2, w
        out: dict[str, Any] = {}
        if self.distributed is not None:
            out.update(self.distributed({k: flat[k] for k in self.distributed_names},
                                        {k: weights[k] for k in self.distributed_names}))
        for feat, layer in self.small.items():
            e = layer(flat[feat])                                   # [N, T, dim]
            out[feat] = ops.sum(e * ops.expand_dims(weights[feat], -1), axis=1)
        return {k: ops.reshape(out[k], (*lead[k], self.dim)) for k in self.rows}

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {**super().get_config(), "rows": self.rows, "dim": self.dim,
                "min_rows": self.min_rows, "input_shapes": self.input_shapes,
                "sequence_features": sorted(self.sequence_features)}
