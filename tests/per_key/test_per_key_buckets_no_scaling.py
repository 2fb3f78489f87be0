"""Per-key buckets alone (``per_key`` + ``num_buckets`` + ``scaling: none``, TFT's
``bucketize_per_key`` without a scaling): numpy oracle for the buckets, the raw value as
``<name>`` (as a numeric feature without ``per_key``), generated == runtime == transform."""

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
from beam_prep.errors import SpecError  # noqa: E402
from beam_prep.io.inputs.readers import Split, read_split  # noqa: E402
from beam_prep.spec import Spec  # noqa: E402
from beam_prep.transform.layers import BatchEncoder  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.per_key import helpers  # noqa: E402
from tests.per_key.test_per_key_buckets import oracle  # noqa: E402
from tests.transform.test_equality import _compare, keras_outputs  # noqa: E402

SPEC = """
features:
  - {name: price, kind: numeric, scaling: none, per_key: store, num_buckets: 4,
     per_key_count: true}
  - {name: by_sid, kind: numeric, column: price, scaling: none, num_buckets: 3,
     per_key: {expr: "str(sid)"}}
  - {name: plain, kind: numeric, column: price, scaling: none, num_buckets: 4}
"""


def _table(rows: dict) -> pa.Table:
    return pa.table({"price": pa.array(rows["price"], pa.float64()),
                     "store": pa.array(rows["store"], pa.string()),
                     "sid": pa.array(rows["sid"], pa.int64())})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pkb_none")
    rows = helpers.make_rows(n=1500, keys=30, seed=3)
    pq.write_table(_table(rows), str(tmp / "train.parquet"))
    out = helpers.run(tmp, SPEC, str(tmp / "train.parquet"))
    module_path = tmp / "pp.py"
    module_path.write_text(render_module(Artifacts(out)), encoding="utf-8")
    return rows, out, import_module_from(str(module_path), "bp_pkb_none_generated"), tmp


def _serve(rows: dict) -> dict:
    train = [p for p in rows["price"] if p is not None]
    keys = [*helpers.HOSTILE_KEYS, "never seen", None, "", "store_020", "store_021"]
    prices = [train[i * 31 % len(train)] * 1.0000001 for i in range(len(keys))]
    prices[1], prices[2] = float("nan"), None
    prices[3] = float("inf")
    return {"price": prices, "store": keys, "sid": [i % 9 for i in range(len(keys))]}


def _batch(serve: dict) -> dict:
    return {"store": np.array(["" if k is None else k for k in serve["store"]],
                              object).reshape(-1, 1),
            "sid": np.array(serve["sid"], np.int64).reshape(-1, 1),
            "price": np.array([np.nan if p is None else p for p in serve["price"]],
                              np.float64).reshape(-1, 1)}


def _expected(rows: dict, serve: dict) -> dict[str, np.ndarray]:
    """numpy oracle: the key's exact boundaries (the global ones for an unknown key),
    float32 comparisons, NaN and missing in the last bucket; the raw value in float32."""
    finite = sorted(p for p in rows["price"] if p is not None)

    def global_bounds(k: int) -> list[float]:
        return [finite[min(i * len(finite) // k, len(finite) - 1)] for i in range(1, k)]

    def bucket(x, bounds) -> int:
        x = np.float32(np.nan if x is None else x)
        return int(sum(not x < np.float32(b) for b in bounds))

    by_store = oracle(rows["store"], rows["price"], 4)
    by_sid = oracle([str(s) for s in rows["sid"]], rows["price"], 3)
    col = np.array
    return {
        "price_bucket": col([bucket(x, by_store.get(k, global_bounds(4)))
                             for x, k in zip(serve["price"], serve["store"])]),
        "by_sid_bucket": col([bucket(x, by_sid.get(str(s), global_bounds(3)))
                              for x, s in zip(serve["price"], serve["sid"])]),
        "plain_bucket": col([bucket(x, global_bounds(4)) for x in serve["price"]]),
        "price": col([np.nan if p is None else p for p in serve["price"]], np.float32),
        "price_key_count": col([sum(s == k and p is not None
                                    for s, p in zip(rows["store"], rows["price"]))
                                if k else 0 for k in serve["store"]]),
    }


def test_spec_accepts_scaling_none_only_with_num_buckets():
    spec = Spec.from_yaml_text(SPEC)
    assert spec.features[0].scaling == "none"
    with pytest.raises(SpecError, match="scaling: none with num_buckets"):
        Spec.from_yaml_text("features:\n  - {name: p, kind: numeric, scaling: none, "
                            "per_key: s}\n")
    with pytest.raises(SpecError, match="or none for the per-key buckets alone"):
        Spec.from_yaml_text("features:\n  - {name: p, kind: numeric, scaling: log1p, "
                            "per_key: s, num_buckets: 3}\n")


def test_generated_and_runtime_give_the_raw_value_and_per_key_buckets(built):
    rows, out, pp, _ = built
    serve = _serve(rows)
    want = _expected(rows, serve)
    batch = _batch(serve)
    generated = pp.build_preprocessor()(pp.raw_columns(batch))
    twin = beam_prep.layers_from_artifacts(out)
    runtime = twin.build_preprocessor()(twin.raw_columns(batch))
    assert set(generated) == set(runtime) == {
        "price", "price_bucket", "price_key_count", "by_sid", "by_sid_bucket", "plain",
        "plain_bucket"}
    for got in (generated, runtime):
        for key in ("price_bucket", "by_sid_bucket", "plain_bucket"):
            np.testing.assert_array_equal(np.asarray(got[key]).ravel(), want[key], key)
            assert np.asarray(got[key]).dtype == np.int32
        for key in ("price", "by_sid", "plain"):  # bit-exact raw float32, NaN and inf too
            value = np.asarray(got[key]).ravel()
            assert value.dtype == np.float32
            assert value.tobytes() == want["price"].tobytes(), key
        np.testing.assert_array_equal(np.asarray(got["price_key_count"]).ravel(),
                                      want["price_key_count"])
    # per key, not global: some row's bucket differs from the plain feature's
    assert (want["price_bucket"] != want["plain_bucket"]).any()
    assert len(set(want["price_bucket"].tolist())) == 4
    ds = tf.data.Dataset.from_tensor_slices(batch).batch(5).map(pp.make_dataset_fn())
    got = np.concatenate([b["price_bucket"].numpy() for b in ds]).ravel()
    np.testing.assert_array_equal(got, want["price_bucket"])


def test_transform_encoder_equals_the_generated_layers(built):
    rows, out, pp, tmp = built
    serve = _serve(rows)
    serve_table = _table(serve)
    pq.write_table(serve_table, str(tmp / "serve.parquet"))
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(str(tmp / "serve.parquet"), "parquet"), enc.columns))
    mine = enc.encode(result.batch)
    ref = keras_outputs(pp, serve_table)
    assert {"price", "price_bucket", "by_sid", "by_sid_bucket"} <= set(mine)
    assert not _compare(mine, ref)
    want = _expected(rows, serve)
    assert mine["price_bucket"].values.ravel().tolist() == want["price_bucket"].tolist()
    assert mine["price"].values.ravel().tobytes() == want["price"].tobytes()


def test_report_and_diff_show_the_per_key_boundaries(built, capsys):
    import json

    from beam_prep import cli
    from beam_prep.diff.compare import diff_artifacts
    from beam_prep.report.analysis import render_analysis
    from beam_prep.report.page import fmt_num

    rows, out, _, _ = built
    html = render_analysis(Artifacts(out))
    want = oracle(rows["store"], rows["price"], 4)
    assert "per-key buckets" in html
    counts = helpers.oracle(rows["store"], rows["price"])  # the report's top key
    key = max(want, key=lambda k: (counts[k][0], [-b for b in k.encode()]))
    assert f"{counts[key][0]:,} values: " + ", ".join(fmt_num(b) for b in want[key]) in html
    price = diff_artifacts(out, out).features[0]
    assert price.per_key_buckets.old_keys == len(want)
    assert cli.main(["diff", out, out, "--json"]) in (0, 1)
    body = json.loads(capsys.readouterr().out)
    assert body["features"][0]["per_key_buckets"]["changed"] == 0
