"""Per-key scaling layers: generated module and runtime twin against a numpy oracle."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import beam_prep  # noqa: E402
from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.copied_source import assert_copied  # noqa: E402
from tests.per_key import helpers  # noqa: E402

SPEC = """
features:
  - {name: price, kind: numeric, per_key: store}
  - {name: price_mm, kind: numeric, column: price, scaling: min_max, per_key: {expr: "str(sid)"}}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("layers")
    rows = helpers.make_rows(n=1500, keys=30)
    rows["sid"][:3] = [42, 42, 42]  # key "42": a single value 3 times: min == max
    rows["price"][:3] = [5.0, 5.0, 5.0]
    path = str(tmp / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    out = helpers.run(tmp, SPEC, path)
    module_path = str(tmp / "pp.py")
    generate(out, module_path)
    return rows, out, import_module_from(module_path, "bp_per_key_generated")


def _batch(keys, sids, prices):
    return {"store": np.array(keys, object).reshape(-1, 1),
            "sid": np.array(sids, np.int64).reshape(-1, 1),
            "price": np.array(prices, np.float64).reshape(-1, 1)}


def _expected(rows, keys, sids, prices):
    """numpy oracle: per-key z-score / min-max in float32, global stats for unknown keys."""
    by_store = helpers.oracle(rows["store"], rows["price"])
    by_sid = helpers.oracle([str(s) for s in rows["sid"]], rows["price"])
    finite = [p for p in rows["price"] if p is not None]
    g = (len(finite), float(np.mean(finite)), float(np.var(finite)), min(finite), max(finite))
    z, mm = [], []
    for k, s, x in zip(keys, sids, prices):
        n, mean, var, _, _ = by_store.get(k, g)
        scale = math.sqrt(var) if var > 0 else 1.0
        z.append((np.float32(x) - np.float32(mean)) / np.float32(scale))
        n, _, _, low, high = by_sid.get(str(s), g)
        if low < high:
            mm.append((np.float32(x) - np.float32(low)) / np.float32(high - low))
        else:
            mm.append(np.float32(1.0 / (1.0 + math.exp(-float(np.float32(x))))))
    return np.array(z, np.float32).reshape(-1, 1), np.array(mm, np.float32).reshape(-1, 1)


def test_generated_and_runtime_layers_scale_per_key_and_fall_back_to_global(built):
    rows, out, pp = built
    keys = [*helpers.HOSTILE_KEYS, "never seen", "", "store_020"]
    sids = [0, 1, 2, 3, 42, 5, 6, 999, 1, 2, 3, 4, 5, 6, 0, 1][:len(keys)]
    prices = np.linspace(-3.0, 50.0, len(keys)).tolist()
    batch = _batch(keys, sids, prices)
    z, mm = _expected(rows, keys, sids, prices)
    generated = pp.build_preprocessor()(pp.raw_columns(batch))
    twin = beam_prep.layers_from_artifacts(out)
    runtime = twin.build_preprocessor()(twin.raw_columns(batch))
    for got in (generated, runtime):
        np.testing.assert_array_equal(np.asarray(got["price"]), z)
        np.testing.assert_allclose(np.asarray(got["price_mm"]), mm, rtol=1.2e-7, atol=0)
    np.testing.assert_array_equal(np.asarray(generated["price_mm"]),
                                  np.asarray(runtime["price_mm"]))
    # tf.data path gives the same values
    ds = tf.data.Dataset.from_tensor_slices(batch).batch(len(keys)).map(pp.make_dataset_fn())
    (first,) = list(ds)
    np.testing.assert_array_equal(first["price"].numpy(), z)


def test_generated_layers_are_the_runtime_source_and_pass_ruff(built):
    import os

    rows, out, pp = built
    code = open(pp.__file__, encoding="utf-8").read()
    assert_copied(code, "per_key")  # _key_tensor, PerKeyScaling, PerKeyCount
    import subprocess
    import sys

    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    # E501 aside: expr.tf.render writes str(x) of an expression key on one long line (as it
    # does for any derived feature using str()).
    proc = subprocess.run([ruff, "check", "--no-cache", "--isolated", "--line-length", "100",
                           "--select", "E,F,W,I,B,UP", "--ignore", "UP007,B905,E501",
                           pp.__file__],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_exported_inference_model_keeps_the_key_table(built, tmp_path):
    rows, out, pp = built
    keys = ["new\nline", "nul\x00byte", "unknown", ""]
    batch = _batch(keys, [1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0])
    z, mm = _expected(rows, keys, [1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0])
    inputs = pp.raw_inputs()
    encoded = pp.build_preprocessor()(inputs)
    model = keras.Model(inputs, encoded)
    model.export(str(tmp_path / "exported"))
    reloaded = tf.saved_model.load(str(tmp_path / "exported"))
    got = reloaded.serve({pp.INPUT_NAMES[k]: v for k, v in pp.raw_columns(batch).items()})
    np.testing.assert_array_equal(got["price"].numpy(), z)
    np.testing.assert_allclose(got["price_mm"].numpy(), mm, rtol=1.2e-7, atol=0)


def test_a_hostile_key_column_name_is_a_valid_input(tmp_path):
    column = "store id/€\"'"
    rows = {"price": [1.0, 3.0, 10.0, 12.0], column: ["a", "a", "b", "b"]}
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    spec = ("features:\n  - {name: price, kind: numeric, per_key: "
            + json.dumps(column) + "}\n")
    out = helpers.run(tmp_path, spec, path)
    module_path = str(tmp_path / "pp.py")
    generate(out, module_path)
    pp = import_module_from(module_path, "bp_per_key_hostile_column")
    batch = {"price": np.array([[2.0], [11.0], [5.0]]),
             column: np.array([["a"], ["b"], ["zz"]], object)}
    got = np.asarray(pp.build_preprocessor()(pp.raw_columns(batch))["price"]).ravel()
    g_mean, g_std = np.mean(rows["price"]), np.std(rows["price"])
    want = np.float32([(2.0 - 2.0) / 1.0, (11.0 - 11.0) / 1.0,
                       (np.float32(5.0) - np.float32(g_mean)) / np.float32(g_std)])
    np.testing.assert_array_equal(got, want)


def test_key_count_output_in_generated_and_runtime_layers(tmp_path):
    rows = helpers.make_rows(n=400, keys=20)
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    out = helpers.run(tmp_path, "features:\n  - {name: price, kind: numeric, per_key: store,"
                      " per_key_count: true}\n", path)
    module_path = str(tmp_path / "pp.py")
    generate(out, module_path)
    pp = import_module_from(module_path, "bp_per_key_count")
    keys = ["plain", "new\nline", "never", "", "nul\x00byte"]
    batch = {"price": np.zeros((len(keys), 1)), "store": np.array(keys, object).reshape(-1, 1)}
    want = helpers.oracle(rows["store"], rows["price"])
    expected = [[want.get(k, (0,))[0] if k else 0] for k in keys]
    twin = beam_prep.layers_from_artifacts(out)
    for got in (pp.build_preprocessor()(pp.raw_columns(batch)),
                twin.build_preprocessor()(twin.raw_columns(batch))):
        assert np.asarray(got["price_key_count"]).tolist() == expected
        assert np.asarray(got["price_key_count"]).dtype == np.int64
    assert pp.OUTPUT_SPECS["price_key_count"] == ("int64", (None, 1))


def test_per_key_count_needs_per_key():
    from beam_prep.errors import SpecError
    from beam_prep.spec import Spec

    with pytest.raises(SpecError, match="per_key_count"):
        Spec.from_yaml_text("features:\n  - {name: p, kind: numeric, per_key_count: true}\n")
