"""`kind: hashed` with `cross: [a, b]`: exactly keras.layers.HashedCrossing (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

from beam_prep.errors import SpecError
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.spec import HashedFeature
from tests.codegen.artifact_fixtures import write_artifacts

SPEC = {"features": [
    {"name": "country", "kind": "string"},
    {"name": "pair", "kind": "hashed", "num_bins": 16, "cross": ["country", "device"]},
    {"name": "ids", "kind": "hashed", "num_bins": 7, "dtype": "integer",
     "cross": ["store", "shelf"], "output_mode": "one_hot"},
    {"name": "pair_counts", "kind": "hashed", "num_bins": 5, "cross": ["device", "country"],
     "output_mode": "count"},
]}
DATA = {"country": ["US", "DE", "FR"], "device": ["a", "b", "c"], "store": [1, 2, 3],
        "shelf": [4, 5, 6]}
BATCH = {"country": [["US"], ["DE"], [""], ["日本"], ["US"]],
         "device": [["phone"], ["tv"], ["tv"], ["phone"], [""]],
         "store": [[1], [2], [-5], [10**12], [0]], "shelf": [[4], [4], [7], [-1], [0]]}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    return write_artifacts(str(tmp_path_factory.mktemp("cross")), SPEC, DATA)


def _batch():
    return {k: np.array(v, np.int64 if k in ("store", "shelf") else object)
            for k, v in BATCH.items()}


def test_runtime_and_generated_equal_hashed_crossing(artifacts, tmp_path):
    import keras

    from beam_prep.codegen.render import render_module
    from beam_prep.codegen.runtime import layers_from_artifacts
    from tests.codegen.conftest import import_module_from

    batch = _batch()
    twin = layers_from_artifacts(artifacts)
    assert twin.input_dtypes == {"country": "string", "device": "string", "store": "int64",
                                 "shelf": "int64"}
    got = twin.build_preprocessor()(batch)
    pair = keras.layers.HashedCrossing(16)((batch["country"], batch["device"]))
    np.testing.assert_array_equal(np.asarray(got["pair"]), np.asarray(pair))
    ids = keras.layers.HashedCrossing(7, output_mode="one_hot")((batch["store"], batch["shelf"]))
    np.testing.assert_array_equal(np.asarray(got["ids"]), np.asarray(ids))
    swapped = keras.layers.HashedCrossing(5)((batch["device"], batch["country"]))
    expected = np.eye(5, dtype=np.float32)[np.asarray(swapped).ravel()]
    np.testing.assert_array_equal(np.asarray(got["pair_counts"]), expected)

    path = tmp_path / "cross_module.py"
    path.write_text(render_module(Artifacts(artifacts)), encoding="utf-8")
    generated = import_module_from(str(path), "bp_generated_cross")
    gen = generated.build_preprocessor(artifacts)(batch)
    for key in got:
        np.testing.assert_array_equal(np.asarray(gen[key]), np.asarray(got[key]), err_msg=key)


@pytest.mark.parametrize("fields, message", [
    ({"cross": ("a",)}, "a list of two distinct column names"),
    ({"cross": ("a", "b", "c")}, "HashedCrossing crosses exactly two inputs"),
    ({"cross": ("a", "a")}, "two distinct"),
    ({"cross": ("a", "b"), "salt": 3}, "`salt` must be null when `cross` is set"),
    ({"cross": ("a", "b"), "column": "x"}, "`column` must be null when `cross` is set"),
])
def test_bad_crosses_are_spec_errors(fields, message):
    with pytest.raises(SpecError, match=f"Feature 'h'.*{message}"):
        HashedFeature("h", num_bins=8, **fields).validate()
