"""default_value in the generated layers: missing raw inputs encode like the default does.

The analysis replaces a missing cell by the feature's ``default_value`` before counting;
the layers must do the same (``FillMissing``) in tf.data and in the exported model, or
training and serving see other data than the statistics describe. Expected values are
worked out by hand from ``DEFAULTS_DATA`` (counts, ties, idf, z-scores) in the comments.
"""

from __future__ import annotations

import math
import os
import shutil
from types import ModuleType

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import beam_prep  # noqa: E402
from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import DEFAULTS_DATA, import_module_from  # noqa: E402

MISSING_INT = -(2**63)
NAN = float("nan")
# Per feature: (missing marker, the spec's default_value, a seen value, an unseen value).
ROWS = {
    "country": ("", "US", "DE", "XX"),
    "device": ("", "phone", "tv", "watch"),
    "rare": ("", "zz", "x", "new"),
    "city": ("", "", "Paris", "Lima"),  # no default_value
    "store_id": (MISSING_INT, 99, 10, 12345),
    "shelf": (MISSING_INT, 0, 2, 7),
    "title": ("", "no title", "Red shoes!", "zzz"),
    "review": ("", "none", "great fit", "unseen words"),
    "price": (NAN, 20.0, 12.0, -3.0),
    "age": (NAN, NAN, 51.0, 0.0),  # no default_value
    "user_id": ("", "", "u1", "u999"),  # hashed: no default_value
}
# Raw inputs are data columns (feature `device` reads column `device_type`); numeric
# columns are float64, the type the analysis read them as.
DTYPES = {"store_id": tf.int64, "shelf": tf.int64, "price": tf.float64, "age": tf.float64}
COLUMNS = {"device": "device_type"}
DEFAULTED = ("country", "device", "rare", "store_id", "shelf", "title", "review", "price")


def raw_batch() -> dict:
    return {COLUMNS.get(k, k): tf.constant([[v] for v in rows], DTYPES.get(k, tf.string))
            for k, rows in ROWS.items()}


def assert_same(a, b) -> None:
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)


@pytest.fixture(scope="module")
def pp(defaults_artifacts: str, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    out = os.path.join(str(tmp_path_factory.mktemp("generated_defaults")), "pp_defaults.py")
    generate(defaults_artifacts, out)
    return import_module_from(out, "bp_generated_defaults")


@pytest.fixture(scope="module")
def encoded(pp: ModuleType) -> dict:
    return {k: v.numpy() for k, v in pp.build_preprocessor()(raw_batch()).items()}


def test_missing_encodes_exactly_like_the_default(encoded: dict) -> None:
    for name in DEFAULTED:
        for key in (name, name + "_bucket") if name == "price" else (name,):
            np.testing.assert_array_equal(encoded[key][0], encoded[key][1], err_msg=key)


def test_encoded_defaults_by_hand(encoded: dict) -> None:
    # country, filled: US 1+2, DE 3, FR 1, JP 1; tie by bytes descending -> US, DE, JP, FR.
    # Two OOV slots: US = 2, DE = 3; an unseen token hashes to slot 0 or 1.
    assert encoded["country"][:3, 0].tolist() == [2, 2, 3]
    assert encoded["country"][3, 0] in (0, 1)
    # device: phone 1+2, desktop 3, tv 1, tablet 1 -> phone, desktop, tv, tablet; 1 OOV.
    assert encoded["device"].tolist() == [[0, 1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 1, 0],
                                          [1, 0, 0, 0, 0]]
    # rare: min_count=100 empties the vocabulary; the default is OOV like everything else.
    assert encoded["rare"][:, 0].tolist() == [0, 0, 0, 0]
    # city has no default_value: "" stays OOV.
    assert encoded["city"][:, 0].tolist() == [0, 0, 1, 0]
    # store_id: 99 x3 (filled), 20 x2, 10 x2, 30 -> 99, 20, 10, 30 ("20" > "10").
    assert encoded["store_id"][:, 0].tolist() == [1, 1, 3, 0]
    # shelf: 3 x3, 0 x2 (filled), 1 x2, 2 -> 3, 1, 0, 2; multi_hot depth 5.
    assert encoded["shelf"].tolist() == [[0, 0, 0, 1, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1],
                                         [1, 0, 0, 0, 0]]
    # title: "no title" -> no, title, "no title": three in-vocabulary tokens (index >= 2),
    # where an unfilled "" would give all padding.
    first = encoded["title"][0].tolist()
    assert all(i >= 2 for i in first[:3]) and first[3:] == [0, 0]
    # review: "none" fills 3 of 8 documents: idf = ln(1 + 8 / (1 + 3)) = ln 3, tf = 1.
    row = encoded["review"][0]
    assert np.count_nonzero(row) == 1
    assert row.max() == np.float32(math.log(3.0))
    # price, filled: 10, 20, 7.5, 12, (NaN excluded), 15, 20, 30.
    values = np.array([10.0, 20.0, 7.5, 12.0, 15.0, 20.0, 30.0])
    z = (20.0 - values.mean()) / values.std()
    np.testing.assert_allclose(encoded["price"][:2, 0], [z, z], rtol=1e-5)
    # Boundaries 10, 15, 20: 20 is in bucket 3, 12 in bucket 1, -3 in bucket 0.
    assert encoded["price_bucket"][:, 0].tolist() == [3, 3, 1, 0]
    # age has no default_value: NaN is still NaN.
    assert np.isnan(encoded["age"][0, 0]) and not np.isnan(encoded["age"][2, 0])


def test_twin_stage_split_and_tf_data_agree(pp: ModuleType, encoded: dict) -> None:
    x = raw_batch()
    twin = beam_prep.layers_from_artifacts(pp.ARTIFACTS_DIR)
    assert twin.default_values == pp.DEFAULT_VALUES
    assert twin.missing_values["int64"] == pp.MISSING_INTEGER == MISSING_INT
    assert_same(encoded, twin.build_preprocessor()(x))
    # TPU split: lookups in tf.data, the NaN -> default fill and Normalization in the model.
    data = pp.build_preprocessor(stage="data")(x)
    assert np.isnan(data["price"].numpy()[0, 0])  # raw, passed through
    assert_same(encoded, pp.build_preprocessor(stage="model")(data))
    assert_same(encoded, twin.build_preprocessor(stage="model")(
        twin.build_preprocessor(stage="data")(x)))
    columns = {k: tf.reshape(v, [-1]) for k, v in x.items()}
    for fn in (pp.make_dataset_fn(), twin.make_dataset_fn()):
        ds = tf.data.Dataset.from_tensor_slices(columns).batch(4).map(fn)
        assert_same(encoded, next(iter(ds)))


# The twin runs the generated module's own source (tests/codegen/test_runtime_twin.py): its
# export is the slow suite's (default suite time).
@pytest.mark.parametrize("which", ["generated", pytest.param("twin", marks=pytest.mark.slow)])
def test_export_without_artifacts_agrees_with_tf_data(pp: ModuleType, encoded: dict,
                                                     which: str, tmp_path) -> None:
    copy = str(tmp_path / "artifacts")
    shutil.copytree(pp.ARTIFACTS_DIR, copy)
    if which == "generated":
        model, fn = pp.build_preprocessor(copy), pp.make_dataset_fn(copy)
    else:
        twin = beam_prep.layers_from_artifacts(copy)
        model, fn = twin.build_preprocessor(), twin.make_dataset_fn()
    x = raw_batch()
    via_tf_data = next(iter(tf.data.Dataset.from_tensors(x).map(fn)))
    assert_same(encoded, via_tf_data)
    export_dir = str(tmp_path / "export")
    model.export(export_dir, verbose=False)
    shutil.rmtree(copy)  # vocabularies travel as assets; defaults are in the graph
    loaded = tf.saved_model.load(export_dir)
    assert_same(encoded, loaded.serve(x))
    tfsm = keras.layers.TFSMLayer(export_dir, call_endpoint="serve", dtype="float64")
    assert_same(encoded, tfsm(x))


def test_defaults_data_has_missing_cells_for_each_defaulted_feature() -> None:
    # The fixture must exercise the fill: every defaulted column has a None.
    for name in DEFAULTED:
        assert None in DEFAULTS_DATA[COLUMNS.get(name, name)], name


CSV = """country,store_id,title,price,label
US,10,red shoes,10.5,1
,20,,,0
DE,,blue hat,12.0,1
,10,red hat,,0
FR,30,,7.0,1
US,,hat,4.5,0
"""
SPEC_YAML = """features:
  - {name: country, kind: string, default_value: DE}
  - {name: store_id, kind: integer, default_value: 0}
  - {name: title, kind: text, output_sequence_length: 3, default_value: unknown}
  - {name: price, kind: numeric, default_value: 0.0}
"""


def test_real_analysis_and_csv_dataset_agree_on_missing_cells(tmp_path) -> None:
    """Empty CSV fields: the analysis fills them, and so does the generated module."""
    from beam_prep.pipelines import analyze

    (tmp_path / "data.csv").write_text(CSV, encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(SPEC_YAML, encoding="utf-8")
    artifacts = str(tmp_path / "artifacts")
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(tmp_path / "data.csv"),
                 "--output", artifacts])
    generate(artifacts, str(tmp_path / "pp.py"))
    pp = import_module_from(str(tmp_path / "pp.py"), "bp_generated_defaults_csv")

    # tf.data reads an empty field as the missing marker of its column's dtype.
    missing = {"string": "", "int64": tf.constant(pp.MISSING_INTEGER, tf.int64),
               "float64": tf.constant(NAN, tf.float64)}
    header = CSV.splitlines()[0].split(",")
    defaults = [missing[pp.INPUT_DTYPES[c]] if c in pp.INPUT_DTYPES else tf.constant(0, tf.int64)
                for c in header]
    ds = tf.data.experimental.CsvDataset(str(tmp_path / "data.csv"), defaults, header=True)
    ds = ds.map(lambda *cols: dict(zip(header, cols))).batch(6).map(pp.make_dataset_fn())
    got = {k: v.numpy() for k, v in next(iter(ds)).items()}

    # country, filled: DE 1+2, US 2, FR 1 -> DE=1, US=2, FR=3 (one OOV slot).
    assert got["country"][:, 0].tolist() == [2, 1, 1, 1, 3, 2]
    # store_id, filled: 10 x2, 0 x2, 30, 20 -> 10=1, 0=2, 30=3, 20=4 (ties by decimal
    # string descending).
    assert got["store_id"][:, 0].tolist() == [1, 4, 2, 1, 3, 2]
    # Moments of the filled column (the analysis counted the 0.0 defaults).
    filled = np.array([10.5, 0.0, 12.0, 0.0, 7.0, 4.5])
    np.testing.assert_allclose(got["price"][:, 0], (filled - filled.mean()) / filled.std(),
                               rtol=1e-5)
    # Missing titles encode like the text "unknown", a vocabulary token (not [UNK] = 1).
    unknown = pp.build_preprocessor()({
        "country": tf.constant([["DE"]]), "store_id": tf.constant([[0]], tf.int64),
        "title": tf.constant([["unknown"]]), "price": tf.constant([[0.0]], tf.float64)})
    for row in (1, 4):
        np.testing.assert_array_equal(got["title"][row], unknown["title"].numpy()[0])
    assert got["title"][1][0] >= 2 and got["title"][1][1:].tolist() == [0, 0]
