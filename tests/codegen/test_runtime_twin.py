"""The runtime twin runs the module ``beam-prep generate`` writes: same text, answers, errors.

``layers_from_artifacts(path)`` renders the module in memory and binds its functions to
``path``; these tests compare it with the module generated into a file and imported.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys

import pytest

tf = pytest.importorskip("tensorflow")

import beam_prep  # noqa: E402
from beam_prep.errors import ArtifactError  # noqa: E402
from beam_prep.io.contract.artifacts import canonical_json, manifest_fingerprint  # noqa: E402

CONSTANTS = {"fingerprint": "FINGERPRINT", "input_dtypes": "INPUT_DTYPES",
             "input_columns": "INPUT_COLUMNS", "input_names": "INPUT_NAMES",
             "outputs": "OUTPUTS", "output_specs": "OUTPUT_SPECS"}
OPTIONAL = {"list_inputs": ("LIST_INPUTS", ()), "ragged_outputs": ("RAGGED_OUTPUTS", ()),
            "default_values": ("DEFAULT_VALUES", {}), "imputed": ("IMPUTED", {}),
            "missing_indicators": ("MISSING_INDICATORS", {})}


def test_the_twin_runs_the_text_generate_writes(generated, all_kinds_artifacts) -> None:
    twin = beam_prep.layers_from_artifacts(all_kinds_artifacts)
    with open(generated.__file__, encoding="utf-8") as f:
        assert twin.source == f.read()
    # Executed in memory: no module registered, yet its source is there for AutoGraph.
    assert twin.module.__name__ not in sys.modules
    assert inspect.getsource(twin.module.raw_columns) == inspect.getsource(generated.raw_columns)
    for alias, constant in CONSTANTS.items():
        assert getattr(twin, alias) == getattr(generated, constant), alias
        assert getattr(twin, alias) is getattr(twin.module, constant), alias
    for alias, (constant, empty) in OPTIONAL.items():
        assert getattr(twin, alias) == getattr(generated, constant, empty), alias


@pytest.mark.parametrize("call,stage", [("build_preprocessor", "bogus"),
                                        ("make_dataset_fn", "model")])
def test_twin_and_module_refuse_a_stage_alike(generated, all_kinds_artifacts, call: str,
                                              stage: str) -> None:
    twin = beam_prep.layers_from_artifacts(all_kinds_artifacts)
    with pytest.raises(ValueError, match="`stage` must be") as want:
        getattr(generated, call)(all_kinds_artifacts, stage=stage)
    with pytest.raises(ValueError) as got:
        getattr(twin, call)(stage=stage)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_a_changed_directory_fails_as_in_the_module(generated, all_kinds_artifacts,
                                                     tmp_path) -> None:
    copy = str(tmp_path / "copy")
    shutil.copytree(all_kinds_artifacts, copy)
    twin = beam_prep.layers_from_artifacts(copy)
    path = os.path.join(copy, "manifest.json")
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["features"]["age"]["stats"]["mean"] += 1.0  # another analysis, re-fingerprinted
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(path, "wb") as f:
        f.write(canonical_json(manifest))
    with pytest.raises(generated.ArtifactMismatchError, match="was generated from") as want:
        generated.build_preprocessor(copy)
    for build in (twin.build_preprocessor, twin.build_layers, twin.make_dataset_fn,
                  lambda: twin.build_feature_layers("age")):
        with pytest.raises(ArtifactError) as got:
            build()
        assert isinstance(got.value, twin.module.ArtifactMismatchError)
        assert str(got.value) == str(want.value)


def test_verify_checks_every_file_when_the_twin_is_made(all_kinds_artifacts, tmp_path) -> None:
    copy = str(tmp_path / "copy")
    shutil.copytree(all_kinds_artifacts, copy)
    vocabulary = os.path.join(copy, "vocab", "country.txt")
    with open(vocabulary, "rb") as f:
        data = f.read()
    with open(vocabulary, "wb") as f:  # same size, another content
        f.write(data[:-2] + (b"Z" if data[-2:-1] != b"Z" else b"Y") + data[-1:])
    with pytest.raises(ArtifactError, match="sha256"):
        beam_prep.layers_from_artifacts(copy)
    assert beam_prep.layers_from_artifacts(copy, verify=False).build_layers()
