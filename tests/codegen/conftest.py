"""Shared fixtures: a small artifact directory covering every feature kind."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

import pytest

from tests.codegen.artifact_fixtures import write_artifacts

# Every kind and output mode family; one empty vocabulary (min_count too high).
ALL_KINDS_SPEC: dict[str, Any] = {"features": [
    {"name": "country", "kind": "string", "num_oov_indices": 2},
    {"name": "device", "kind": "string", "output_mode": "one_hot", "column": "device_type"},
    {"name": "rare", "kind": "string", "min_count": 100},
    {"name": "store_id", "kind": "integer", "output_mode": "multi_hot"},
    {"name": "title", "kind": "text", "ngrams": 2, "output_sequence_length": 6},
    {"name": "review", "kind": "text", "output_mode": "tf_idf"},
    {"name": "price", "kind": "numeric", "num_buckets": 4},
    {"name": "age", "kind": "numeric"},
    {"name": "user_id", "kind": "hashed", "num_bins": 16, "salt": 7,
     "output_mode": "multi_hot"},
    {"name": "session", "kind": "hashed", "num_bins": 8, "dtype": "integer"},
]}

ALL_KINDS_DATA: dict[str, list[Any]] = {
    "country": ["US", "DE", "US", "FR", "DE", "US", None, "JP"],
    "device_type": ["phone", "desktop", "phone", "tablet", "phone", "desktop", "phone", "tv"],
    "rare": ["x", "y", "x", None, "z", "x", "y", "x"],
    "store_id": [10, 20, 20, 10, 30, 0, 20, 5],
    "title": ["Red shoes, size 9", "Blue shoes!", "red hat", "Hat & scarf",
              "blue RED shoes", None, "scarf", "size 10 shoes"],
    "review": ["Great shoes", "bad fit, great price", "great great", "fit is ok",
               "price too high", "ok", None, "great fit"],
    "price": [10.0, 12.5, 7.0, float("nan"), 30.0, 15.0, None, 9.5],
    "age": [31.0, 45.0, 22.0, 38.0, None, 51.0, 27.0, 33.0],
    "user_id": ["u1", "u2", "u3", "u1", "u4", "u5", "u2", "u6"],
    "session": [1, 2, 3, 4, 5, 6, 7, 8],
}
PRICE_BOUNDARIES = [9.5, 12.5, 15.0]

# Every kind that has a default_value, with missing cells (None) in the data; `city`,
# `age` and `user_id` have none and must behave as in the all-kinds module.
DEFAULTS_SPEC: dict[str, Any] = {"features": [
    {"name": "country", "kind": "string", "num_oov_indices": 2, "default_value": "US"},
    {"name": "device", "kind": "string", "output_mode": "one_hot", "column": "device_type",
     "default_value": "phone"},
    {"name": "rare", "kind": "string", "min_count": 100, "default_value": "zz"},
    {"name": "city", "kind": "string"},
    {"name": "store_id", "kind": "integer", "default_value": 99},
    {"name": "shelf", "kind": "integer", "output_mode": "multi_hot", "default_value": 0},
    {"name": "title", "kind": "text", "ngrams": 2, "output_sequence_length": 5,
     "default_value": "no title"},
    {"name": "review", "kind": "text", "output_mode": "tf_idf", "default_value": "none"},
    {"name": "price", "kind": "numeric", "num_buckets": 4, "default_value": 20.0},
    {"name": "age", "kind": "numeric"},
    {"name": "user_id", "kind": "hashed", "num_bins": 16, "salt": 7},
]}

DEFAULTS_DATA: dict[str, list[Any]] = {
    "country": ["US", "DE", None, "FR", "DE", None, "JP", "DE"],
    "device_type": ["tablet", None, "desktop", "phone", None, "desktop", "tv", "desktop"],
    "rare": ["x", None, "y", "x", "z", None, "x", "y"],
    "city": ["Paris", None, "Rome", "Paris", "Oslo", "Rome", "Paris", None],
    "store_id": [10, 20, None, 10, 30, None, 20, None],
    "shelf": [3, None, 3, 1, 2, 3, None, 1],
    "title": ["Red shoes", None, "red hat", "blue shoes", None, "hat", "scarf", "red scarf"],
    "review": ["great shoes", "bad fit", None, "great fit", None, "ok", None, "great"],
    "price": [10.0, None, 7.5, 12.0, float("nan"), 15.0, None, 30.0],
    "age": [31.0, 45.0, None, 38.0, 22.0, 51.0, 27.0, 33.0],
    "user_id": ["u1", "u2", "u3", "u1", "u4", "u5", "u2", "u6"],
}
DEFAULTS_PRICE_BOUNDARIES = [10.0, 15.0, 20.0]


# `impute` on every kind that has it, indicators on four kinds (one without a fill), and an
# impute with no observed value (`gone`: all missing, so no FillMissing).
IMPUTE_SPEC: dict[str, Any] = {"features": [
    {"name": "country", "kind": "string", "impute": "most_frequent", "missing_indicator": True,
     "num_oov_indices": 2},
    {"name": "store_id", "kind": "integer", "default_value": "most_frequent",
     "output_mode": "multi_hot", "missing_indicator": True},
    {"name": "title", "kind": "text", "missing_indicator": True},
    {"name": "price", "kind": "numeric", "impute": "mean", "missing_indicator": True,
     "num_buckets": 3},
    {"name": "age", "kind": "numeric", "default_value": "median", "scaling": "none"},
    {"name": "gone", "kind": "numeric", "impute": "mean"},
]}
IMPUTE_DATA: dict[str, list[Any]] = {
    "country": ["DE", None, "US", "FR", "DE", None, "US", "JP"],  # DE/US tie: "US" first
    "store_id": [10, 20, None, 10, 30, None, 20, 5],               # 10/20 tie: "20" first
    "title": ["Red shoes", None, "red hat", "blue shoes", None, "hat", "scarf", "red scarf"],
    "price": [10.0, None, 7.5, 12.0, float("nan"), 15.0, None, 30.0],
    "age": [31.0, 45.0, None, 38.0, 22.0, 51.0, 27.0, float("nan")],
    "gone": [None] * 8,
}


@pytest.fixture(scope="session")
def impute_artifacts(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("artifacts_impute"))
    return write_artifacts(path, IMPUTE_SPEC, IMPUTE_DATA, boundaries={"price": [10.0, 15.0]})


@pytest.fixture(scope="session")
def all_kinds_artifacts(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("artifacts_all_kinds"))
    return write_artifacts(path, ALL_KINDS_SPEC, ALL_KINDS_DATA,
                           boundaries={"price": PRICE_BOUNDARIES})


@pytest.fixture(scope="session")
def defaults_artifacts(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("artifacts_defaults"))
    return write_artifacts(path, DEFAULTS_SPEC, DEFAULTS_DATA,
                           boundaries={"price": DEFAULTS_PRICE_BOUNDARIES})


def import_module_from(path: str, name: str) -> ModuleType:
    """Imports a generated module from a file under a unique name."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def analyze_and_import(root: Any, data: str, name: str) -> tuple[str, ModuleType]:
    """Analyses ``root/<data>`` with ``root/spec.yaml`` into ``root/artifacts`` (the real
    pipeline), renders its module into ``root/preprocessing.py`` and imports it as ``name``."""
    from beam_prep.pipelines import analyze

    from beam_prep.codegen.render import render_module
    from beam_prep.io.contract.artifacts import Artifacts

    out = os.path.join(str(root), "artifacts")
    analyze.run(["--spec", os.path.join(str(root), "spec.yaml"), "--input",
                 os.path.join(str(root), data), "--output", out])
    module_path = os.path.join(str(root), "preprocessing.py")
    with open(module_path, "w", encoding="utf-8") as f:
        f.write(render_module(Artifacts(out)))
    return out, import_module_from(module_path, name)


@pytest.fixture(scope="session")
def generated(all_kinds_artifacts: str, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    from beam_prep.codegen.render import generate

    out = os.path.join(str(tmp_path_factory.mktemp("generated")), "preprocessing_all.py")
    generate(all_kinds_artifacts, out)
    return import_module_from(out, "bp_generated_all_kinds")
