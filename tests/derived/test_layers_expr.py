"""Derived features in the layers: generated module == runtime twin, no OOV, export/serve.

The artifacts come from a real analysis of a small CSV. The oracle for "no skew" is the
analysis itself: every training row of a derived string feature must map to an index of
its own vocabulary (not OOV) in the layers, and every derived numeric value must equal
the one numpy computes from the raw row.
"""

from __future__ import annotations

import inspect
import os
import shutil

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from beam_prep.pipelines import analyze  # noqa: E402

from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.codegen.runtime import layers_from_artifacts  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.copied_source import assert_copied  # noqa: E402

SPEC = """
features:
  - {name: ratio, kind: numeric, expr: "price / (qty + 1)"}
  - {name: city, kind: string, expr: "lower(strip(town))", default_value: "unknown"}
  - {name: country_year, kind: string, expr: "cross(country, str(year))"}
  - {name: price, kind: numeric, num_buckets: 3}
  - {name: town_hash, kind: hashed, num_bins: 32, expr: "upper(town)"}
"""
ROWS = {
    "price": [3.5, 10.0, "", 7.25, 1.0, 2.0, 40.0, 8.0],
    "qty": [1, 0, 2, "", 4, 1, 3, 0],
    "town": [" Berlin ", "berlin", "PARIS", "Paris\t", "", "Köln", "  ", "a|b"],
    "country": ["DE", "a|b", "FR", "x\\y", "DE", "DE", "FR", "FR"],
    "year": [2020, 2021, 2020, 2022, 2020, 2021, 2020, 2023],
}


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    root = tmp_path_factory.mktemp("derived")
    lines = [",".join(ROWS)]
    for i in range(len(ROWS["price"])):
        cells = [str(ROWS[c][i]) for c in ROWS]
        lines.append(",".join(f'"{c}"' if any(x in c for x in ",\"") else c for c in cells))
    (root / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "spec.yaml").write_text(SPEC)
    out = root / "artifacts"
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.csv"),
                 "--output", str(out)])
    module_path = root / "preprocessing.py"
    module_path.write_text(render_module(Artifacts(str(out))), encoding="utf-8")
    return str(out), import_module_from(str(module_path), "bp_generated_derived")


def _batch() -> dict[str, np.ndarray]:
    nan = float("nan")
    return {
        # Numeric columns are float64, as the analysis read them (qty too: it is used in
        # arithmetic, so it is read as float and its missing cell is NaN).
        "price": np.array([[v if v != "" else nan] for v in ROWS["price"]], np.float64),
        "qty": np.array([[v if v != "" else nan] for v in ROWS["qty"]], np.float64),
        "town": np.array([[v] for v in ROWS["town"]], object),
        "country": np.array([[v] for v in ROWS["country"]], object),
        "year": np.array([[v] for v in ROWS["year"]], np.int64),
    }


def test_raw_inputs_are_the_expression_columns_deduplicated(analyzed):
    _, generated = analyzed
    assert generated.INPUT_DTYPES == {"price": "float64", "qty": "float64", "town": "string",
                                      "country": "string", "year": "int64"}
    assert "def derive_city(inputs):" in inspect.getsource(generated)
    assert "py_function" not in inspect.getsource(generated)


def test_generated_equals_runtime_and_no_derived_string_is_oov(analyzed):
    path, generated = analyzed
    batch = _batch()
    got = generated.build_preprocessor(path)(batch)
    twin = layers_from_artifacts(path).build_preprocessor()(batch)
    assert set(got) == set(twin)
    for key in got:
        np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(twin[key]), err_msg=key)
    art = Artifacts(path)
    # Every training row of a derived string feature is in its vocabulary (index >= 1).
    for name in ("city", "country_year"):
        indices = np.asarray(got[name]).ravel()
        assert (indices >= 1).all(), (name, indices)
    vocab = art.vocabulary("country_year")
    assert [vocab[i - 1] for i in np.asarray(got["country_year"]).ravel()] == [
        f"{c.replace(chr(92), chr(92) * 2).replace('|', chr(92) + '|')}|{y}"
        for c, y in zip(ROWS["country"], ROWS["year"])]
    # The numeric derived value before Normalization equals numpy's (qty missing -> NaN).
    data = generated.build_preprocessor(path, stage="data")(batch)
    price = batch["price"].astype(np.float64).ravel()
    qty = np.where(batch["qty"].ravel() == -(2**63), np.nan, batch["qty"].ravel())
    np.testing.assert_array_equal(np.asarray(data["ratio"]).ravel(),
                                  (price / (qty + 1)).astype(np.float32))
    stats = art.stats("ratio")
    normalized = (np.asarray(data["ratio"]).ravel() - stats["mean"]) / np.sqrt(stats["variance"])
    np.testing.assert_allclose(np.asarray(got["ratio"]).ravel(), normalized, rtol=1e-5)


def test_export_delete_artifacts_and_serve(analyzed, tmp_path):
    path, generated = analyzed
    copy = str(tmp_path / "artifacts")
    shutil.copytree(path, copy)
    inputs = generated.raw_inputs()
    encoded = generated.build_preprocessor(copy)(inputs)
    model = keras.Model(inputs, {k: encoded[k] for k in ("ratio", "city", "country_year",
                                                         "town_hash")})
    batch = _batch()
    expected = model(batch)
    export_dir = str(tmp_path / "export")
    model.export(export_dir, verbose=False)
    shutil.rmtree(copy)
    loaded = tf.saved_model.load(export_dir)
    served = loaded.serve({k: tf.constant(v) for k, v in batch.items()})
    for key, value in expected.items():
        np.testing.assert_array_equal(np.asarray(served[key]), np.asarray(value), err_msg=key)
    assert os.listdir(os.path.join(export_dir, "assets"))


def test_generated_layer_class_is_the_runtime_source(analyzed):
    _, generated = analyzed
    with open(generated.__file__, encoding="utf-8") as f:
        assert_copied(f.read(), "derived")
