"""Issue 21 (hostile review): data columns whose names Keras or TF SavedModel refuse.

``price/usd`` is not a valid Keras layer name, ``c d``/``e<x>``/``class`` are not valid
SavedModel signature argument names. The raw inputs stay keyed by data column; each
``keras.Input`` gets the name ``beam_prep.input_names.input_name`` gives (``INPUT_NAMES`` in
the generated module, ``input_names`` on the runtime twin). Both build, predict, export,
and a fresh process calls the exported signature with those names and gets the same values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from beam_prep.pipelines import analyze  # noqa: E402

from beam_prep.codegen.runtime import layers_from_artifacts  # noqa: E402
from tests.codegen.conftest import analyze_and_import  # noqa: E402

COLUMNS = ("c d", "e<x>", "price/usd", "class")
CSV = '"c d","e<x>","price/usd","class"\nx,1.5,10.0,a\ny,2.5,20.0,b\nx,-1.0,5.0,a\n'
FEATURES = [
    {"name": "cd", "kind": "string", "column": "c d"},
    {"name": "e", "kind": "numeric", "column": "e<x>"},
    {"name": "price", "kind": "numeric", "column": "price/usd", "num_buckets": 2},
    {"name": "klass", "kind": "string", "column": "class"},
]
ROW = {"c d": "y", "e<x>": 2.0, "price/usd": 7.5, "class": "b"}


def _valid_signature_name(name: str) -> bool:
    import keyword
    return name.isidentifier() and name.isascii() and not keyword.iskeyword(name)


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_columns")
    (root / "data.csv").write_text(CSV, encoding="utf-8")
    (root / "spec.yaml").write_text(json.dumps({"features": FEATURES}))
    out, generated = analyze_and_import(root, "data.csv", "bp_generated_hostile_columns")
    return out, generated, layers_from_artifacts(out)


def _trainer(output_specs: dict) -> keras.Model:
    inputs = {k: keras.Input(shape=shape[1:], dtype=dtype, name=k)
              for k, (dtype, shape) in output_specs.items()}
    parts = [keras.ops.cast(inputs[k], "float32") for k in sorted(inputs)]
    return keras.Model(inputs, keras.ops.concatenate(parts, axis=-1))


def _batch(dtypes: dict) -> dict:
    return {c: np.array([[ROW[c]]], object if dtypes[c] == "string" else dtypes[c])
            for c in COLUMNS}


# the runtime twin runs in the slow suite (default suite time)
@pytest.mark.parametrize("side", ["generated", pytest.param("runtime", marks=pytest.mark.slow)])
def test_hostile_columns_build_predict_export_and_serve(analyzed, side, tmp_path):
    _, generated, pp = analyzed
    if side == "generated":
        names, dtypes, specs = generated.INPUT_NAMES, generated.INPUT_DTYPES, \
            generated.OUTPUT_SPECS
        module = generated
    else:
        names, dtypes, specs = pp.input_names, pp.input_dtypes, pp.output_specs
        module = pp
    assert names == generated.INPUT_NAMES  # generated module and runtime twin agree
    assert set(names) == set(COLUMNS)  # keys stay the data columns
    assert all(_valid_signature_name(n) for n in names.values()), names
    assert len(set(names.values())) == len(names)
    assert names["class"] != "class" and names["price/usd"].startswith("price_usd_")
    assert {c: s.name for c, s in module.input_signature().items()} == names
    model = module.build_inference_model(_trainer(specs))
    want = np.asarray(model(_batch(dtypes)))
    assert want.shape == (1, len(specs))
    export_dir = str(tmp_path / "export")
    model.export(export_dir, verbose=False)
    client = textwrap.dedent("""
        import json, sys
        import tensorflow as tf
        names, row, dtypes = json.loads(sys.argv[2])
        fn = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
        args = {names[c]: tf.constant([[v]], dtypes[c]) for c, v in row.items()}
        (value,) = fn(**args).values()
        print(json.dumps(value.numpy().tolist()))
    """)
    arg = json.dumps([names, ROW, dtypes])
    run = subprocess.run([sys.executable, "-c", client, export_dir, arg], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.asarray(json.loads(run.stdout.strip().splitlines()[-1]), np.float32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("side", ["generated", "runtime"])
def test_renamed_inputs_build_without_the_keras_dict_key_warning(analyzed, side):
    """Keras warns when a dict key of ``keras.Model(inputs)`` is not its tensor's name (a
    column the Input name had to sanitise); it matches dict inputs by key, so the models
    build without that warning and still read the columns by their names."""
    import warnings

    _, generated, pp = analyzed
    module = generated if side == "generated" else pp
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        models = [module.build_preprocessor(stage=stage) for stage in ("all", "data")]
        models.append(module.build_inference_model(_trainer(generated.OUTPUT_SPECS)))
    texts = [str(w.message) for w in got if issubclass(w.category, UserWarning)]
    assert not [t for t in texts if "must match the names" in t], texts
    out = models[0](_batch(generated.INPUT_DTYPES))
    assert set(out) == set(generated.OUTPUTS)
    with warnings.catch_warnings(record=True) as got:  # the filter is scoped to the builds
        warnings.simplefilter("always")
        x = keras.Input((1,), name="a_b")
        keras.Model({"a b": x}, x)
    assert any("must match the names" in str(w.message) for w in got)


LIST_SPEC = {"features": [
    {"name": "tags", "kind": "string", "column": "tag/list", "shape": "list", "max_values": 3},
    {"name": "ids", "kind": "integer", "column": "id list", "shape": "list",
     "output_mode": "count"},
    {"name": "price", "kind": "numeric", "column": "price/usd"},
]}


@pytest.fixture(scope="module")
def analyzed_lists(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path_factory.mktemp("hostile_lists")
    pq.write_table(pa.table({
        "tag/list": pa.array([["a", "b"], ["b"], [], ["a", "c", "a"]], pa.list_(pa.string())),
        "id list": pa.array([[1, 2], [2, 2], [3], []], pa.list_(pa.int64())),
        "price/usd": [1.0, 2.0, 3.0, 4.0]}), str(root / "data.parquet"))
    (root / "spec.yaml").write_text(json.dumps(LIST_SPEC))
    out, generated = analyze_and_import(root, "data.parquet", "bp_generated_hostile_lists")
    return generated, layers_from_artifacts(out)


@pytest.mark.parametrize("side", ["generated", pytest.param("runtime", marks=pytest.mark.slow)])
def test_hostile_list_columns_export_and_serve(analyzed_lists, side, tmp_path):
    generated, pp = analyzed_lists
    module = generated if side == "generated" else pp
    names = generated.INPUT_NAMES if side == "generated" else pp.input_names
    specs = generated.OUTPUT_SPECS if side == "generated" else pp.output_specs
    assert names == generated.INPUT_NAMES == pp.input_names
    assert set(names) == {"tag/list", "id list", "price/usd"}
    assert all(_valid_signature_name(n) for n in names.values()), names
    model = module.build_inference_model(_trainer(specs))
    rows = {"tag/list": [["b", "a", ""], ["c", "", ""]],
            "id list": [[2, 2, 9], [1, -2**63, -2**63]], "price/usd": [[2.5], [4.0]]}
    batch = {"tag/list": np.array(rows["tag/list"], object),
             "id list": np.array(rows["id list"], np.int64),
             "price/usd": np.array(rows["price/usd"], np.float64)}
    want = np.asarray(model(batch))
    export_dir = str(tmp_path / "export")
    model.export(export_dir, verbose=False)
    client = textwrap.dedent("""
        import json, sys
        import tensorflow as tf
        names, rows = json.loads(sys.argv[2])
        fn = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
        spec = fn.structured_input_signature[1]
        (value,) = fn(**{names[c]: tf.constant(v, spec[names[c]].dtype)
                         for c, v in rows.items()}).values()
        print(json.dumps(value.numpy().tolist()))
    """)
    run = subprocess.run([sys.executable, "-c", client, export_dir, json.dumps([names, rows])],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.asarray(json.loads(run.stdout.strip().splitlines()[-1]), np.float32)
    np.testing.assert_array_equal(got, want)


def test_a_column_named_like_another_columns_input_name_is_refused_before_the_analysis(
        tmp_path):
    """Was refused only by generate, after the whole analysis (spec/layer_names.py)."""
    from beam_prep.errors import SpecError
    from beam_prep.input_names import input_name

    taken = input_name("price/usd")
    (tmp_path / "data.csv").write_text(f'"price/usd",{taken}\n1.0,2.0\n3.0,4.0\n')
    (tmp_path / "spec.yaml").write_text(json.dumps({"features": [
        {"name": "p", "kind": "numeric", "column": "price/usd"},
        {"name": "q", "kind": "numeric", "column": taken}]}))
    out = tmp_path / "artifacts"
    with pytest.raises(SpecError, match=rf"Feature 'q': its model input '{taken}' \(column "
                                        rf"'{taken}'\) collides with the model input of column "
                                        r"'price/usd' \(read by feature 'p'\)\. Fix: rename "
                                        "one of the columns"):
        analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input",
                     str(tmp_path / "data.csv"), "--output", str(out)])
    assert not out.exists()
