"""Byte encoders vs protobuf, TFRecord framing vs tf.data, list policies, counter CombineFn."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.example import example_pb2
from tensorflow_serving.apis import input_pb2

from beam_prep.ranking.data.encode import DenseFloatEncoder, encode_elwc, encode_features
from beam_prep.ranking.data.lists import CountsCombineFn, plan_lists, shard_of, split_of
from beam_prep.ranking.data.tfrecord import write_tfrecords


def _keys_in_wire_order(serialized: bytes) -> list[str]:
    """Map keys of a serialized Example in the order they appear on the wire."""
    ex = example_pb2.Example.FromString(serialized)
    keys = list(ex.features.feature)
    return sorted(keys, key=lambda k: serialized.find(b"\x0a" + bytes([len(k)]) + k.encode()))


@pytest.mark.parametrize("label_dtype", ["float", "int64"])
def test_dense_encoder_matches_protobuf(label_dtype):
    names = ["f1", "f2", "f10", "a", "zz"]
    values = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    values[0, 1] = -0.0
    labels = np.array([0, 3, 2, 127.0])
    got = DenseFloatEncoder(names, label_name="relevance", label_dtype=label_dtype).encode(
        values, labels)
    for i in range(4):
        ex = example_pb2.Example()
        for j, n in enumerate(names):
            ex.features.feature[n].float_list.value.append(values[i, j])
        if label_dtype == "float":
            ex.features.feature["relevance"].float_list.value.append(labels[i])
        else:
            ex.features.feature["relevance"].int64_list.value.append(int(labels[i]))
        assert example_pb2.Example.FromString(got[i]) == ex
        assert _keys_in_wire_order(got[i]) == ["a", "f1", "f10", "f2", "relevance", "zz"]
    assert got[0].count(b"\x00\x00\x00\x80") == 1  # -0.0 kept bit-exactly


def test_generic_features_and_elwc_match_protobuf():
    ctx = encode_features({"q": ("string", ["a", "bé"]), "n": ("int64", [1, -5, 300]),
                           "e": ("float", []), "s": ("string", [])})
    ex = encode_features({"relevance": ("int64", [2]), "x": ("float", [0.5, 1.5])})
    elwc = encode_elwc([ex, ex], ctx)
    expected = text_format.Parse("""
        examples { features {
          feature { key: "relevance" value { int64_list { value: 2 } } }
          feature { key: "x" value { float_list { value: [0.5, 1.5] } } } } }
        examples { features {
          feature { key: "relevance" value { int64_list { value: 2 } } }
          feature { key: "x" value { float_list { value: [0.5, 1.5] } } } } }
        context { features {
          feature { key: "q" value { bytes_list { value: ["a", "b\\303\\251"] } } }
          feature { key: "n" value { int64_list { value: [1, -5, 300] } } }
          feature { key: "e" value { float_list { } } }
          feature { key: "s" value { bytes_list { } } } } }
        """, input_pb2.ExampleListWithContext())
    assert input_pb2.ExampleListWithContext.FromString(elwc) == expected
    empty = input_pb2.ExampleListWithContext.FromString(encode_elwc([], encode_features({})))
    assert len(empty.examples) == 0 and empty.HasField("context")


def test_tfrecords_read_back_with_tf_data(tmp_path):
    records = [b"", b"a", bytes(range(256)) * 100]
    for gzip in (False, True):
        path = str(tmp_path / f"x{int(gzip)}.tfrecord")
        assert write_tfrecords(path, records, gzip=gzip) == 3
        got = [r.numpy() for r in tf.data.TFRecordDataset(path, "GZIP" if gzip else "")]
        assert got == records
        first = open(path, "rb").read()
        write_tfrecords(path, records, gzip=gzip)
        assert open(path, "rb").read() == first


def test_plan_lists_policies():
    labels = np.array([1, 0, 0, 0, 0, 0, 0.0])
    kw = dict(min_list_size=1, drop_no_positive=False, seed=0, qid="q")
    parts, ev = plan_lists(7, labels, max_list_size=3, policy="split", **kw)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4], [5, 6]]
    assert ev == {"queries_split": 1, "extra_lists_from_split": 2}
    parts, ev = plan_lists(7, labels, max_list_size=3, policy="truncate", **kw)
    assert [p.tolist() for p in parts] == [[0, 1, 2]] and ev["documents_truncated"] == 4
    a, _ = plan_lists(7, labels, max_list_size=3, policy="sample", **kw)
    b, _ = plan_lists(7, labels, max_list_size=3, policy="sample", **kw)
    assert a[0].tolist() == b[0].tolist() and len(set(a[0].tolist())) == 3
    assert a[0].tolist() == sorted(a[0].tolist())
    parts, ev = plan_lists(7, labels, max_list_size=3, policy="split", min_list_size=1,
                           drop_no_positive=True, seed=0, qid="q")
    assert [p.tolist() for p in parts] == [[0, 1, 2]]
    assert ev["lists_dropped_no_positive"] == 2 and ev["documents_dropped_no_positive"] == 4
    parts, ev = plan_lists(2, labels[:2], max_list_size=None, policy="split", min_list_size=3,
                           drop_no_positive=False, seed=0, qid="q")
    assert parts == [] and ev == {"lists_dropped_too_small": 1, "documents_dropped_too_small": 2}


def test_split_and_shard_are_stable_and_balanced():
    splits = (("train", 0.8), ("test", 0.2))
    names = [split_of(f"q{i}", splits, "s") for i in range(5000)]
    assert abs(names.count("train") / 5000 - 0.8) < 0.03
    assert [split_of(f"q{i}", splits, "s") for i in range(50)] == names[:50]
    assert split_of("q1", (("all", 1.0),), "s") == "all"
    shards = [shard_of(f"q{i}", 4) for i in range(4000)]
    assert min(shards.count(s) for s in range(4)) > 900
    # a fixed value guards against a silent change of the hash (which would move every query)
    import hashlib
    expected = int.from_bytes(hashlib.blake2b(b"shard\x00q7", digest_size=8).digest(), "big") % 4
    assert shard_of("q7", 4) == expected


CASES = [{"a": 1, "h": {"1": 2}}, {"a": 2, "h": {"1": 1, "3": 4}}, {"b": 5}, {}]


def test_counts_combine_fn_contract():
    fn = CountsCombineFn()
    expected = {"a": 3, "b": 5, "h": {"1": 3, "3": 4}}
    acc = fn.create_accumulator()
    for c in CASES:
        acc = fn.add_input(acc, pickle.loads(pickle.dumps(c)))
    assert fn.extract_output(acc) == expected
    for order in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]):
        accs = []
        for i in order:
            a = fn.add_input(fn.create_accumulator(), dict(CASES[i]))
            accs.append(pickle.loads(pickle.dumps(a)))
        assert fn.extract_output(fn.merge_accumulators(accs)) == expected
    assert fn.extract_output(fn.create_accumulator()) == {}
    assert list(fn.extract_output({"h": {"10": 1, "9": 1, "x": 1}})["h"]) == ["9", "10", "x"]


@pytest.mark.parametrize("label_dtype,labels", [
    ("float", [0.0, 3.0, -0.0, 0.5, 2.0]),
    ("int64", [0, 3, 1, 4, 2]),            # one varint length: byte-matrix path
    ("int64", [0, 300, -1, 127, 128]),     # 1-, 2- and 10-byte varints: per-document path
])
def test_framed_examples_join_into_protobuf_lists(label_dtype, labels):
    names = ["f2", "f1", "f10"]
    values = np.random.RandomState(1).randn(len(labels), 3).astype(np.float32)
    values[1, 2] = -0.0
    enc = DenseFloatEncoder(names, label_name="relevance", label_dtype=label_dtype)
    framed = enc.frame_examples(values, np.array(labels, np.float64))
    assert isinstance(framed, np.ndarray) == (labels[1] != 300)
    rows = [framed[i].tobytes() if isinstance(framed, np.ndarray) else framed[i]
            for i in range(len(labels))]
    context = encode_features({"q": ("string", ["x"])})
    for picked in ([0, 1, 2, 3, 4], [1, 3], [4]):
        data = b"".join(rows[i] for i in picked) + encode_elwc([], context)
        expected = input_pb2.ExampleListWithContext()
        expected.context.features.feature["q"].bytes_list.value.append(b"x")
        for i in picked:
            f = expected.examples.add().features.feature
            for j, n in enumerate(names):
                f[n].float_list.value.append(values[i, j])
            if label_dtype == "float":
                f["relevance"].float_list.value.append(labels[i])
            else:
                f["relevance"].int64_list.value.append(int(labels[i]))
        got = input_pb2.ExampleListWithContext.FromString(data)
        assert got == expected
        assert (b"\x00\x00\x00\x80" in data) == (1 in picked)  # -0.0 kept bit-exactly
        # same bytes as the per-document encoder (whose key order is checked above)
        sub = np.array(picked)
        assert data == encode_elwc(enc.encode(values[sub], np.array(labels, float)[sub]), context)


META = [
    {"counts": {"files": 1, "lines": 5}, "layout": {"ids": np.array([1, 3])},
     "piece_lines": {(0, 0): 6}},
    {"counts": {"files": 0, "lines": 4}, "layout": {"ids": np.array([2])},
     "piece_lines": {(0, 1): 4}},
    {"counts": {"files": 1, "lines": 1}, "layout": {"ids": np.array([3, 7])},
     "piece_lines": {(1, 0): 1}},
]


def test_meta_combine_fn_contract():
    from beam_prep.ranking.data.rejected import LineIndex
    from beam_prep.ranking.data.transforms import MetaCombineFn

    fn = MetaCombineFn()
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        accs = [pickle.loads(pickle.dumps(fn.add_input(fn.create_accumulator(), META[i])))
                for i in order]
        out = fn.extract_output(fn.merge_accumulators(accs))
        assert out["counts"] == {"files": 2, "lines": 10}
        assert out["layout"]["ids"].tolist() == [1, 2, 3, 7]
        # piece 1 of file 0 starts after the 6 lines of piece 0; file 1 after all 10 of file 0
        assert out["line_index"] == LineIndex({(0, 0): (0, 0), (0, 1): (6, 6), (1, 0): (0, 10)},
                                              11)
    assert all("rejected" not in m for m in META)  # rejected lines never enter the side input
    empty = fn.extract_output(fn.create_accumulator())
    assert empty == {"counts": {}, "layout": {}, "line_index": LineIndex({}, 0)}


def test_labels_a_label_field_cannot_hold_are_input_errors_not_struct_errors():
    from beam_prep.errors import InputError

    values = np.zeros((1, 1), np.float32)
    enc = DenseFloatEncoder(["f1"], label_name="relevance", label_dtype="float")
    with pytest.raises(InputError, match="label 1e\\+39 does not fit a float32 label"):
        enc.encode(values, np.array([1e39]))
    with pytest.raises(InputError, match="float32"):
        enc.frame_examples(values, np.array([-1e39]))
    # 3.4028235e38 rounds to the largest float32: kept, as protobuf keeps it.
    got = enc.encode(values, np.array([3.4028235e38]))[0]
    ex = example_pb2.Example.FromString(got)
    assert ex.features.feature["relevance"].float_list.value[0] == np.finfo(np.float32).max
    enc = DenseFloatEncoder(["f1"], label_name="relevance", label_dtype="int64")
    with pytest.raises(InputError, match="int64 label"):
        enc.encode(values, np.array([2.0**63]))
    got = enc.encode(values, np.array([2.0**62]))[0]
    ex = example_pb2.Example.FromString(got)
    assert ex.features.feature["relevance"].int64_list.value[0] == 2**62
