"""Numeric `scaling`: z_score (default), min_max (TF Transform scale_to_0_1), none.

Oracle: TF Transform's scale_to_0_1 as its source defines it (tensorflow_transform/
mappers.py, _scale_by_min_max_internal): ``(x - min) / (max - min)`` with no clipping, and
``sigmoid(x)`` when ``min >= max`` (one distinct value or no data), computed here in numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

from beam_prep.codegen.plan import plan_from_artifacts
from beam_prep.io.contract.artifacts import Artifacts
from tests.codegen.artifact_fixtures import write_artifacts

SPEC = {"features": [
    {"name": "a", "kind": "numeric", "scaling": "min_max"},
    {"name": "b", "kind": "numeric", "scaling": "min_max", "num_buckets": 2},
    {"name": "c", "kind": "numeric", "scaling": "none"},
    {"name": "d", "kind": "numeric"},
]}
DATA = {"a": [2.0, 4.0, 10.0, None], "b": [3.0, 3.0, 3.0, 3.0], "c": [1.0, 2.0, 3.0, 4.0],
        "d": [1.0, 2.0, 3.0, 6.0]}
INPUTS = {"a": [[2.0], [10.0], [5.0], [12.0], [-2.0]], "b": [[3.0], [0.0], [-1.0], [4.0], [9.0]],
          "c": [[1.5], [-7.0], [0.0], [1e6], [2.0]], "d": [[1.0], [2.0], [3.0], [6.0], [0.0]]}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    return write_artifacts(str(tmp_path_factory.mktemp("scaling")), SPEC, DATA)


def test_plan_layers_per_scaling(artifacts):
    plan = {f.name: f for f in plan_from_artifacts(Artifacts(artifacts)).features}
    assert [(lp.cls, dict(lp.args)) for lp in plan["a"].outputs[0].layers] == [
        ("Normalization", {"mean": 2.0, "variance": 64.0})]
    assert [lp.cls for lp in plan["b"].outputs[0].layers] == ["Activation"]
    assert plan["c"].outputs[0].layers == () and plan["c"].outputs[0].stage == "data"
    assert "scaling" not in Artifacts(artifacts).spec.feature("d").to_dict()


def test_runtime_outputs_match_scale_to_0_1(artifacts):
    from beam_prep.codegen.runtime import layers_from_artifacts

    pp = layers_from_artifacts(artifacts).build_preprocessor()
    batch = {k: np.array(v, np.float32) for k, v in INPUTS.items()}
    out = {k: np.asarray(v).ravel() for k, v in pp(batch).items()}
    a = batch["a"].ravel().astype(np.float64)
    np.testing.assert_allclose(out["a"], (a - 2.0) / (10.0 - 2.0), rtol=1e-6)
    assert out["a"][3] == pytest.approx(1.25) and out["a"][4] == pytest.approx(-0.5)
    b = batch["b"].ravel().astype(np.float64)
    np.testing.assert_allclose(out["b"], 1 / (1 + np.exp(-b)), rtol=1e-6)
    np.testing.assert_array_equal(out["c"], batch["c"].ravel())
    d = np.array(DATA["d"])
    np.testing.assert_allclose(out["d"], (batch["d"].ravel() - d.mean()) / d.std(), rtol=1e-6)


def test_generated_module_equals_runtime(artifacts, tmp_path):
    from beam_prep.codegen.render import render_module
    from beam_prep.codegen.runtime import layers_from_artifacts
    from tests.codegen.conftest import import_module_from

    path = tmp_path / "scaling_module.py"
    path.write_text(render_module(Artifacts(artifacts)), encoding="utf-8")
    generated = import_module_from(str(path), "bp_generated_scaling")
    batch = {k: np.array(v, np.float32) for k, v in INPUTS.items()}
    got = generated.build_preprocessor(artifacts)(batch)
    twin = layers_from_artifacts(artifacts).build_preprocessor()(batch)
    for key in twin:
        np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(twin[key]), err_msg=key)
