"""The ListEncoding layer and padded_list, on hand-written indices (oracle: the definition).

Index 0 is padding wherever it sits in the row; ``pad`` keeps the first ``max_values`` real
indices; ``multi_hot`` / ``count`` put index ``i`` in column ``i - 1``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzzing import examples

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
pa = pytest.importorskip("pyarrow")

from beam_prep.codegen.derived_layer import DerivedFeature  # noqa: E402
from beam_prep.codegen.list_layer import ListEncoding, padded_list  # noqa: E402
from beam_prep.expr import arrow as arrow_side  # noqa: E402
from beam_prep.expr import check, parse  # noqa: E402
from beam_prep.expr import tf as tf_side  # noqa: E402

ROWS = [[0, 3, 0, 4, 5], [2, 2, 2, 0, 0], [0, 0, 0, 0, 0], [1, 0, 1, 6, 0]]


def _python(rows, mode, n):
    real = [[i for i in r if i != 0] for r in rows]
    if mode == "ragged":
        return real
    if mode == "pad":
        return [(r[:n] + [0] * n)[:n] for r in real]
    out = []
    for r in real:
        h = [0.0] * n
        for i in r:
            h[i - 1] = 1.0 if mode == "multi_hot" else h[i - 1] + 1.0
        out.append(h)
    return out


@pytest.mark.parametrize("mode, n", [("pad", 2), ("pad", 7), ("ragged", None),
                                     ("multi_hot", 6), ("count", 6)])
def test_modes_follow_the_definition(mode, n):
    kwargs = {"max_values": n} if mode == "pad" else {"num_tokens": n} if n else {}
    layer = ListEncoding(mode, name="x_list", **kwargs)
    got = layer(tf.constant(ROWS, tf.int64))
    plain = got.to_list() if isinstance(got, tf.RaggedTensor) else got.numpy().tolist()
    assert plain == _python(ROWS, mode, n)


@pytest.mark.parametrize("mode, shape", [("pad", [3, 4]), ("multi_hot", [3, 5]),
                                         ("count", [3, 5])])
def test_rows_without_any_value(mode, shape):
    kwargs = {"max_values": 4} if mode == "pad" else {"num_tokens": 5}
    got = ListEncoding(mode, name="x_list", **kwargs)(tf.zeros([3, 0], tf.int64))
    assert got.shape.as_list() == shape
    assert not np.asarray(got).any()


def test_symbolic_specs_and_config():
    x = keras.Input(shape=(None,), dtype="int64")
    assert ListEncoding("pad", max_values=3)(x).shape == (None, 3)
    ragged = ListEncoding("ragged")(x)
    assert ragged.ragged and ragged.dtype == "int64"
    assert ListEncoding("count", num_tokens=9)(x).dtype == "float32"
    config = ListEncoding("pad", max_values=3, name="a_list").get_config()
    assert ListEncoding.from_config(config).max_values == 3


def test_padded_list_from_ragged_sparse_and_dense():
    ragged = tf.ragged.constant([[5, 6], [], [7]], tf.int32)
    want = [[5, 6], [-(2**63), -(2**63)], [7, -(2**63)]]
    assert padded_list(ragged, "int64", -(2**63)).numpy().tolist() == want
    sparse = tf.RaggedTensor.from_tensor(tf.constant([[b"a", b""], [b"b", b"c"]]),
                                         padding=b"").to_sparse()
    assert padded_list(sparse, "string", "").numpy().tolist() == [[b"a", b""], [b"b", b"c"]]
    dense = tf.constant([[1, 2]], tf.int64)
    assert padded_list(dense, "int64", 0) is dense
    with pytest.raises(TypeError, match="list column of int64 values"):
        padded_list(tf.ragged.constant([["a"]]), "int64", 0)


STRINGS = st.one_of(st.none(), st.sampled_from(["", "|", "||", "a||b|", " | ", "x"]),
                    st.text(alphabet=st.sampled_from(list("ab |\\,") + ["ß", "日"]), max_size=8))


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(STRINGS, min_size=1, max_size=6),
       sep=st.sampled_from(["|", " ", ",", "ab"]))
def test_split_in_the_layer_equals_the_arrow_analysis(texts, sep):
    """What the analysis counts for split() is what the DerivedFeature layer passes on."""
    tree = check(parse(f"split(s, '{sep}')"), {"s": "string"})
    counted = arrow_side.evaluate(tree, pa.table({"s": pa.array(texts, pa.string())}))
    layer = DerivedFeature(lambda inputs: tf_side.evaluate(tree, inputs), ["s"], "string",
                           list_output=True, name="s_expr")
    padded = layer({"s": tf.constant([[t or ""] for t in texts])}).numpy().tolist()
    got = [[v.decode() for v in row if v != b""] for row in padded]
    assert got == [row or [] for row in counted.to_pylist()]


def test_empty_integer_vocabulary_of_a_list_maps_values_to_oov(tmp_path):
    """The empty-vocabulary sentinel (-2**63) is the list mask: another one is used."""
    from beam_prep.codegen.runtime import layers_from_artifacts
    from tests.codegen.artifact_fixtures import write_artifacts

    spec = {"features": [{"name": "ids", "kind": "integer", "shape": "list", "max_values": 3,
                          "min_count": 100}]}
    path = write_artifacts(str(tmp_path), spec, {"ids": [5, 7]})
    pp = layers_from_artifacts(path)
    out = pp.build_preprocessor()(pp.raw_columns({"ids": tf.ragged.constant([[5, 7], []],
                                                                            tf.int64)}))
    assert out["ids"].numpy().tolist() == [[1, 1, 0], [0, 0, 0]]


@pytest.mark.parametrize("dtype, salt, rows", [
    ("integer", None, [[5, 7, 5], [], [-3]]),
    ("string", 7, [["x", "y"], ["z"], []]),
])
def test_hashed_lists_are_the_scalar_bin_plus_one(tmp_path, dtype, salt, rows):
    from beam_prep.codegen.runtime import layers_from_artifacts
    from tests.codegen.artifact_fixtures import write_artifacts

    base = {"kind": "hashed", "num_bins": 5, "dtype": dtype, "salt": salt, "shape": "list"}
    spec = {"features": [{"name": "h", **base, "max_values": 2},
                         {"name": "h_count", "column": "h", **base, "output_mode": "count"}]}
    pp = layers_from_artifacts(write_artifacts(str(tmp_path), spec, {}))
    value_dtype = tf.int64 if dtype == "integer" else tf.string
    out = pp.build_preprocessor()(pp.raw_columns({"h": tf.ragged.constant(rows, value_dtype),
                                                  "h_count": tf.ragged.constant(rows,
                                                                                value_dtype)}))
    scalar = keras.layers.Hashing(num_bins=5, salt=salt)
    bins = [[int(scalar(tf.constant([[v]], value_dtype))[0, 0]) + 1 for v in r] for r in rows]
    assert out["h"].numpy().tolist() == [(b[:2] + [0, 0])[:2] for b in bins]
    assert out["h_count"].numpy().tolist() == [
        [float(b.count(i)) for i in range(1, 6)] for b in bins]
