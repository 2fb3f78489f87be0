"""Issue 21 items 2 and 3: no float32 skew in derived features, one raw input per column.

Item 2: the analysis reads an expression's numeric columns as float64 (int64 data is
converted by the reader) and evaluates in float64 (``beam_prep.expr.arrow``). The layers
must compute the same value: their raw input is float64 and only the *result* is cast to
float32 (what the feature's layers take). The oracle is the analysis itself: the reader's
conversion (``beam_prep.io.inputs.columns.normalize``) and the analysis' evaluation
(``split_fn.feature_column``) of the same rows, cast to float32 by numpy, with float32
subnormals as ±0 (TensorFlow flushes them in the cast; see docs/expressions.md).

Item 3: raw inputs are keyed by data column, once each; a client that sends only the real
columns gets predictions from the exported model, and the SavedModel signature names data
columns with the dtypes the analysis read them as.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")


from beam_prep import Artifacts  # noqa: E402
from beam_prep.analyzers.split_fn import feature_column, required_columns  # noqa: E402
from beam_prep.codegen.runtime import layers_from_artifacts  # noqa: E402
from beam_prep.io.inputs.columns import normalize  # noqa: E402
from beam_prep.spec import Spec  # noqa: E402
from tests.codegen.conftest import analyze_and_import  # noqa: E402
from tests.fuzzing import examples  # noqa: E402

# Numeric features without scaling: their layer output is the derived value (float32).
NUMERIC = {
    "since": "ts - 1700000000", "add": "a + b", "sub": "a - b", "mul": "a * b",
    "div": "a / b", "neg": "-a", "scaled": "a * 2.5 - 1", "ratio": "a / (b + 1)",
    "log1p_a": "log1p(a)", "log_a": "log(a)", "exp_a": "exp(a)", "sqrt_a": "sqrt(a)",
    "abs_a": "abs(a)", "floor_a": "floor(a / 3)", "clip_a": "clip(a, b, c)",
    "min_ab": "minimum(a, b)", "max_abc": "maximum(a, b, c)", "coal_ab": "coalesce(a, b)",
    "float_a": "float(a)", "price_log": "log1p(price)",
}
# TensorFlow's float64 log/exp are not libm's: they may differ in the last bit.
NOT_CORRECTLY_ROUNDED = {"log1p_a", "log_a", "exp_a", "price_log"}
# Arrow and TensorFlow may pick different signs when minimum/maximum compare -0.0 and 0.0
# (IEEE leaves it open); the values are equal.
ZERO_SIGN_OPEN = {"clip_a", "min_ab", "max_abc"}
STRINGS = {"i_text": "str(i)", "i_cross": "cross(str(i), s)"}

SPEC_FEATURES = (
    [{"name": n, "kind": "numeric", "scaling": "none", "expr": e} for n, e in NUMERIC.items()]
    + [{"name": n, "kind": "string", "expr": e} for n, e in STRINGS.items()]
    + [{"name": "price_01", "kind": "numeric", "column": "price", "num_buckets": 2},
       {"name": "price_raw", "kind": "numeric", "column": "price", "scaling": "none"},
       {"name": "country", "kind": "string", "column": "cc"}])

ROWS = {
    "ts": [1700000123, 1700000000, 1699999999, 2**53 + 1, -(2**40), 0],
    "a": [1.5, -0.0, 2.0, 1e300, 5.0, 3.0],
    "b": [2.0, 0.0, -1.0, 1e-300, 7.0, 0.5],
    "c": [3.0, 1.0, 0.0, 1.0, 6.0, 2.0],
    "price": [10.0, 1000.0, 0.1, 3.0, 2.5, 7.0],
    "i": [1, 2, 2**60, -3, 2**24 + 1, 5],
    "s": ["x", "y", "z", "x", "y", "x|y"],
    "cc": ["DE", "FR", "DE", "US", "FR", "DE"],
}


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    root = tmp_path_factory.mktemp("column_inputs")
    lines = [",".join(ROWS)]
    for k in range(len(ROWS["ts"])):
        lines.append(",".join(repr(ROWS[c][k]) if isinstance(ROWS[c][k], float)
                              else str(ROWS[c][k]) for c in ROWS))
    (root / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "spec.yaml").write_text(json.dumps({"features": SPEC_FEATURES}))
    out, generated = analyze_and_import(root, "data.csv", "bp_generated_column_inputs")
    pp = layers_from_artifacts(out)
    inputs = pp.raw_inputs()
    probe = keras.Model(inputs, pp.feature_values(inputs))
    inputs = generated.raw_inputs()
    probe.generated = keras.Model(inputs, generated.feature_values(inputs))
    return out, generated, pp, probe


def _arrow_values(spec: Spec, data: dict[str, np.ndarray]) -> dict[str, list]:
    """What the analysis computes: the reader's conversion, then the expression."""
    types = required_columns(spec)
    batch = pa.record_batch({c: normalize(pa.array(v), types[c])[0] for c, v in data.items()
                             if c in types})
    return {f.name: feature_column(f, batch).to_pylist() for f in spec.features
            if f.expr is not None}


def _as_layer_float32(values: list) -> np.ndarray:
    """float64 analysis values as the layers hold them: float32, NaN for null, subnormal -> ±0."""
    x = np.array([math.nan if v is None else v for v in values], np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(np.float32)
        tiny = np.abs(y) < np.finfo(np.float32).tiny
        return np.where(tiny, y * np.float32(0), y)


def _same_float32(got: np.ndarray, want: np.ndarray, *, ulps: int = 0,
                  zero_sign: bool = True) -> bool:
    both_nan = np.isnan(got) & np.isnan(want)
    if ulps == 0:
        equal = (got == want) & ((np.signbit(got) == np.signbit(want)) | ~zero_sign)
    else:
        equal = _within_ulps(got, want, ulps)
    return bool(np.all(both_nan | equal))


def _within_ulps(got: np.ndarray, want: np.ndarray, ulps: int) -> np.ndarray:
    finite = np.isfinite(got) & np.isfinite(want)
    with np.errstate(invalid="ignore"):
        gap = np.abs(got.astype(np.float64) - want.astype(np.float64))
    close = gap <= ulps * np.spacing(np.maximum(np.abs(got), np.abs(want))).astype(np.float64)
    return np.where(finite, close, got == want)


def test_timestamp_difference_is_exact(analyzed):
    """The issue's example: analysis 123, layers were 128 (float32 raw input)."""
    path, generated, pp, _ = analyzed
    ts = np.array([[1700000123], [1700000000], [1699999999]], np.int64)
    batch = {c: np.array([[v] for v in ROWS[c][:3]]) for c in ROWS}
    batch["ts"] = ts
    want = [123.0, 0.0, -1.0]
    spec = Artifacts(path).spec
    assert _arrow_values(spec, {c: v.ravel() for c, v in batch.items()})["since"] == want
    for layers in (generated.build_preprocessor(path, stage="data"),
                   pp.build_preprocessor(stage="data")):
        raw = pp.raw_columns(batch)
        assert np.asarray(layers(raw)["since"]).ravel().tolist() == want


def test_raw_inputs_are_data_columns_once_each(analyzed):
    path, generated, pp, _ = analyzed
    want = {"ts": "float64", "a": "float64", "b": "float64", "c": "float64",
            "price": "float64", "i": "int64", "s": "string", "cc": "string"}
    assert generated.INPUT_DTYPES == want
    assert pp.input_dtypes == want
    assert set(generated.raw_inputs()) == set(want)
    assert set(pp.input_signature()) == set(want)
    assert {n: s.dtype.name for n, s in generated.input_signature().items()} == want
    assert "price_01" not in generated.raw_inputs()


INT64_EDGES = st.one_of(
    st.sampled_from([0, 1, -1, 2**24 + 1, 2**24 - 1, -(2**24) - 3, 2**53 - 1, 2**53 + 1,
                     -(2**53) - 1, 2**62 + 7, 2**63 - 1, -(2**63) + 1, 1700000123]),
    st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1),
)
FLOAT64_EDGES = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.1, 5e-324, -5e-324, 2.2250738585072014e-308,
                     1e-310, 1e-40, 3.5e38, -3.5e38, 1e300, 1.7976931348623157e308,
                     float("inf"), float("-inf"), float("nan"), 1700000123.0, 2.0**53 + 2]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e6, max_value=1e6),
)


def _column(kind: str, n: int):
    values = INT64_EDGES if kind == "int" else FLOAT64_EDGES
    return st.lists(values, min_size=n, max_size=n)


@st.composite
def batches(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    data = {}
    for c in ("ts", "a", "b", "c", "price"):
        kind = draw(st.sampled_from(["int", "float"]))
        data[c] = np.array(draw(_column(kind, n)),
                           np.int64 if kind == "int" else np.float64)
    ints = draw(st.lists(INT64_EDGES.filter(lambda v: v != -(2**63)), min_size=n, max_size=n))
    data["i"] = np.array(ints, np.int64)
    data["s"] = np.array(draw(st.lists(st.sampled_from(["x", "y|", "\\"]), min_size=n,
                                       max_size=n)), object)
    data["cc"] = np.array(["DE"] * n, object)
    return data


@settings(max_examples=examples(20), deadline=None, derandomize=True,
          phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=batches())
def test_analysis_value_equals_layer_value(analyzed, data):
    path, _, pp, probe = analyzed
    spec = Artifacts(path).spec
    want = _arrow_values(spec, data)
    raw = pp.raw_columns({c: v[:, None] for c, v in data.items()})
    with np.errstate(all="ignore"):
        got = probe(raw)
        by_generated = probe.generated(raw)
    for name in (*NUMERIC, *STRINGS):  # the generated module computes the same values
        np.testing.assert_array_equal(np.asarray(by_generated[name]), np.asarray(got[name]))
    for name in NUMERIC:
        g = np.asarray(got[name]).ravel()
        w = _as_layer_float32(want[name])
        ulps = 1 if name in NOT_CORRECTLY_ROUNDED else 0
        assert _same_float32(g, w, ulps=ulps, zero_sign=name not in ZERO_SIGN_OPEN), (
            name, data, g, w)
    for name in STRINGS:
        g = [v.decode("utf-8") for v in np.asarray(got[name]).ravel()]
        assert g == ["" if v is None else v for v in want[name]], (name, g, want[name])


# slow (default suite time: a serving process); the shared input is checked in-process by
# test_raw_inputs_are_data_columns_once_each, serving in a fresh process by
# tests/derived/test_hostile_column_names.py
@pytest.mark.slow
def test_two_features_on_price_share_one_input_and_serve(analyzed, tmp_path):
    """Export, reload in a fresh process, call with the data columns only (item 3)."""
    path, generated, _, _ = analyzed
    inputs = generated.raw_inputs()
    encoded = generated.build_preprocessor(path)(inputs)
    parts = [keras.ops.cast(encoded[k], "float32") for k in ("price_01", "price_raw",
                                                              "since", "country")]
    model = keras.Model(inputs, keras.ops.concatenate(parts, axis=-1))
    export_dir = str(tmp_path / "export")
    model.export(export_dir, verbose=False)
    client = textwrap.dedent("""
        import json, sys
        import numpy as np
        import tensorflow as tf
        loaded = tf.saved_model.load(sys.argv[1])
        fn = loaded.signatures["serving_default"]
        spec = fn.structured_input_signature[1]
        columns = {"ts": [1700000123], "a": [1.0], "b": [2.0], "c": [3.0], "price": [10.0],
                   "i": [4], "s": ["x"], "cc": ["FR"]}
        dtypes = {k: v.dtype.name for k, v in spec.items()}
        out = fn(**{k: tf.constant([[v[0]]], spec[k].dtype) for k, v in columns.items()})
        (value,) = out.values()
        print(json.dumps({"dtypes": dtypes, "pred": value.numpy().tolist()}))
    """)
    run = subprocess.run([sys.executable, "-c", client, export_dir], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["dtypes"] == {"ts": "float64", "a": "float64", "b": "float64",
                                "c": "float64", "price": "float64", "i": "int64",
                                "s": "string", "cc": "string"}
    expected = np.asarray(model({
        "ts": np.array([[1700000123.0]]), "a": np.array([[1.0]]), "b": np.array([[2.0]]),
        "c": np.array([[3.0]]), "price": np.array([[10.0]]), "i": np.array([[4]], np.int64),
        "s": np.array([["x"]], object), "cc": np.array([["FR"]], object)}))
    np.testing.assert_array_equal(np.asarray(result["pred"], np.float32), expected)
    assert result["pred"][0][2] == 123.0  # the exact difference, served


def test_manifest_records_column_types_and_the_plan_checks_them(analyzed, tmp_path):
    """Additive manifest key (derived specs only): the types the reader converted to."""
    import shutil

    from beam_prep.codegen.plan import plan_from_artifacts
    from beam_prep.errors import ArtifactError
    from beam_prep.io.contract.artifacts import canonical_json, manifest_fingerprint

    path, generated, _, _ = analyzed
    manifest = Artifacts(path).manifest
    assert manifest["input"]["column_types"] == required_columns(Artifacts(path).spec)
    assert manifest["input"]["column_types"] == generated.INPUT_DTYPES  # every column analysed
    copy = str(tmp_path / "artifacts")
    shutil.copytree(path, copy)
    manifest["input"]["column_types"]["ts"] = "float32"
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(os.path.join(copy, "manifest.json"), "wb") as f:
        f.write(canonical_json(manifest))
    with pytest.raises(ArtifactError, match="Column 'ts' was read as float32"):
        plan_from_artifacts(Artifacts(copy))


def test_manifest_without_derived_features_has_no_column_types():
    from beam_prep.analyzers.manifest import build_manifest

    meta = {"missing": {}, "documents": {}, "rows_read": 0, "rows_rejected": 0,
            "rejected_by_reason": {}}
    plain = Spec.from_dict({"features": [{"name": "price", "kind": "numeric"}]})
    derived = Spec.from_dict({"features": [{"name": "r", "kind": "numeric",
                                            "expr": "price / 2"}]})
    assert "column_types" not in build_manifest(plain, {}, {}, {}, meta, [])["input"]
    assert build_manifest(derived, {}, {}, {}, meta, [])["input"]["column_types"] == {
        "price": "float64"}


def test_one_column_read_with_two_dtypes_is_refused_at_generation():
    """A numeric feature (float64) and an integer hashed feature (int64) on one column."""
    from types import SimpleNamespace

    from beam_prep.codegen.derived_plan import raw_inputs_of
    from beam_prep.errors import SpecError

    def plain(name, dtype):
        return SimpleNamespace(name=name, column="store", dtype=dtype, crossed=(),
                               derived=None, list_input=False)

    shared = raw_inputs_of([plain("store_a", "int64"), plain("store_b", "int64")])
    assert [(r.name, r.dtype) for r in shared] == [("store", "int64")]
    with pytest.raises(SpecError, match="reads column 'store' as a scalar float64, but "
                                        "feature 'store_hash' reads it as a scalar int64"):
        raw_inputs_of([plain("store_hash", "int64"), plain("store_num", "float32")])
