"""FillMissing (runtime twin and generated module): public Keras API only, same behaviour.

Expected values are written by hand from the contract: missing is ``""`` for strings,
NaN for floats and the smallest int64 for integers; everything else passes through.
"""

from __future__ import annotations

import ast
import inspect
import os
from types import ModuleType

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from beam_prep.codegen import missing  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.io.contract.artifacts import Artifacts  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402

MISSING_INT = -(2**63)
NAN = float("nan")


@pytest.fixture(scope="module")
def generated_defaults(defaults_artifacts: str, tmp_path_factory) -> ModuleType:
    path = os.path.join(str(tmp_path_factory.mktemp("fill_missing")), "pp_fill.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_module(Artifacts(defaults_artifacts)))
    return import_module_from(path, "bp_generated_fill_missing")


def _private_attributes(tree: ast.AST) -> list[str]:
    """Attribute names with a leading underscore (dunders such as ``__call__`` excepted)."""
    return sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                   and node.attr.startswith("_")
                   and not (node.attr.startswith("__") and node.attr.endswith("__"))})


def test_no_private_attributes_in_runtime_or_generated_class(generated_defaults) -> None:
    runtime = ast.parse(inspect.getsource(missing.FillMissing))
    assert _private_attributes(runtime) == []
    with open(generated_defaults.__file__, encoding="utf-8") as f:
        module = ast.parse(f.read())
    (cls,) = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "FillMissing"]
    assert _private_attributes(cls) == []
    # Nowhere in the generated module is a Keras object's private attribute touched.
    for node in ast.walk(module):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            assert node.attr.startswith("__") or isinstance(node.value, ast.Name) and \
                node.value.id not in ("self", "keras", "tf"), ast.unparse(node)


# (default_value, input as a Python list, dtype, expected output as a list)
CASES = {
    "string": ("US", [[""], ["DE"], [" "]], tf.string, [[b"US"], [b"DE"], [b" "]]),
    "float": (2.5, [[NAN], [0.0], [-1.5]], tf.float32, [[2.5], [0.0], [-1.5]]),
    "int": (99, [[MISSING_INT], [0], [7]], tf.int64, [[99], [0], [7]]),
}


@pytest.mark.parametrize("which", ["runtime", "generated"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kind", ["tensor", "numpy", "list"])
def test_fills_every_input_kind(which: str, case: str, kind: str,
                                generated_defaults: ModuleType) -> None:
    cls = missing.FillMissing if which == "runtime" else generated_defaults.FillMissing
    default, rows, dtype, expected = CASES[case]
    if kind == "list" and case == "int":
        pytest.skip("a Python int list converts to int32, which cannot hold the marker")
    x = {"tensor": lambda: tf.constant(rows, dtype),
         "numpy": lambda: np.array(rows, dtype=dtype.as_numpy_dtype),
         "list": lambda: rows}[kind]()
    out = cls(default, name=f"{case}_fill_missing")(x)
    assert out.dtype == dtype and out.shape == (3, 1)
    assert out.numpy().tolist() == expected


@pytest.mark.parametrize("which", ["runtime", "generated"])
def test_symbolic_and_tf_data_keep_dtype(which: str, generated_defaults: ModuleType) -> None:
    cls = missing.FillMissing if which == "runtime" else generated_defaults.FillMissing
    for dtype, default, value in (("string", "US", ""), ("int64", 99, MISSING_INT),
                                  ("float32", 2.5, NAN)):
        inp = keras.Input(shape=(1,), dtype=dtype)
        layer = cls(default, name=f"sym_{dtype}")
        model = keras.Model(inp, layer(inp))
        assert model.outputs[0].dtype == dtype
        got = model(tf.constant([[value]], dtype)).numpy().tolist()
        want = [[default.encode() if dtype == "string" else default]]
        assert got == want
        ds = tf.data.Dataset.from_tensors(tf.constant([[value]], dtype)).map(layer)
        assert next(iter(ds)).numpy().tolist() == want
    restored = cls.from_config(cls("x", name="cfg").get_config())
    assert restored.default_value == "x" and restored.name == "cfg"
