"""The generated preprocessing module (and its runtime twin) in tf.data on JAX and torch.

Keras picks its backend once per process, so the module runs in a subprocess with
``KERAS_BACKEND`` set; the oracle is the same tf.data pipeline in this (TensorFlow) process,
where ``make_dataset_fn`` maps through the ``keras.Model`` of ``build_preprocessor``. Every
feature kind of ``ALL_KINDS_SPEC`` (lookups, one-hot/multi-hot, text int/tf-idf with its
Reshape, numeric Normalization + Discretization, hashing) is compared, and the
``DEFAULTS_SPEC`` and ``IMPUTE_SPEC`` modules (the module's own ``FillMissing`` and
``MissingIndicator`` layers, run through ``call``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from beam_prep.codegen.render import generate
from tests.codegen.conftest import (
    ALL_KINDS_DATA,
    DEFAULTS_DATA,
    IMPUTE_DATA,
    import_module_from,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RUN = """
import importlib.util, json, sys
import numpy as np
import keras
import tensorflow as tf
from beam_prep.codegen.runtime import layers_from_artifacts
from tests.codegen.test_other_backends import encode_all
spec = importlib.util.spec_from_file_location("bp_generated_backend", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("RESULT " + json.dumps({
    "backend": keras.backend.backend(),
    "generated": encode_all(module.make_dataset_fn(), sys.argv[3]),
    "runtime": encode_all(layers_from_artifacts(sys.argv[2]).make_dataset_fn(), sys.argv[3])}))
"""


def _column(name: str, rows: list) -> tf.Tensor:
    if name in ("store_id", "session", "shelf"):
        return tf.constant([[0 if v is None else v] for v in rows], tf.int64)
    if name in ("price", "age", "gone"):
        return tf.constant([[float("nan") if v is None else v] for v in rows], tf.float32)
    return tf.constant([["" if v is None else v] for v in rows], tf.string)


DATA = {"all_kinds": ALL_KINDS_DATA, "defaults": DEFAULTS_DATA, "impute": IMPUTE_DATA}


def encode_all(fn, data: str) -> dict[str, list]:
    """``fn`` mapped over ``DATA[data]`` in batches of 4; key -> rows (dense lists)."""
    feats = {k: _column(k, v) for k, v in DATA[data].items()}
    out: dict[str, list] = {}
    for batch in tf.data.Dataset.from_tensor_slices(feats).batch(4).map(fn):
        for key, value in batch.items():
            out.setdefault(key, []).extend(np.asarray(value).tolist())
    return out


# slow (default suite time): the generated module runs in tf.data on JAX in the default suite
# through test_numeric_scaling.py (test_generated_module_in_tf_data_on_jax), every kind on
# TensorFlow everywhere
@pytest.mark.parametrize("backend,data", [
    pytest.param("jax", "all_kinds", marks=pytest.mark.slow),
    pytest.param("jax", "defaults", marks=pytest.mark.slow),
    pytest.param("jax", "impute", marks=pytest.mark.slow),
    pytest.param("torch", "all_kinds", marks=pytest.mark.slow)])  # default suite time: jax twin
def test_generated_module_in_tf_data_on_another_backend(backend, data, request, tmp_path):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    artifacts = request.getfixturevalue(f"{data}_artifacts")
    module_path = str(tmp_path / "preprocessing.py")
    generate(artifacts, module_path)
    expected = encode_all(
        import_module_from(module_path, f"bp_generated_tf_{data}").make_dataset_fn(), data)
    proc = subprocess.run([sys.executable, "-c", RUN, module_path, artifacts, data],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": ROOT})
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    got = json.loads(lines[-1][len("RESULT "):])
    assert got["backend"] == backend
    for which in ("generated", "runtime"):
        assert sorted(got[which]) == sorted(expected)
        for key, rows in expected.items():
            np.testing.assert_allclose(np.asarray(got[which][key], dtype=float),
                                       np.asarray(rows, dtype=float), rtol=1e-6,
                                       err_msg=f"{which} {key}")
