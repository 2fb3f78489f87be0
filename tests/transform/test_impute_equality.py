"""`impute` and `missing_indicator` end to end: real analysis -> manifest -> layers -> job.

The imputed values are checked against independent oracles computed here from the training
rows (numpy mean of the finite values; ``collections.Counter`` with the vocabulary's tie
order: count descending, then the token's UTF-8 bytes descending). The transform job's
encoders must equal the generated layers in tf.data (ints exact, floats <= 1 ulp) on a
serving file with missing cells, NaN and infinity.
"""

from __future__ import annotations

import collections
import json
import math
import pathlib

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


from beam_prep import Artifacts  # noqa: E402
from beam_prep.io.inputs.readers import Split, read_split  # noqa: E402
from beam_prep.transform.layers import BatchEncoder  # noqa: E402
from tests.codegen.conftest import analyze_and_import  # noqa: E402
from tests.transform.test_equality import _compare, keras_outputs  # noqa: E402

SPEC = """
features:
  - {name: s_top, kind: string, column: country, impute: most_frequent, missing_indicator: true,
     num_oov_indices: 2}
  - {name: s_tie, kind: string, column: device, impute: most_frequent, output_mode: one_hot}
  - {name: s_flag, kind: string, column: country, missing_indicator: true}
  - {name: i_top, kind: integer, column: item, default_value: most_frequent,
     missing_indicator: true}
  - {name: t_flag, kind: text, column: title, missing_indicator: true}
  - {name: n_mean, kind: numeric, column: price, impute: mean, missing_indicator: true,
     num_buckets: 3}
  - {name: n_raw, kind: numeric, column: price, default_value: mean, scaling: none}
  - {name: n_med, kind: numeric, column: price, impute: median, missing_indicator: true}
  - {name: n_med_b, kind: numeric, column: qty, default_value: median, num_buckets: 3,
     scaling: none}
  - {name: n_flag, kind: numeric, column: qty, missing_indicator: true}
  - {name: n_none, kind: numeric, column: empty, impute: mean, missing_indicator: true}
  - {name: d_mean, kind: numeric, expr: "price * 2", impute: mean, missing_indicator: true}
"""

COUNTRIES = ["US", "DE", "FR", "US", "JP", None, "US", "DE", "BR", "FR", "DE", "IT"]
# phone and web tie (3 each): the vocabulary puts "web" first (bytes descending).
DEVICES = ["phone", "tv", "web", "phone", None, None, "phone", "web", "tv", "Phone", "web", ""]
ITEMS = [10, 20, 30, 20, -4, None, 30, 5, 20, 30, 7, None]  # 20 and 30 tie: "30" first
TITLES = ["Red shoes", "blue HAT", "", None, "red hat", "socks", "a b", "été", "red", None,
          "hat", "x"]
PRICES = [1.0, 2.5, None, 4.0, 5.25, float("nan"), 7.0, 1e-3, -3.0, float("inf"), 3.5, 100.0]
QTY = [1.0, None, 3.0, 0.0, 2.0, 1.0, None, 4.0, 1.0, 2.0, 2.0, 5.0]

SERVE_COUNTRIES = ["US", None, "", "ZZ", "DE", None]
SERVE_DEVICES = [None, "tv", "", "console", "web", "phone"]
SERVE_ITEMS = [20, None, 0, 999, None, -4]
SERVE_TITLES = [None, "red", "", "blue hat", None, "zz"]
SERVE_PRICES = [None, float("nan"), float("inf"), -1.0, 2.5, None]
SERVE_QTY = [None, 1.0, float("nan"), 2.0, None, 0.0]


def _table(countries, devices, items, titles, prices, qty) -> pa.Table:
    return pa.table({"country": countries, "device": devices,
                     "item": pa.array(items, pa.int64()), "title": titles,
                     "price": pa.array(prices, pa.float64()), "qty": pa.array(qty, pa.float64()),
                     "empty": pa.array([None] * len(countries), pa.float64())})


def _top(values) -> object:
    """The most frequent value, ties broken as the vocabulary orders them (bytes descending)."""
    counts = collections.Counter(str(v) for v in values if v is not None and v != "")
    return sorted(counts, key=lambda t: (-counts[t], [-b for b in t.encode()] + [1]))[0]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("impute_eq")
    pq.write_table(_table(COUNTRIES, DEVICES, ITEMS, TITLES, PRICES, QTY),
                   str(root / "train.parquet"))
    serve = _table(SERVE_COUNTRIES, SERVE_DEVICES, SERVE_ITEMS, SERVE_TITLES, SERVE_PRICES,
                   SERVE_QTY)
    pq.write_table(serve, str(root / "serve.parquet"))
    (root / "spec.yaml").write_text(SPEC)
    out, module = analyze_and_import(root, "train.parquet", "bp_generated_impute_eq")
    return out, module, str(root / "serve.parquet"), serve


def test_imputed_values_match_independent_oracles(setup):
    out, module, _, _ = setup
    art = Artifacts(out)
    finite = np.array([p for p in PRICES if p is not None and math.isfinite(p)])
    assert art.stats("n_mean")["imputed_value"] == pytest.approx(finite.mean(), rel=1e-15)
    assert art.stats("n_raw")["imputed_value"] == art.stats("n_mean")["imputed_value"]
    assert art.stats("d_mean")["imputed_value"] == pytest.approx((finite * 2).mean(), rel=1e-15)
    assert art.stats("s_top")["imputed_value"] == _top(COUNTRIES) == "US"
    assert art.stats("s_tie")["imputed_value"] == _top(DEVICES) == "web"
    assert art.stats("i_top")["imputed_value"] == int(_top(ITEMS)) == 30
    assert art.stats("n_none")["imputed_value"] is None  # no observed value
    # median: the sketch's 0.5 quantile of the non-NaN values (inf included); exact on
    # data this small, the upper middle value for an even count (numpy method="higher").
    non_nan = [p for p in PRICES if p is not None and not math.isnan(p)]
    assert art.stats("n_med")["imputed_value"] == np.quantile(non_nan, 0.5, method="higher")
    assert art.stats("n_med")["imputed_value"] == art.stats("n_med")["quartiles"][1] == 4.0
    qty = [q for q in QTY if q is not None]
    assert art.stats("n_med_b")["imputed_value"] == np.quantile(qty, 0.5, method="higher")
    for name in ("s_flag", "t_flag", "n_flag"):
        assert "imputed_value" not in art.stats(name)
    # Statistics are over observed values: the missing cells are not counted as the mean.
    assert art.stats("n_mean")["count"] == finite.size
    assert art.stats("s_top")["missing_count"] == 1
    # The generated module holds the same values; the spec synonyms are canonical.
    assert module.IMPUTED == {"s_top": "most_frequent", "s_tie": "most_frequent",
                              "i_top": "most_frequent", "n_mean": "mean", "n_raw": "mean",
                              "n_med": "median", "n_med_b": "median", "d_mean": "mean"}
    assert module.DEFAULT_VALUES["n_mean"] == art.stats("n_mean")["imputed_value"]
    assert module.DEFAULT_VALUES["i_top"] == 30 and module.DEFAULT_VALUES["s_top"] == "US"
    assert "n_none" not in module.DEFAULT_VALUES
    spec = json.loads((pathlib.Path(out) / "manifest.json").read_text())["spec"]
    i_top = [f for f in spec["features"] if f["name"] == "i_top"][0]
    assert i_top["impute"] == "most_frequent" and i_top["default_value"] is None


def test_generated_outputs_on_missing_nan_and_present_cells(setup):
    _, module, _, serve = setup
    ref = {k: v.numpy() for k, v in keras_outputs(module, serve).items()}
    # Indicators: 1 exactly where the cell is missing ("" and null for strings; null and NaN,
    # not inf, for numbers; null for integers); they read the value before the fill.
    assert ref["s_top_missing"][:, 0].tolist() == [0, 1, 1, 0, 0, 1]
    assert ref["s_flag_missing"][:, 0].tolist() == [0, 1, 1, 0, 0, 1]
    assert ref["i_top_missing"][:, 0].tolist() == [0, 1, 0, 0, 1, 0]
    assert ref["t_flag_missing"][:, 0].tolist() == [1, 0, 1, 0, 1, 0]
    assert ref["n_mean_missing"][:, 0].tolist() == [1, 1, 0, 0, 0, 1]
    assert ref["n_flag_missing"][:, 0].tolist() == [1, 0, 1, 0, 1, 0]
    assert ref["d_mean_missing"][:, 0].tolist() == [1, 1, 0, 0, 0, 1]
    assert ref["n_none_missing"][:, 0].tolist() == [1] * 6  # column "empty": all null
    assert ref["n_mean_missing"].dtype == np.float32
    # Imputed: missing encodes exactly like the most frequent value / the mean.
    us = ref["s_top"][0, 0]
    assert ref["s_top"][[1, 2, 5], 0].tolist() == [us] * 3 and us == 2  # first token index
    assert ref["i_top"][1, 0] == ref["i_top"][4, 0] == 1  # "30": index 1 (one OOV slot)
    web = ref["s_tie"][4]
    assert ref["s_tie"][0].tolist() == ref["s_tie"][2].tolist() == web.tolist()
    z = ref["n_mean"][:, 0]
    assert z[0] == z[1] == z[5] == 0.0  # the mean z-scores to exactly 0
    assert math.isinf(z[2])  # inf is a value, not missing
    finite = np.array([p for p in PRICES if p is not None and math.isfinite(p)])
    assert ref["n_raw"][0, 0] == np.float32(finite.mean())
    med = np.float32(art_median(setup))
    assert ref["n_med_missing"][:, 0].tolist() == [1, 1, 0, 0, 0, 1]
    z_med = ref["n_med"][:, 0]
    assert z_med[0] == z_med[1] == z_med[5] and not np.isnan(z_med[0])
    qty_med = np.float32(Artifacts(setup[0]).stats("n_med_b")["imputed_value"])
    assert ref["n_med_b"][[0, 4], 0].tolist() == [qty_med, qty_med]
    assert med == np.float32(4.0)
    # No observed value: nothing is filled, NaN stays NaN.
    assert np.isnan(ref["n_none"][:, 0]).all()


def art_median(setup) -> float:
    return Artifacts(setup[0]).stats("n_med")["imputed_value"]


def test_runtime_twin_equals_generated_module(setup):
    import beam_prep

    out, module, _, serve = setup
    twin = beam_prep.layers_from_artifacts(out)
    assert twin.output_specs == module.OUTPUT_SPECS
    assert twin.output_specs["n_mean_missing"] == ("float32", (None, 1))
    assert twin.default_values == module.DEFAULT_VALUES
    assert twin.imputed == module.IMPUTED
    assert twin.missing_indicators == module.MISSING_INDICATORS
    feats = {k: v for k, v in serve.to_pydict().items()}
    raw = module.raw_columns({k: _missing(v, serve.column(k).type) for k, v in feats.items()})
    a = module.build_preprocessor()(raw)
    b = twin.build_preprocessor()(raw)
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(a[k].numpy(), b[k].numpy(), err_msg=k)
    # TPU split: indicators and lookups in tf.data; the fill before Normalization in the model.
    data = module.build_preprocessor(stage="data")(raw)
    full = module.build_preprocessor(stage="model")(data)
    for k in a:
        np.testing.assert_array_equal(a[k].numpy(), full[k].numpy(), err_msg=k)


def _missing(values, typ):
    if pa.types.is_string(typ):
        return ["" if v is None else v for v in values]
    if pa.types.is_integer(typ):
        return [-(2**63) if v is None else v for v in values]
    return [float("nan") if v is None else v for v in values]


def test_transform_job_equals_keras_layers(setup):
    out, module, serve_path, serve = setup
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(serve_path, "parquet"), enc.columns))
    mine = enc.encode(result.batch)
    ref = keras_outputs(module, serve)
    assert set(mine) == set(ref)
    assert not _compare(mine, ref)
    assert ("n_mean_missing", "float32") in enc.outputs


def test_transform_job_writes_the_indicators_and_fills(setup, tmp_path):
    from beam_prep.pipelines import transform

    from beam_prep.transform.layers import Encoded
    from tests.transform.test_equality import _parse_shards

    out, module, serve_path, serve = setup
    dest = tmp_path / "enc"
    transform.run(["--artifacts", out, "--input", serve_path, "--output", str(dest)])
    manifest = json.loads((dest / "transform.json").read_text())
    outputs = {o["key"]: o for o in manifest["outputs"]}
    assert outputs["n_mean_missing"]["dtype"] == "float32"
    assert outputs["n_mean_missing"]["width"] == 1
    parsed = _parse_shards([str(dest / f["path"]) for f in manifest["files"]], manifest)
    mine = {}
    for o in manifest["outputs"]:
        v = parsed[o["key"]]
        mine[o["key"]] = (Encoded(o["dtype"], v.flat_values.numpy(),
                                  v.row_splits.numpy().astype(np.int64)) if o["ragged"]
                          else Encoded(o["dtype"], v.numpy()))
    ref = keras_outputs(module, serve)
    assert set(mine) == set(ref)
    assert not _compare(mine, ref)
