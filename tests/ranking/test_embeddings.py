"""RankingEmbeddings keeps its own copy of the keras-rs feature configs it builds."""

from __future__ import annotations

import numpy as np

from beam_prep.ranking.train.embeddings import RankingEmbeddings


def test_feature_configs_are_ours_not_read_from_keras_rs_private_state():
    emb = RankingEmbeddings({"query": 12, "doc": 30, "small": 3}, dim=4, min_rows=10,
                            sequence_features=("query", "doc"),
                            input_shapes={"query": (2, 5), "doc": (8, 5)})
    assert emb.distributed_names == ("doc", "query")
    # keras-rs keeps the configs under a private attribute that may change between releases;
    # our accessor must not depend on it.
    if hasattr(emb.distributed, "_feature_configs"):
        object.__delattr__(emb.distributed, "_feature_configs")
    configs = emb.feature_configs()
    assert sorted(configs) == ["doc", "query"]
    assert configs["doc"].table.vocabulary_size == 30
    assert configs["query"].table.vocabulary_size == 12
    assert configs["doc"].table.embedding_dim == 4
    assert configs["doc"].input_shape == (8, 5)
    assert configs["query"].output_shape == (2, 4)
    # A copy: callers cannot change what the layer holds.
    configs.pop("doc")
    assert sorted(emb.feature_configs()) == ["doc", "query"]


def test_without_large_tables_there_are_no_feature_configs():
    emb = RankingEmbeddings({"a": 5}, dim=2, min_rows=100)
    assert emb.distributed is None and emb.feature_configs() == {}
    out = emb({"a": np.array([[0, 4]])})
    assert tuple(out["a"].shape) == (1, 2, 2)
