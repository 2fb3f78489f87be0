"""Lists longer than ``data.list_size``: training keeps a seeded random subset of each list (TF
Ranking shuffles before truncating), validation reads every document (or, with static shapes,
the same seeded subset at every evaluation)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from beam_prep.ranking.train.hparams import DataHparams
from beam_prep.ranking.train.launcher import DatasetBuilder
from beam_prep.ranking.train.preprocessor import Preprocessor
from beam_prep.ranking.train.reader import MASK_KEY
from tests.ranking.long_lists import elwc

SPEC = ElwcFeatureSpec(context=(), example=(FeatureInfo("f", "float", (), 0.0),),
                       label=LabelInfo("relevance", "int64", -1.0))
DOCS, SIZE = 10, 4


def _builder(tmp_path, *, seed: int = 0, full_valid_lists: bool = True, docs: int = DOCS):
    path = str(tmp_path / f"lists-{docs}.tfrecord")
    with tf.io.TFRecordWriter(path) as w:  # document i: f = i, label = i % 3
        w.write(elwc({}, [{"f": [float(i)], "relevance": [i % 3]} for i in range(docs)]))
    SPEC.save(str(tmp_path / "feature_spec.json"))
    data = DataHparams(feature_spec=str(tmp_path / "feature_spec.json"), train_pattern=path,
                       list_size=SIZE, train_batch_size=1, shuffle_buffer=0)
    pre = Preprocessor(SPEC, {}, list_size=SIZE, include_mask=True)
    return DatasetBuilder(data, pre, seed=seed, full_valid_lists=full_valid_lists), path


def _kept(batches, n: int) -> list[list[int]]:
    """The documents (their ``f``) of the first list of ``n`` batches; labels checked."""
    out = []
    for features, labels in batches.take(n):
        mask = features[MASK_KEY].numpy()[0] > 0.5
        f = features["f"].numpy()[0, :, 0][mask].astype(int)
        np.testing.assert_array_equal(labels.numpy()[0][mask], f % 3)  # rows stay together
        assert np.all(labels.numpy()[0][~mask] == -1.0)
        out.append(f.tolist())
    return out


def test_training_keeps_a_seeded_random_subset_of_each_long_list(tmp_path):
    builder, path = _builder(tmp_path, seed=1)
    kept = _kept(builder.build(path, 1, training=True), 400)
    assert all(len(k) == SIZE and len(set(k)) == SIZE for k in kept)
    assert sum(k == [0, 1, 2, 3] for k in kept) < 10  # not the first N in file order
    # every document survives with probability list_size / len = 0.4 (binomial, 400 draws:
    # mean 160, sd 9.8; 5 sd either side)
    counts = np.bincount(np.concatenate(kept), minlength=DOCS)
    assert counts.sum() == 400 * SIZE
    assert np.all(np.abs(counts - 160) < 50), counts
    # deterministic for a seed, different for another
    again = _kept(_builder(tmp_path, seed=1)[0].build(path, 1, training=True), 50)
    other = _kept(_builder(tmp_path, seed=2)[0].build(path, 1, training=True), 50)
    assert again == kept[:50]
    assert other != kept[:50]


def test_a_short_list_keeps_every_document(tmp_path):
    builder, path = _builder(tmp_path, docs=3)
    for k in _kept(builder.build(path, 1, training=True), 20):
        assert sorted(k) == [0, 1, 2]


def test_validation_reads_every_document_in_file_order(tmp_path):
    builder, path = _builder(tmp_path)
    for _ in range(2):  # every evaluation
        (features, labels), = builder.build(path, 1, training=False)
        assert features["f"].shape == (1, 12, 1)  # 10 documents, padded to a multiple of 4
        assert _kept(tf.data.Dataset.from_tensors((features, labels)), 1) == [list(range(10))]


def test_static_validation_uses_the_same_seeded_subset_every_time(tmp_path):
    def subsets(seed):
        builder, path = _builder(tmp_path, seed=seed, full_valid_lists=False)
        ds = builder.build(path, 1, training=False)
        return [_kept(ds, 1)[0] for _ in range(3)]

    runs = {s: subsets(s) for s in range(6)}
    for s, kept in runs.items():
        assert kept[0] == kept[1] == kept[2] and len(set(kept[0])) == SIZE, (s, kept)
    assert len({tuple(sorted(k[0])) for k in runs.values()}) > 1  # seeded, not file order
