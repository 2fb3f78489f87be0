"""Per-key buckets: generated module, runtime twin and transform job against a numpy oracle."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import beam_prep  # noqa: E402
from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.io.inputs.readers import Split, read_split  # noqa: E402
from beam_prep.transform.layers import BatchEncoder  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.copied_source import assert_copied  # noqa: E402
from tests.per_key import helpers  # noqa: E402
from tests.per_key.test_per_key_buckets import oracle  # noqa: E402
from tests.transform.test_equality import _compare, keras_outputs  # noqa: E402

SPEC = """
features:
  - {name: price, kind: numeric, per_key: store, num_buckets: 4}
  - {name: by_sid, kind: numeric, column: price, scaling: min_max, num_buckets: 5,
     per_key: {expr: "concat(str(sid), '/x')"}, per_key_count: true}
"""


EXTRA_KEYS = ['"""', "{{ x }}{% if %}", "\u202ebidi\u2066"]


def _table(rows: dict) -> pa.Table:
    return pa.table({"price": pa.array(rows["price"], pa.float64()),
                     "store": pa.array(rows["store"], pa.string()),
                     "sid": pa.array(rows["sid"], pa.int64())})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pkb_layers")
    rows = helpers.make_rows(n=1500, keys=30)
    for i in range(0, 90):  # template-hostile keys too (never rendered into the module)
        rows["store"][1400 + i] = EXTRA_KEYS[i % 3]
    pq.write_table(_table(rows), str(tmp / "train.parquet"))
    out = helpers.run(tmp, SPEC, str(tmp / "train.parquet"))
    module_path = tmp / "pp.py"
    module_path.write_text(render_module(Artifacts(out)), encoding="utf-8")
    return rows, out, import_module_from(str(module_path), "bp_pkb_generated"), tmp


def _serve(rows: dict) -> dict:
    train = [p for p in rows["price"] if p is not None]
    keys = [*helpers.HOSTILE_KEYS, *EXTRA_KEYS, "never seen", None, "", "store_020",
            "store_021"]
    prices = [train[i * 37 % len(train)] for i in range(len(keys))]  # boundary values too
    prices[1], prices[2] = float("nan"), None
    # unknown and missing keys: values in the global first, second and third bucket
    low, mid, high = (float(np.quantile(train, q)) for q in (0.1, 0.4, 0.6))
    prices[keys.index("never seen"):keys.index("") + 1] = [low, mid, high]
    return {"price": prices, "store": keys, "sid": [i % 9 for i in range(len(keys))]}


def _expected(rows: dict, serve: dict) -> tuple[np.ndarray, np.ndarray]:
    """numpy oracle: the key's exact boundaries (global ones for an unknown key), float32
    comparisons, NaN and missing in the last bucket (as Discretization)."""
    finite = sorted(p for p in rows["price"] if p is not None)

    def global_bounds(k: int) -> list[float]:
        return [finite[min(i * len(finite) // k, len(finite) - 1)] for i in range(1, k)]

    def bucket(x, bounds) -> int:
        x = np.float32(np.nan if x is None else x)
        return int(sum(not x < np.float32(b) for b in bounds))

    by_store = oracle(rows["store"], rows["price"], 4)
    by_sid = oracle([f"{s}/x" for s in rows["sid"]], rows["price"], 5)
    a = [bucket(x, by_store.get(k, global_bounds(4))) for x, k in zip(serve["price"],
                                                                      serve["store"])]
    b = [bucket(x, by_sid.get(f"{s}/x", global_bounds(5))) for x, s in zip(serve["price"],
                                                                           serve["sid"])]
    return np.array(a).reshape(-1, 1), np.array(b).reshape(-1, 1)


def _batch(serve: dict) -> dict:
    return {"store": np.array(["" if k is None else k for k in serve["store"]],
                              object).reshape(-1, 1),
            "sid": np.array(serve["sid"], np.int64).reshape(-1, 1),
            "price": np.array([np.nan if p is None else p for p in serve["price"]],
                              np.float64).reshape(-1, 1)}


def test_generated_and_runtime_buckets_per_key_fall_back_to_global(built):
    rows, out, pp, _ = built
    serve = _serve(rows)
    want_price, want_sid = _expected(rows, serve)
    batch = _batch(serve)
    generated = pp.build_preprocessor()(pp.raw_columns(batch))
    twin = beam_prep.layers_from_artifacts(out)
    runtime = twin.build_preprocessor()(twin.raw_columns(batch))
    for got in (generated, runtime):
        np.testing.assert_array_equal(np.asarray(got["price_bucket"]), want_price)
        np.testing.assert_array_equal(np.asarray(got["by_sid_bucket"]), want_sid)
        assert np.asarray(got["price_bucket"]).dtype == np.int32
    assert len(set(want_price.ravel().tolist())) == 4  # every bucket is exercised
    unknown = want_price.ravel()[-5:-2]
    assert unknown.tolist() == [0, 1, 2]  # the global boundaries (oracle), not a key's
    ds = tf.data.Dataset.from_tensor_slices(batch).batch(7).map(pp.make_dataset_fn())
    got = np.concatenate([b["price_bucket"].numpy() for b in ds])
    np.testing.assert_array_equal(got, want_price)


def test_generated_class_is_the_runtime_source(built):
    _, _, pp, _ = built
    code = open(pp.__file__, encoding="utf-8").read()
    assert_copied(code, "per_key_buckets")
    # hostile keys are read from the file, never rendered into the module
    assert "nul\\x00byte" not in code and "new\\nline" not in code and "store_020" not in code
    assert "{{ x }}" not in code and "\u202e" not in code


def test_transform_encoder_equals_the_generated_layers(built):
    rows, out, pp, tmp = built
    serve = _serve(rows)
    serve_table = _table(serve)
    pq.write_table(serve_table, str(tmp / "serve.parquet"))
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(str(tmp / "serve.parquet"), "parquet"), enc.columns))
    mine = enc.encode(result.batch)
    ref = keras_outputs(pp, serve_table)
    assert {"price_bucket", "by_sid_bucket", "by_sid_key_count"} <= set(mine)
    assert not _compare(mine, ref)
    want_price, _ = _expected(rows, serve)
    assert mine["price_bucket"].values.reshape(-1, 1).tolist() == want_price.tolist()
    mine["price_bucket"].values[0] += 1  # a wrong encoder is caught
    assert _compare(mine, ref) == ["price_bucket"]


def test_a_tampered_bucket_file_is_refused_by_the_generated_module(built, tmp_path):
    import shutil

    _, out, pp, _ = built
    copy = str(tmp_path / "copy")
    shutil.copytree(out, copy)
    path = f"{copy}/per_key/price.buckets.jsonl"
    body = open(path, "rb").read().replace(b"[", b"{", 1)
    open(path, "wb").write(body)
    with pytest.raises(Exception, match="price.buckets.jsonl"):
        pp.build_price_layers(copy, check=False)


def test_exported_inference_model_keeps_the_bucket_rows(built, tmp_path):
    rows, _, pp, _ = built
    serve = _serve(rows)
    want_price, want_sid = _expected(rows, serve)
    inputs = pp.raw_inputs()
    model = keras.Model(inputs, pp.build_preprocessor()(inputs))
    model.export(str(tmp_path / "exported"))
    reloaded = tf.saved_model.load(str(tmp_path / "exported"))
    got = reloaded.serve({pp.INPUT_NAMES[k]: v
                          for k, v in pp.raw_columns(_batch(serve)).items()})
    np.testing.assert_array_equal(got["price_bucket"].numpy(), want_price)
    np.testing.assert_array_equal(got["by_sid_bucket"].numpy(), want_sid)
