"""`impute` and `missing_indicator` in the generated module and the runtime twin.

Artifacts come from ``tests/codegen/artifact_fixtures.py`` (statistics computed there with
plain Python from ``IMPUTE_DATA``); expected encodings are worked out by hand in comments.
"""

from __future__ import annotations

import os
import shutil
from types import ModuleType

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import beam_prep  # noqa: E402
from beam_prep.codegen import missing  # noqa: E402
from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import IMPUTE_DATA, import_module_from  # noqa: E402
from tests.copied_source import assert_copied  # noqa: E402

MISSING_INT = -(2**63)
NAN = float("nan")
# Rows: missing, the imputed value itself, a present value, another present value.
ROWS = {
    "country": ["", "US", "DE", "XX"],
    "store_id": [MISSING_INT, 20, 10, 999],
    "title": ["", "red hat", "", "zz"],
    "price": [NAN, 14.9, 30.0, float("inf")],
    "age": [NAN, 38.0, 22.0, -1.0],
    "gone": [NAN, 1.0, NAN, 2.0],
}
DTYPES = {"store_id": tf.int64, "price": tf.float64, "age": tf.float64, "gone": tf.float64}


def raw_batch() -> dict:
    return {k: tf.constant([[v] for v in rows], DTYPES.get(k, tf.string))
            for k, rows in ROWS.items()}


@pytest.fixture(scope="module")
def pp(impute_artifacts: str, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    out = os.path.join(str(tmp_path_factory.mktemp("generated_impute")), "pp_impute.py")
    generate(impute_artifacts, out)
    return import_module_from(out, "bp_generated_impute")


@pytest.fixture(scope="module")
def encoded(pp: ModuleType) -> dict:
    return {k: v.numpy() for k, v in pp.build_preprocessor()(raw_batch()).items()}


def test_imputed_values_and_constants(pp: ModuleType) -> None:
    observed = np.array([v for v in IMPUTE_DATA["price"] if v is not None and v == v])
    assert pp.DEFAULT_VALUES == {"country": "US", "store_id": 20, "price": observed.mean(),
                                 "age": 38.0}
    assert pp.IMPUTED == {"country": "most_frequent", "store_id": "most_frequent",
                          "price": "mean", "age": "median"}
    assert pp.MISSING_INDICATORS == {"country_missing": "country",
                                     "store_id_missing": "store_id",
                                     "title_missing": "title", "price_missing": "price"}
    for key in pp.MISSING_INDICATORS:
        assert pp.OUTPUT_SPECS[key] == ("float32", (None, 1))
        assert pp.OUTPUTS[key][1] == "data"


def test_missing_encodes_like_the_imputed_value_and_is_flagged(encoded: dict) -> None:
    for key in ("country", "store_id", "price", "price_bucket", "age"):
        np.testing.assert_array_equal(encoded[key][0], encoded[key][1], err_msg=key)
    # country: US 2, DE 2 -> US, DE, FR, JP; two OOV slots: US = 2, DE = 3.
    assert encoded["country"][:3, 0].tolist() == [2, 2, 3]
    # price: the mean z-scores to exactly 0; inf is a value (not flagged, not filled).
    assert encoded["price"][0, 0] == 0.0 and np.isinf(encoded["price"][3, 0])
    assert encoded["age"][:, 0].tolist() == [38.0, 38.0, 22.0, -1.0]  # scaling: none
    assert np.isnan(encoded["gone"][0, 0])  # no observed value: nothing to fill with
    assert encoded["country_missing"][:, 0].tolist() == [1, 0, 0, 0]
    assert encoded["store_id_missing"][:, 0].tolist() == [1, 0, 0, 0]
    assert encoded["title_missing"][:, 0].tolist() == [1, 0, 1, 0]
    assert encoded["price_missing"][:, 0].tolist() == [1, 0, 0, 0]
    assert encoded["price_missing"].dtype == np.float32
    assert "age_missing" not in encoded and "gone_missing" not in encoded


def test_twin_stage_split_tf_data_and_export(pp: ModuleType, encoded: dict,
                                             tmp_path) -> None:
    twin = beam_prep.layers_from_artifacts(pp.ARTIFACTS_DIR)
    assert (twin.default_values, twin.imputed, twin.missing_indicators) == (
        pp.DEFAULT_VALUES, pp.IMPUTED, pp.MISSING_INDICATORS)
    assert twin.output_specs == pp.OUTPUT_SPECS
    x = raw_batch()
    for model in (twin.build_preprocessor(),
                  lambda v: pp.build_preprocessor(stage="model")(
                      pp.build_preprocessor(stage="data")(v))):
        got = model(x)
        for k in encoded:
            np.testing.assert_array_equal(encoded[k], np.asarray(got[k]), err_msg=k)
    columns = {k: tf.reshape(v, [-1]) for k, v in x.items()}
    ds = tf.data.Dataset.from_tensor_slices(columns).batch(4).map(pp.make_dataset_fn())
    got = next(iter(ds))
    for k in encoded:
        np.testing.assert_array_equal(encoded[k], got[k].numpy(), err_msg=k)
    copy = str(tmp_path / "artifacts")
    shutil.copytree(pp.ARTIFACTS_DIR, copy)
    export_dir = str(tmp_path / "export")
    pp.build_preprocessor(copy).export(export_dir, verbose=False)
    shutil.rmtree(copy)
    served = tf.saved_model.load(export_dir).serve(x)  # no Python class needed
    for k in encoded:
        np.testing.assert_array_equal(encoded[k], served[k].numpy(), err_msg=k)


def test_generated_indicator_class_is_the_runtime_class(pp: ModuleType) -> None:
    with open(pp.__file__, encoding="utf-8") as f:
        assert_copied(f.read(), "missing", ("_missing_mask", "MissingIndicator"))


@pytest.mark.parametrize("which", ["runtime", "generated"])
def test_indicator_on_every_input_kind(which: str, pp: ModuleType) -> None:
    cls = missing.MissingIndicator if which == "runtime" else pp.MissingIndicator
    cases = [([[""], ["a"], [" "]], tf.string), ([[NAN], [0.0], [float("-inf")]], tf.float32),
             ([[MISSING_INT], [0], [-1]], tf.int64), ([[NAN], [1.5], [NAN]], tf.float64)]
    for rows, dtype in cases:
        want = [[1.0], [0.0], [1.0 if dtype == tf.float64 else 0.0]]
        for x in (tf.constant(rows, dtype), np.array(rows, dtype=dtype.as_numpy_dtype)):
            out = cls(name="flag")(x)
            assert out.dtype == tf.float32 and out.numpy().tolist() == want
        inp = keras.Input(shape=(1,), dtype=dtype.name)
        layer = cls(name=f"sym_{dtype.name}")
        model = keras.Model(inp, layer(inp))
        assert model.outputs[0].dtype == "float32"
        assert model(tf.constant(rows, dtype)).numpy().tolist() == want
    restored = cls.from_config(cls(name="cfg").get_config())
    assert restored.name == "cfg"
