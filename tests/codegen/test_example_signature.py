"""The exported inference model serves serialized tf.Examples (float32 numbers) as well.

``export_saved_model`` (generated module and runtime twin) writes the float64 tensor
signature ``serve`` / ``serving_default`` and ``serve_tf_examples``, which takes serialized
tf.Example protos, whose numbers are float32. A fresh process loads each export and scores the
same rows through both signatures; the scores must be equal to each other and to the
in-process model on the float64 tensors (the float32 values widened exactly).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import analyze_and_import, import_module_from  # noqa: E402

MISSING_INTEGER = -(2**63)
MISSING = {"string": "", "float64": float("nan"), "int64": MISSING_INTEGER}

# Rows of the all-kinds columns (tests/codegen/conftest.py); None = absent from the Example.
# Numbers have no exact float32 form (12.3, 44.1): the Example rounds them to float32.
ALL_KINDS_ROWS = [
    {"country": "US", "device_type": "phone", "rare": "x", "store_id": 20,
     "title": "red shoes", "review": "great fit", "price": 12.3, "age": 44.1,
     "user_id": "u1", "session": 3},
    {"country": None, "device_type": "tv", "rare": None, "store_id": 7,
     "title": "Blue hat", "review": None, "price": 31.7, "age": 19.9,
     "user_id": "u9", "session": None},
    {"country": "JP", "device_type": "tablet", "rare": "y", "store_id": None,
     "title": None, "review": "bad price", "price": 8.25, "age": 60.0,
     "user_id": "u2", "session": 8},
]
LIST_SPEC = """
features:
  - {name: tags, kind: string, shape: list, output_mode: multi_hot}
  - {name: ids, kind: integer, shape: list, max_values: 2}
  - {name: score, kind: numeric}
"""
LIST_DATA = [{"tags": ["a", "b"], "ids": [1, 2, 3], "score": 0.5},
             {"tags": ["b"], "ids": [2], "score": 1.5},
             {"tags": ["c", "a", "a"], "ids": [3, 1], "score": 2.25}]
LIST_ROWS = [{"tags": ["a", "c"], "ids": [3], "score": 1.1},
             {"tags": None, "ids": [1, 2, 2], "score": None},
             {"tags": ["zz"], "ids": None, "score": 0.3}]

CLIENT = """
import json, sys
import numpy as np
import tensorflow as tf

out = {}
for case in json.loads(sys.stdin.read()):
    loaded = tf.saved_model.load(case["export_dir"])
    examples = tf.constant([bytes.fromhex(e) for e in case["examples"]])
    from_examples = loaded.signatures["serve_tf_examples"](examples=examples)
    tensors = {name: tf.constant(value, dtype=case["dtypes"][name])
               for name, value in case["tensors"].items()}
    from_tensors = loaded.signatures["serving_default"](**tensors)
    out[case["export_dir"]] = [
        {k: v.numpy().tolist() for k, v in from_examples.items()},
        {k: v.numpy().tolist() for k, v in from_tensors.items()}]
print(json.dumps(out))
"""


def _trainer(encoded: dict) -> keras.Model:
    """A small model over every encoded output (all reach the score)."""
    parts = [keras.ops.cast(keras.ops.reshape(x, (-1, int(np.prod(x.shape[1:])))), "float32")
             for _, x in sorted(encoded.items())]
    x = keras.ops.concatenate(parts, axis=-1)
    dense = keras.layers.Dense(2, kernel_initializer=keras.initializers.RandomNormal(seed=3))
    return keras.Model(encoded, dense(x))


def _example(row: dict, dtypes: dict, columns: dict) -> bytes:
    feature = {}
    for name, column in columns.items():
        value = row[column]
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        dtype = dtypes[name]
        if dtype == "float64":
            feature[column] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        elif dtype == "int64":
            feature[column] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            feature[column] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[v.encode() for v in values]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _tensors(rows: list, dtypes: dict, columns: dict, lists: tuple) -> dict:
    """The float64 signature's inputs for ``rows``: numbers as the Example rounded them."""
    out = {}
    for name, column in columns.items():
        dtype = dtypes[name]

        def widen(v, dtype=dtype):
            return float(np.float32(v)) if dtype == "float64" else v

        if name in lists:
            width = max(len(r[column] or [None]) for r in rows)
            out[name] = [[widen(v) for v in (r[column] or [])]
                         + [MISSING[dtype]] * (width - len(r[column] or [])) for r in rows]
        else:
            out[name] = [[MISSING[dtype] if r[column] is None else widen(r[column])]
                         for r in rows]
    return out


def _case(api, inference, export_dir: str, rows: list) -> dict:
    dtypes, columns = dict(api.INPUT_DTYPES), dict(api.INPUT_COLUMNS)
    lists = tuple(getattr(api, "LIST_INPUTS", ()))
    names = dict(api.INPUT_NAMES)
    api.export_saved_model(inference, export_dir)
    tensors = _tensors(rows, dtypes, columns, lists)
    want = inference({n: tf.constant(v, dtype=dtypes[n]) for n, v in tensors.items()})
    return {"export_dir": export_dir,
            "examples": [_example(r, dtypes, columns).hex() for r in rows],
            "tensors": {names[columns[n]]: v for n, v in tensors.items()},
            "dtypes": {names[columns[n]]: dtypes[n] for n in tensors},
            "want": np.asarray(want).tolist()}


def test_tf_example_signature_scores_like_the_float64_one_in_a_fresh_process(
        all_kinds_artifacts, tmp_path):
    module_path = str(tmp_path / "preprocessing.py")
    generate(all_kinds_artifacts, module_path)
    pp = import_module_from(module_path, "bp_generated_example_signature")
    lists_root = tmp_path / "lists"
    lists_root.mkdir()
    (lists_root / "spec.yaml").write_text(LIST_SPEC, encoding="utf-8")
    (lists_root / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LIST_DATA),
                                        encoding="utf-8")
    _, pp_lists = analyze_and_import(lists_root, "d.jsonl", "bp_generated_example_lists")

    cases = []
    # The runtime twin runs this module's own source (tests/codegen/test_runtime_twin.py).
    for tag, api, rows in [("module", pp, ALL_KINDS_ROWS), ("lists", pp_lists, LIST_ROWS)]:
        inference = api.build_inference_model(_trainer(api.encoded_inputs()))
        cases.append(_case(api, inference, str(tmp_path / f"export_{tag}"), rows))

    run = subprocess.run([sys.executable, "-c", CLIENT], input=json.dumps(
        [{k: v for k, v in c.items() if k != "want"} for c in cases]),
        capture_output=True, text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 0, run.stderr[-3000:]
    served = json.loads(run.stdout.strip().splitlines()[-1])
    for case in cases:
        from_examples, from_tensors = served[case["export_dir"]]
        assert list(from_examples) == list(from_tensors) == ["output_0"]
        want = np.asarray(case["want"])
        assert want.shape == (3, 2) and np.isfinite(want[0]).all()
        np.testing.assert_array_equal(np.asarray(from_tensors["output_0"]), want)
        np.testing.assert_array_equal(np.asarray(from_examples["output_0"]), want)


def test_parse_examples_casts_float32_to_float64_and_fills_missing(generated):
    rows = ALL_KINDS_ROWS
    parsed = generated.parse_examples(tf.constant(
        [_example(r, generated.INPUT_DTYPES, generated.INPUT_COLUMNS) for r in rows]))
    assert parsed["price"].dtype == tf.float64 and parsed["price"].shape == (3, 1)
    np.testing.assert_array_equal(parsed["price"].numpy().ravel(),
                                  [float(np.float32(r["price"])) for r in rows])
    assert parsed["country"].numpy().ravel().tolist() == [b"US", b"", b"JP"]
    assert parsed["store_id"].numpy().ravel().tolist() == [20, 7, MISSING_INTEGER]
