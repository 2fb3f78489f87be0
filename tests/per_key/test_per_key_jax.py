"""Per-key layers in tf.data under the JAX Keras backend (subprocess), generated and twin."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.per_key import helpers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = """
features:
  - {name: z, kind: numeric, column: price, per_key: store}
  - {name: mm, kind: numeric, column: price, scaling: min_max, per_key: {expr: "str(sid)"}}
"""
RUN = """
import importlib.util, json, sys
import keras
from beam_prep.codegen.runtime import layers_from_artifacts
from tests.per_key.test_per_key_jax import encode
spec = importlib.util.spec_from_file_location("bp_per_key_jax", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("RESULT " + json.dumps({"backend": keras.backend.backend(),
    "generated": encode(module.make_dataset_fn()),
    "runtime": encode(layers_from_artifacts(sys.argv[2]).make_dataset_fn())}))
"""
KEYS = ["plain", "new\nline", "nul\x00byte", "unknown", "", "store_003", "[UNK]", "😀"]


def encode(fn) -> dict[str, list]:
    feats = {"store": tf.constant([[k] for k in KEYS]),
             "sid": tf.constant([[i % 8] for i in range(len(KEYS))], tf.int64),
             "price": tf.constant([[float(i) * 3.5 - 2] for i in range(len(KEYS))], tf.float64)}
    out: dict[str, list] = {}
    for batch in tf.data.Dataset.from_tensor_slices(feats).batch(3).map(fn):
        for key, value in batch.items():
            out.setdefault(key, []).extend(np.asarray(value).ravel().tolist())
    return out


@pytest.mark.slow  # default suite time; covered by the TF / single-device twins
def test_per_key_layers_on_jax(tmp_path):
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(helpers.make_rows(n=500, keys=20), path)
    out = helpers.run(tmp_path, SPEC, path)
    module_path = str(tmp_path / "pp.py")
    generate(out, module_path)
    expected = encode(import_module_from(module_path, "bp_per_key_tf").make_dataset_fn())
    proc = subprocess.run([sys.executable, "-c", RUN, module_path, out], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": ROOT})
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    got = json.loads(lines[-1][len("RESULT "):])
    assert got["backend"] == "jax"
    for which in ("generated", "runtime"):
        assert got[which] == expected, which
