"""`scaling: log1p | robust | piecewise_linear`: analysis quartiles, generated layers, twin.

Artifacts come from the real analysis of a Parquet file (heavy-tailed values, negatives,
missing cells, NaN, a constant and an all-missing column, a hostile column name). Oracles:
numpy (quantile ranks for the sketch's quartiles; the formulas of the three transforms in
float64), the library classes of ``beam_prep.codegen.numeric_layers`` (the rendered classes
must be their text, character for character) and the runtime twin (identical outputs).
"""

from __future__ import annotations

import ast
import json
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from beam_prep.pipelines import analyze  # noqa: E402

from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.codegen.runtime import layers_from_artifacts  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.copied_source import assert_copied  # noqa: E402

HOSTILE = 'x"\'); import os #\n'
SPEC = {"features": [
    {"name": "lg", "kind": "numeric", "column": "x", "scaling": "log1p"},
    {"name": "rb", "kind": "numeric", "column": "x", "scaling": "robust"},
    {"name": "rb_eps", "kind": "numeric", "column": "x", "scaling": "robust", "epsilon": 0.001},
    {"name": "rb_const", "kind": "numeric", "column": "c", "scaling": "robust"},
    {"name": "rb_none", "kind": "numeric", "column": "empty", "scaling": "robust"},
    {"name": "pl", "kind": "numeric", "column": "x", "scaling": "piecewise_linear",
     "num_buckets": 5},
    {"name": "pl_const", "kind": "numeric", "column": "c", "scaling": "piecewise_linear",
     "num_buckets": 3},
    {"name": "pl_hostile", "kind": "numeric", "column": HOSTILE,
     "scaling": "piecewise_linear", "num_buckets": 4},
    {"name": "z", "kind": "numeric", "column": "x", "num_buckets": 5},
]}
N = 3000
RNG = np.random.default_rng(23)
X = np.round(RNG.standard_t(2, N) * 50.0, 3)
X_CELLS = [None if i % 97 == 0 else (float("nan") if i % 89 == 0 else float(v))
           for i, v in enumerate(X)]
SERVE = np.array([-1e6, -250.0, -3.0, -0.5, 0.0, 1e-3, 0.7, 2.0, 3.0, 4.5, 40.0, 1e6,
                  float("nan")], np.float64)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("scaling")
    table = pa.table({"x": pa.array(X_CELLS, pa.float64()),
                      "c": pa.array([3.0] * N), "empty": pa.array([None] * N, pa.float64()),
                      HOSTILE: pa.array(X_CELLS, pa.float64())})
    pq.write_table(table, str(root / "train.parquet"))
    (root / "spec.yaml").write_text(json.dumps(SPEC))
    out = str(root / "artifacts")
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "train.parquet"),
                 "--output", out])
    path = root / "preprocessing.py"
    path.write_text(render_module(Artifacts(out)), encoding="utf-8")
    return out, import_module_from(str(path), "bp_generated_scaling"), str(path)


def _finite_train() -> np.ndarray:
    x = np.array([np.nan if v is None else v for v in X_CELLS])
    return x[~np.isnan(x)]


def _stats(out: str, name: str) -> dict:
    return Artifacts(out).stats(name)


@pytest.mark.parametrize("name,eps", [("rb", 0.01), ("rb_eps", 0.001)])
def test_quartiles_are_quantiles_within_the_sketch_epsilon(setup, name, eps):
    out, _, _ = setup
    st = _stats(out, name)
    assert st["epsilon"] == eps
    x = np.sort(_finite_train())
    q = st["quartiles"]
    assert len(q) == 3 and q == sorted(q)
    for level, value in zip((0.25, 0.5, 0.75), q):
        below, at_most = np.mean(x < value), np.mean(x <= value)
        assert below <= level + eps and at_most >= level - eps, (level, value)
    assert abs(q[1] - np.quantile(x, 0.5)) <= np.quantile(x, 0.5 + eps) - np.quantile(
        x, 0.5 - eps)


def test_quartiles_of_a_constant_and_of_no_value(setup):
    out, _, _ = setup
    assert _stats(out, "rb_const")["quartiles"] == [3.0, 3.0, 3.0]
    assert _stats(out, "rb_none")["quartiles"] is None
    # Only features that need them have quartiles; the others' stats keep their keys.
    for name in ("lg", "pl", "z"):
        assert "quartiles" not in _stats(out, name)
    assert _stats(out, "lg")["epsilon"] is None


def _serve_batch(module) -> dict:
    cols = {c: tf.constant(SERVE.reshape(-1, 1)) for c in ("x", "c", "empty", HOSTILE)}
    return module.make_dataset_fn()(cols)


def _oracle_piecewise(x: np.ndarray, edges: list[float]) -> np.ndarray:
    """Gorishniy et al. 2022, eq. (PLE), over edges b_0..b_T; an empty bin is a step."""
    b = np.asarray(edges, np.float64)
    t_count = len(b) - 1
    out = np.zeros((len(x), t_count))
    for t in range(t_count):
        lo, hi = b[t], b[t + 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            v = (x - lo) / (hi - lo) if hi > lo else (x >= lo).astype(float)
        if t > 0:
            v = np.where(x < lo, 0.0, v)
        if t < t_count - 1:
            v = np.where(x >= hi, 1.0, v)
        out[:, t] = np.where(np.isnan(x), np.nan, v)
    return out


def test_generated_layers_match_numpy_formulas(setup):
    out, module, _ = setup
    got = {k: np.asarray(v, np.float64) for k, v in _serve_batch(module).items()}
    x = SERVE.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(got["lg"][:, 0], np.sign(x) * np.log1p(np.abs(x)), rtol=2e-7)
    q25, q50, q75 = _stats(out, "rb")["quartiles"]
    np.testing.assert_allclose(got["rb"][:, 0], (x - q50) / (q75 - q25), rtol=1e-6, atol=1e-6)
    # IQR 0 divides by 1 (sklearn's RobustScaler); no finite value: the identity.
    np.testing.assert_allclose(got["rb_const"][:, 0], x - 3.0, rtol=1e-6)
    np.testing.assert_array_equal(got["rb_none"][:, 0], x)
    st = _stats(out, "pl")
    edges = [st["min"], *st["boundaries"], st["max"]]
    assert got["pl"].shape == (len(SERVE), 5) == (len(SERVE), SPEC["features"][5]["num_buckets"])
    np.testing.assert_allclose(got["pl"], _oracle_piecewise(x, edges), rtol=1e-5, atol=1e-6)
    # A constant column: every bin is a step at the value.
    np.testing.assert_array_equal(got["pl_const"],
                                  _oracle_piecewise(x, [3.0, 3.0, 3.0, 3.0]))
    assert got["pl_hostile"].shape == (len(SERVE), 4)
    assert module.OUTPUT_SPECS["pl"] == ("float32", (None, 5))
    assert module.OUTPUTS["rb"] == ("rb", "model")


def test_rendered_classes_are_the_library_classes(setup):
    _, _, path = setup
    with open(path, encoding="utf-8") as f:
        code = f.read()
    assert_copied(code, "numeric")  # _numeric_ops, SignedLog1p, RobustScaling, PiecewiseLinear
    assert HOSTILE not in code  # the column name is only ever an escaped literal


def test_runtime_twin_equals_generated_module(setup):
    out, module, _ = setup
    generated = _serve_batch(module)
    twin = _serve_batch(layers_from_artifacts(out))
    assert set(generated) == set(twin)
    for key in generated:
        np.testing.assert_array_equal(np.asarray(generated[key]), np.asarray(twin[key]))
    layers = layers_from_artifacts(out).build_layers()
    assert [type(x).__name__ for x in layers["pl"]] == ["PiecewiseLinear", "Reshape"]
    assert [type(x).__name__ for x in module.build_layers(out)["pl"]] == ["PiecewiseLinear",
                                                                         "Reshape"]


def test_model_stage_split_gives_the_same_values(setup):
    """TPU split: log1p and robust are model-stage layers (the data stage passes the raw
    value, as for Normalization); piecewise_linear, wider than its input, is a data-stage
    one (as Discretization), so the model stage's inputs keep OUTPUT_SPECS' widths."""
    out, module, _ = setup
    raw = {c: tf.constant(SERVE.reshape(-1, 1)) for c in ("x", "c", "empty", HOSTILE)}
    data = module.make_dataset_fn(stage="data")(raw)
    model = module.build_preprocessor(out, stage="model")
    both = model({k: data[k] for k in model.input})
    full = module.make_dataset_fn()(raw)
    np.testing.assert_array_equal(np.asarray(data["rb"]), SERVE.astype(np.float32)[:, None])
    assert module.OUTPUTS["pl"][1] == "data" and module.OUTPUTS["lg"][1] == "model"
    for key in ("lg", "rb", "pl"):
        np.testing.assert_array_equal(np.asarray(both[key]), np.asarray(full[key]))


RUN = """
import importlib.util, json, sys
import numpy as np
import tensorflow as tf
import keras
spec = importlib.util.spec_from_file_location("bp_generated_scaling_jax", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
from beam_prep.codegen.runtime import layers_from_artifacts
x = tf.constant(json.loads(sys.argv[3]), tf.float64)[:, None]
cols = {c: x for c in module.INPUT_DTYPES}
ds = tf.data.Dataset.from_tensors(cols)
gen = next(iter(ds.map(module.make_dataset_fn())))
twin = next(iter(ds.map(layers_from_artifacts(sys.argv[2]).make_dataset_fn())))
print("RESULT " + json.dumps({"backend": keras.backend.backend(),
      "generated": {k: np.asarray(v).tolist() for k, v in gen.items()},
      "twin": {k: np.asarray(v).tolist() for k, v in twin.items()}}))
"""


@pytest.mark.slow  # the JAX twin (default suite time)
def test_generated_module_in_tf_data_on_jax(setup):
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    out, module, path = setup
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    values = [v for v in SERVE.tolist() if v == v]
    proc = subprocess.run([sys.executable, "-c", RUN, path, out, json.dumps(values)], cwd=root,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": root})
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["backend"] == "jax"
    x = tf.constant(values, tf.float64)[:, None]
    expected = module.make_dataset_fn()({c: x for c in module.INPUT_DTYPES})
    for key in ("lg", "rb", "rb_const", "pl", "pl_const"):
        want = np.asarray(expected[key])
        np.testing.assert_array_equal(np.asarray(result["generated"][key], np.float32), want)
        np.testing.assert_array_equal(np.asarray(result["twin"][key], np.float32), want)


def test_statistics_beyond_float32_are_refused_with_the_fix():
    from beam_prep.codegen.scaling_plan import piecewise_layers, robust_layer
    from beam_prep.errors import ArtifactError

    big = 1.7976931348623157e308  # a quartile of infinite values, as the manifest stores it
    with pytest.raises(ArtifactError, match=r"Feature 'x'.*RobustScaling.*`scaling: none`"):
        robust_layer("x", {"count": 8, "quartiles": [1.0, 2.0, big]})
    with pytest.raises(ArtifactError, match=r"PiecewiseLinear.*`scaling: none`"):
        piecewise_layers("x", {"count": 8, "min": -1e300, "max": 1.0, "boundaries": [0.0]}, 2)


def test_exported_inference_model_serves_the_same_encoding(setup, tmp_path):
    import keras

    out, module, _ = setup
    keys = ("lg", "rb", "rb_const", "pl", "pl_const")
    encoded = module.encoded_inputs()
    merged = keras.layers.Concatenate(name="merged")([encoded[k] for k in keys])
    trainer = keras.Model(encoded, merged, name="trainer")
    inference = module.build_inference_model(trainer, out)
    inference.export(str(tmp_path / "exported"), verbose=False)
    loaded = tf.saved_model.load(str(tmp_path / "exported"))
    values = SERVE[~np.isnan(SERVE)].reshape(-1, 1)
    raw = {c: tf.constant(values) for c in module.INPUT_DTYPES}
    served = loaded.serve(raw).numpy()
    want = np.concatenate([np.asarray(module.make_dataset_fn()(raw)[k]) for k in keys], axis=1)
    np.testing.assert_array_equal(served, want)


def test_module_is_ruff_clean_and_imports_only_keras_tensorflow(setup, tmp_path):
    import subprocess
    import sys

    out, _, _ = setup
    spec = {"features": [{"name": f"pl{n}", "kind": "numeric", "column": "x",
                          "scaling": "piecewise_linear", "num_buckets": n} for n in (2, 40)]}
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    pq.write_table(pa.table({"x": pa.array(X_CELLS, pa.float64())}),
                   str(tmp_path / "x.parquet"))
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input",
                 str(tmp_path / "x.parquet"), "--output", str(tmp_path / "art")])
    for i, art in enumerate((out, str(tmp_path / "art"))):
        code = render_module(Artifacts(art), default_artifacts_dir="gs://b/a")
        path = tmp_path / f"preprocessing{i}.py"
        path.write_text(code, encoding="utf-8")
        ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
        proc = subprocess.run([ruff, "check", "--no-cache", "--isolated", "--line-length",
                               "100", "--select", "E,F,W,I,B,UP", "--ignore", "UP007,B905",
                               str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        roots = {(n.module or "").split(".")[0] if isinstance(n, ast.ImportFrom)
                 else n.names[0].name.split(".")[0]
                 for n in ast.parse(code).body if isinstance(n, (ast.Import, ast.ImportFrom))}
        assert roots - set(sys.stdlib_module_names) - {"__future__"} == {"keras", "tensorflow"}


def test_summaries_say_when_a_layer_is_degenerate(setup):
    _, module, _ = setup
    doc = " ".join(module.__doc__.split())  # the summaries are wrapped
    assert "'rb_none': robust scaling, median=0.0, iqr=1.0 (no finite value in the data:" in doc
    assert "'rb_const': robust scaling, median=3.0, iqr=1.0" in doc
    assert "(a constant: step bins at that value)" in " ".join(
        module.build_pl_const_layers.__doc__.split())
