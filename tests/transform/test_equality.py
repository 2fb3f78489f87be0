"""The transform job's encoders == the generated Keras layers in tf.data, over every kind.

Artifacts come from the real analysis of a training Parquet file; the comparison runs on a
*serving* file with unseen values (OOV), missing cells, NaN, negative integers and lists
with missing elements. The oracle is the generated module itself, driven through its public
``make_dataset_fn`` in ``tf.data`` (so it follows any change of the module's raw inputs):
integer outputs must be identical, float outputs within 1 ulp.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


from beam_prep.io.inputs.readers import Split, read_split  # noqa: E402
from beam_prep.transform.layers import BatchEncoder  # noqa: E402
from tests.codegen.conftest import analyze_and_import  # noqa: E402

SPEC = """
features:
  - {name: s_int, kind: string, column: country, top_k: 3, num_oov_indices: 3}
  - {name: s_one, kind: string, column: country, top_k: 3, output_mode: one_hot}
  - {name: s_multi, kind: string, column: country, output_mode: multi_hot, num_oov_indices: 2}
  - {name: s_count, kind: string, column: device, output_mode: count}
  - {name: s_mask, kind: string, column: device, mask_token: tv}
  - {name: s_fill, kind: string, column: device, default_value: phone, min_count: 2}
  - {name: i_int, kind: integer, column: item, top_k: 2, num_oov_indices: 3}
  - {name: i_one, kind: integer, column: item, output_mode: one_hot, default_value: 0}
  - {name: i_mask, kind: integer, column: item, mask_token: 5}
  - {name: s_labels, kind: string, column: country, labels: item, top_k: 3, num_oov_indices: 2}
  - {name: i_labels, kind: integer, column: qty_i, labels: item, adjusted_mutual_info: true}
  - {name: t_int, kind: text, column: title, ngrams: 2}
  - {name: t_len, kind: text, column: title, standardize: lower, output_sequence_length: 4}
  - {name: t_char, kind: text, column: title, split: character, output_mode: multi_hot}
  - {name: t_count, kind: text, column: title, output_mode: count, max_tokens: 6}
  - {name: t_idf, kind: text, column: title, output_mode: tf_idf, ngrams: 2}
  - {name: t_none, kind: text, column: device, split: none, standardize: none}
  - {name: t_fill, kind: text, column: title, default_value: "no title"}
  - {name: n_z, kind: numeric, column: price, num_buckets: 4}
  - {name: n_mm, kind: numeric, column: price, scaling: min_max}
  - {name: n_const, kind: numeric, column: const, scaling: min_max}
  - {name: n_raw, kind: numeric, column: price, scaling: none, default_value: 1.5}
  - {name: n_fill, kind: numeric, column: qty, default_value: 2.0, num_buckets: 3}
  - {name: n_log, kind: numeric, column: price, scaling: log1p}
  - {name: n_rob, kind: numeric, column: price, scaling: robust}
  - {name: n_rob_const, kind: numeric, column: const, scaling: robust, default_value: 1.0}
  - {name: n_ple, kind: numeric, column: price, scaling: piecewise_linear, num_buckets: 4}
  - {name: n_ple_fill, kind: numeric, column: qty, scaling: piecewise_linear, num_buckets: 3,
     default_value: 2.0}
  - {name: n_ple_const, kind: numeric, column: const, scaling: piecewise_linear, num_buckets: 3}
  - {name: h_str, kind: hashed, column: country, num_bins: 16}
  - {name: h_salt, kind: hashed, column: country, num_bins: 16, salt: 7}
  - {name: h_int, kind: hashed, column: item, dtype: integer, num_bins: 10,
     output_mode: count}
  - {name: h_cross, kind: hashed, cross: [country, device], num_bins: 32}
  - {name: h_icross, kind: hashed, cross: [item, qty_i], dtype: integer, num_bins: 32}
  - {name: d_ratio, kind: numeric, expr: "price / (qty + 1)"}
  - {name: d_log, kind: numeric, expr: "log1p(abs(price))", num_buckets: 3}
  - {name: d_cross, kind: string, expr: "cross(country, device)", top_k: 5}
  - {name: d_lower, kind: hashed, expr: "lower(device)", num_bins: 8}
  - {name: l_tags, kind: string, column: tags, shape: list, max_values: 3}
  - {name: l_ragged, kind: string, column: tags, shape: list, num_oov_indices: 2}
  - {name: l_multi, kind: string, column: tags, shape: list, output_mode: multi_hot}
  - {name: l_ids, kind: integer, column: ids, shape: list, output_mode: count}
  - {name: l_hash, kind: hashed, column: tags, shape: list, num_bins: 8, max_values: 4}
  - {name: l_split, kind: string, expr: "split(title, ' ')", max_values: 3}
  - {name: te_s, kind: string, column: country, target_encoding: {labels: price,
     fold_column: device, folds: 3, smoothing: 1.5}}
  - {name: te_i, kind: integer, column: item, default_value: 0, target_encoding: {labels: qty,
     fold_column: country, folds: 2, smoothing: 0}}
"""

COUNTRIES = ["US", "DE", "FR", "US", "JP", None, "US", "DE", "BR", "FR", "US", "IT"]
DEVICES = ["phone", "tv", "web", "phone", "", None, "phone", "web", "tv", "Phone", "web", "tv"]
ITEMS = [1, 2, 3, 1, -4, None, 5, 5, 2, 1, 7, 1]
TITLES = ["Red shoes, size 9!", "blue HAT", "", None, "red hat red", "Shoes & socks",
          "a b c d e f", "ÉTÉ été", "red", "blue shoes", "hat", "x"]
PRICES = [1.0, 2.5, None, 4.0, 5.25, float("nan"), 7.0, 1e-3, -3.0, 2.0, 3.5, 100.0]
QTY = [1.0, None, 3.0, 0.0, 2.0, 1.0, None, 4.0, 1.0, 2.0, 2.0, 5.0]
TAGS = [["a", "b"], [], None, ["c", None, "a"], ["a", "a", "b", "d"], ["b"], ["e"], ["a"],
        ["", "b"], ["c"], ["a", "c"], ["b", "b"]]
IDS = [[1, 2], [2], None, [3, 1], [], [1, 1, 1], [9], [2, 3], [1], [2], [4], [1]]

SERVE_COUNTRIES = ["US", "XX", None, "DE", "", "ZZ", "FR", "yy", "BR", "US"]
SERVE_DEVICES = ["tv", "console", None, "", "phone", "Phone", "web", "TV", "tv", "x"]
SERVE_ITEMS = [1, 99, None, -7, 5, 2, -(2**40), 3, 0, 1]
SERVE_TITLES = ["red shoes", "green hat!!", None, "", "RED red red", "unknown words here",
                "a b c d e f g", "été", "socks & shoes", "blue"]
SERVE_PRICES = [1.0, 1e6, None, float("nan"), -2.0, 3.0, 0.1, 7.0, 5.25, 2.5]
SERVE_QTY = [1.0, None, 2.0, 0.0, 1.0, 3.0, None, 1.0, 2.0, 9.0]
SERVE_TAGS = [["a", "zz"], None, [], ["b", None, "c", "a", "e"], ["q"], ["a"], ["", "c"],
              ["d", "d"], ["b"], ["a", "b", "c", "d"]]
SERVE_IDS = [[1, 50], [], None, [2, 3, 1], [-1], [1], [9, 9], [4], [2], [3]]


def _table(countries, devices, items, titles, prices, qty, tags, ids) -> pa.Table:
    n = len(countries)
    return pa.table({
        "country": countries, "device": devices, "item": pa.array(items, pa.int64()),
        "title": titles, "price": pa.array(prices, pa.float64()),
        "qty": pa.array(qty, pa.float64()), "const": pa.array([3.0] * n),
        "qty_i": pa.array([int(q) if q is not None else None for q in qty], pa.int64()),
        "tags": pa.array(tags, pa.list_(pa.string())),
        "ids": pa.array(ids, pa.list_(pa.int64())),
    })


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("transform_eq")
    pq.write_table(_table(COUNTRIES, DEVICES, ITEMS, TITLES, PRICES, QTY, TAGS, IDS),
                   str(root / "train.parquet"))
    serve = _table(SERVE_COUNTRIES, SERVE_DEVICES, SERVE_ITEMS, SERVE_TITLES, SERVE_PRICES,
                   SERVE_QTY, SERVE_TAGS, SERVE_IDS)
    pq.write_table(serve, str(root / "serve.parquet"))
    (root / "spec.yaml").write_text(SPEC)
    out, module = analyze_and_import(root, "train.parquet", "bp_generated_transform_eq")
    return out, module, str(root / "serve.parquet"), serve


def _missing_filled(values: list, dtype: str) -> list:
    missing = {"string": "", "float": float("nan"), "int": -(2**63)}[dtype]
    return [missing if v is None else v for v in values]


def keras_outputs(module, table: pa.Table) -> dict[str, object]:
    """The generated layers applied in tf.data to the table's columns (one batch)."""
    feats = {}
    for name in table.column_names:
        col = table.column(name)
        t = col.type
        if pa.types.is_list(t):
            rows = [[x for x in (r or []) if x is not None and x != ""] for r in col.to_pylist()]
            dtype = tf.string if pa.types.is_string(t.value_type) else tf.int64
            feats[name] = tf.ragged.constant(rows, dtype=dtype)
        elif pa.types.is_string(t):
            feats[name] = tf.constant(_missing_filled(col.to_pylist(), "string"))
        elif pa.types.is_integer(t):
            feats[name] = tf.constant(_missing_filled(col.to_pylist(), "int"), tf.int64)
        else:
            feats[name] = tf.constant(_missing_filled(col.to_pylist(), "float"), tf.float64)
    ds = tf.data.Dataset.from_tensors(feats).map(module.make_dataset_fn())
    return next(iter(ds))


def _ulp_close(mine: np.ndarray, ref: np.ndarray) -> bool:
    mine, ref = mine.astype(np.float32), ref.astype(np.float32)
    both_nan = np.isnan(mine) & np.isnan(ref)
    a = mine.view(np.int32).astype(np.int64)
    b = ref.view(np.int32).astype(np.int64)
    a = np.where(a < 0, -(2**31) - a, a)  # lexicographic order of float bits
    b = np.where(b < 0, -(2**31) - b, b)
    return bool(np.all(both_nan | (np.abs(a - b) <= 1)))


def _compare(mine: dict, ref: dict) -> list[str]:
    """Keys whose encoded values differ from the layers' (ints exact, floats <= 1 ulp)."""
    failures = []
    for key, encoded in mine.items():
        r = ref[key]
        if isinstance(r, tf.RaggedTensor):
            want = r.to_list()
            got = [encoded.values[a:b].tolist() for a, b in
                   zip(encoded.row_splits[:-1], encoded.row_splits[1:])]
            ok = got == want
        elif encoded.row_splits is not None:  # int text without a length: padded per batch
            r = r.numpy()
            got = [encoded.values[a:b] for a, b in
                   zip(encoded.row_splits[:-1], encoded.row_splits[1:])]
            ok = all(np.array_equal(r[i, :len(g)], g) and not r[i, len(g):].any()
                     for i, g in enumerate(got))
        else:
            r = r.numpy()
            if r.ndim == 1:
                r = r.reshape(-1, 1)
            values = encoded.values
            if key in IDF_KEYS:  # column 0 ([UNK]): see test_tf_idf_unknown_column
                r, values = r[:, 1:], values[:, 1:]
            if encoded.dtype == "float32":
                ok = r.shape == values.shape and _ulp_close(values, r)
            else:
                ok = r.shape == values.shape and np.array_equal(values, r.astype(np.int64))
        if not ok:
            failures.append(key)
    return failures


IDF_KEYS = ("t_idf",)


def test_encoders_equal_generated_layers_in_tf_data(setup):
    out, module, serve_path, serve = setup
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(serve_path, "parquet"), enc.columns))
    assert not result.rejected
    mine = enc.encode(result.batch)
    ref = keras_outputs(module, serve)
    assert set(mine) == set(ref)
    assert not _compare(mine, ref)


def test_tf_idf_unknown_column(setup):
    """The [UNK] idf weight is TensorFlow's float32 reduce_mean, whose summation order
    depends on the CPU's vector width: ours (float64 mean, rounded) is within 4 ulps."""
    out, module, serve_path, serve = setup
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(serve_path, "parquet"), enc.columns))
    mine = enc.encode(result.batch)["t_idf"].values[:, 0]
    ref = keras_outputs(module, serve)["t_idf"].numpy()[:, 0]
    np.testing.assert_allclose(mine, ref, rtol=4 * 2.0**-23, atol=0)


def _parse_shards(paths: list[str], manifest: dict) -> dict[str, object]:
    spec = {}
    for o in manifest["outputs"]:
        dtype = tf.float32 if o["dtype"] == "float32" else tf.int64
        spec[o["key"]] = (tf.io.RaggedFeature(dtype) if o["ragged"]
                          else tf.io.FixedLenFeature([o["width"]], dtype))
    records = [r for p in paths for r in tf.data.TFRecordDataset(p)]
    return tf.io.parse_example(tf.stack(records), spec)


def test_job_output_equals_layers_and_is_deterministic(setup, tmp_path):
    import json

    from beam_prep.pipelines import transform

    out, module, serve_path, serve = setup
    runs = []
    for i, batch in enumerate(("3", "65536")):
        dest = tmp_path / f"enc{i}"
        transform.run(["--artifacts", out, "--input", serve_path, "--output", str(dest),
                       "--batch_size", batch])
        runs.append(dest)
    manifest = json.loads((runs[0] / "transform.json").read_text())
    assert manifest["counts"]["rows_written"] == len(SERVE_COUNTRIES)
    assert [f["path"] for f in manifest["files"]] == ["data/part-00000-of-00001.tfrecord"]
    data = [(r / "data/part-00000-of-00001.tfrecord").read_bytes() for r in runs]
    assert data[0] == data[1]  # same bytes whatever the batch size
    parsed = _parse_shards([str(runs[0] / "data/part-00000-of-00001.tfrecord")], manifest)
    ref = keras_outputs(module, serve)
    from beam_prep.transform.layers import Encoded

    mine = {}
    for o in manifest["outputs"]:
        v = parsed[o["key"]]
        if o["ragged"]:
            mine[o["key"]] = Encoded(o["dtype"], v.flat_values.numpy(),
                                     v.row_splits.numpy().astype(np.int64))
        else:
            mine[o["key"]] = Encoded(o["dtype"], v.numpy())
    assert not _compare(mine, ref)


def test_job_parquet_output(setup, tmp_path):
    import json

    from beam_prep.pipelines import transform

    out, module, serve_path, serve = setup
    dest = tmp_path / "pq"
    transform.run(["--artifacts", out, "--input", serve_path, "--output", str(dest),
                   "--output_format", "parquet"])
    manifest = json.loads((dest / "transform.json").read_text())
    table = pq.read_table(str(dest / manifest["files"][0]["path"]))
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(serve_path, "parquet"), enc.columns))
    mine = enc.encode(result.batch)
    for key, encoded in mine.items():
        col = table.column(key).to_pylist()
        if encoded.row_splits is not None:
            want = [encoded.values[a:b].tolist() for a, b in
                    zip(encoded.row_splits[:-1], encoded.row_splits[1:])]
        elif encoded.values.shape[1] == 1:
            want = encoded.values[:, 0].tolist()
        else:
            want = encoded.values.tolist()
        assert np.array_equal(np.array(col, dtype=object), np.array(want, dtype=object)) or \
            str(col) == str(want), key
