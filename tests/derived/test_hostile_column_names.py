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

from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.codegen.runtime import layers_from_artifacts  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402

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
    out = str(root / "artifacts")
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.csv"),
                 "--output", out])
    module_path = root / "preprocessing.py"
    module_path.write_text(render_module(Artifacts(out)), encoding="utf-8")
    generated = import_module_from(str(module_path), "bp_generated_hostile_columns")
    return out, generated, layers_from_artifacts(out)


def _trainer(output_specs: dict) -> keras.Model:
    inputs = {k: keras.Input(shape=shape[1:], dtype=dtype, name=k)
              for k, (dtype, shape) in output_specs.items()}
    parts = [keras.ops.cast(inputs[k], "float32") for k in sorted(inputs)]
    return keras.Model(inputs, keras.ops.concatenate(parts, axis=-1))


def _batch(dtypes: dict) -> dict:
    return {c: np.array([[ROW[c]]], object if dtypes[c] == "string" else dtypes[c])
            for c in COLUMNS}


@pytest.mark.parametrize("side", ["generated", "runtime"])
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
