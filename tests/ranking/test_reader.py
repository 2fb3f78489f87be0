"""The tf.data ELWC reader on text-proto fixtures and on ELWC written by TF Ranking's tooling."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow_serving.apis import input_pb2

from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from beam_prep.ranking.train.reader import MASK_KEY, make_dataset
from tests.sample_data import TFRANKING

TFR_ELWC = TFRANKING + "/train_elwc.tfrecord"

FIXTURES = [
    """context { features { feature { key: "q" value { bytes_list { value: ["a", "b"] } } }
                          feature { key: "qlen" value { float_list { value: 2.0 } } } } }
       examples { features { feature { key: "x" value { float_list { value: 1.0 } } }
                             feature { key: "v" value { int64_list { value: [1, 2] } } }
                             feature { key: "rel" value { int64_list { value: 2 } } } } }
       examples { features { feature { key: "x" value { float_list { value: 2.0 } } }
                             feature { key: "rel" value { int64_list { value: 0 } } } } }
       examples { features { feature { key: "x" value { float_list { value: 3.0 } } }
                             feature { key: "v" value { int64_list { value: [7, 8] } } }
                             feature { key: "rel" value { int64_list { value: 1 } } } } }""",
    """examples { features { feature { key: "x" value { float_list { value: 4.0 } } }
                             feature { key: "rel" value { int64_list { value: 3 } } } } }""",
]
SPEC = ElwcFeatureSpec(
    context=(FeatureInfo("q", "string", (None,)), FeatureInfo("qlen", "float", (), -9.0)),
    example=(FeatureInfo("x", "float", (), -5.0), FeatureInfo("v", "int64", (2,), 0)),
    label=LabelInfo("rel", "int64"))


@pytest.fixture()
def fixture_file(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for t in FIXTURES:
            w.write(text_format.Parse(t, input_pb2.ExampleListWithContext()).SerializeToString())
    (tmp_path / "feature_spec.json").write_text(SPEC.to_json())
    return path


def test_padding_mask_defaults_and_spec_beside_files(fixture_file):
    ds = make_dataset(fixture_file, list_size=4, batch_size=2)
    features, labels = next(iter(ds))
    np.testing.assert_array_equal(labels, [[2, 0, 1, -1], [3, -1, -1, -1]])
    np.testing.assert_array_equal(features[MASK_KEY], [[1, 1, 1, 0], [1, 0, 0, 0]])
    assert features[MASK_KEY].dtype == tf.bool
    np.testing.assert_array_equal(features["x"], [[1, 2, 3, -5], [4, -5, -5, -5]])
    np.testing.assert_array_equal(features["v"][0], [[1, 2], [0, 0], [7, 8], [0, 0]])
    assert features["q"].to_list() == [[b"a", b"b"], []]
    np.testing.assert_array_equal(features["qlen"], [2.0, -9.0])
    assert labels.dtype == tf.float32


def test_truncation_dynamic_list_size_and_static_shapes(fixture_file):
    features, labels = next(iter(make_dataset(fixture_file, feature_spec=SPEC, list_size=2,
                                              batch_size=2)))
    np.testing.assert_array_equal(labels, [[2, 0], [3, -1]])
    features, labels = next(iter(make_dataset(fixture_file, feature_spec=SPEC, list_size=None,
                                              batch_size=2)))
    assert labels.shape == (2, 3)
    ds = make_dataset(fixture_file, feature_spec=SPEC, list_size=4, batch_size=1,
                      drop_remainder=True, mask_dtype=tf.int32)
    assert ds.element_spec[1].shape == (1, 4)
    assert ds.element_spec[0]["x"].shape == (1, 4)
    assert ds.element_spec[0][MASK_KEY].dtype == tf.int32
    assert [lab.numpy().tolist() for _, lab in ds] == [[[2, 0, 1, -1]], [[3, -1, -1, -1]]]


def test_seeded_example_shuffle_keeps_rows_together(fixture_file):
    def first_batch(seed):
        ds = make_dataset(fixture_file, feature_spec=SPEC, list_size=4, batch_size=2,
                          shuffle_examples=True, seed=seed)
        return next(iter(ds))

    f1, l1 = first_batch(3)
    f2, l2 = first_batch(3)
    np.testing.assert_array_equal(l1, l2)
    # x and rel still belong together, padding stays at the end, same multiset of labels
    pairs = {(float(x), float(r)) for x, r in zip(f1["x"][0], l1[0])}
    assert pairs == {(1.0, 2.0), (2.0, 0.0), (3.0, 1.0), (-5.0, -1.0)}
    assert l1[0, 3] == -1 and bool(f1[MASK_KEY][0, 2])
    orders = {tuple(first_batch(s)[1][0].numpy().tolist()) for s in range(8)}
    assert len(orders) > 1


def test_reads_tf_ranking_elwc():
    spec = {"context": [{"name": "query_tokens", "dtype": "string", "shape": [None]}],
            "example": [{"name": "document_tokens", "dtype": "string", "shape": [None]}],
            "label": {"name": "relevance", "dtype": "int64"}}
    ds = make_dataset(TFR_ELWC, feature_spec=spec, list_size=3, batch_size=4)
    got = [(f, lab) for f, lab in ds]
    truth = [input_pb2.ExampleListWithContext.FromString(r.numpy())
             for r in tf.data.TFRecordDataset(TFR_ELWC)]
    assert sum(int(lab.shape[0]) for _, lab in got) == len(truth) == 10
    first, labels = got[0]
    # the first record, as written by TF Ranking's tooling
    assert first["query_tokens"][0].numpy().tolist() == [b"this", b"is", b"a", b"relevant",
                                                         b"question"]
    assert first["document_tokens"][0, 0].numpy().tolist() == [b"this", b"is", b"a",
                                                               b"relevant", b"answer"]
    np.testing.assert_array_equal(labels[0], [1, 0, -1])
    i = 0
    for f, lab in got:
        for b in range(lab.shape[0]):
            t = truth[i]
            q = t.context.features.feature["query_tokens"].bytes_list.value
            assert f["query_tokens"][b].numpy().tolist() == list(q)
            for j, ex in enumerate(t.examples):
                doc = ex.features.feature["document_tokens"].bytes_list.value
                assert f["document_tokens"][b, j].numpy().tolist() == list(doc)
                assert lab[b, j] == ex.features.feature["relevance"].int64_list.value[0]
            assert int(tf.reduce_sum(tf.cast(f[MASK_KEY][b], tf.int32))) == len(t.examples)
            i += 1
