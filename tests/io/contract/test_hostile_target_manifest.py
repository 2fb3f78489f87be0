"""Hostile target-encoding manifest entries: validation refuses each in one line.

A valid manifest made by the job is edited; :func:`validate_manifest` (run by every reader)
must refuse it with an ArtifactError naming the key.
"""

from __future__ import annotations

import copy
import json

import pytest
from beam_prep.pipelines import analyze

from beam_prep.errors import ArtifactError
from beam_prep.io.contract.manifest_check import validate_manifest
from beam_prep.spec import Spec

TE = ["features", "t", "stats", "target_encoding"]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("te")
    rows = [{"t": f"c{i % 4}", "u": i, "y": float(i % 3 == 0)} for i in range(40)]
    (tmp / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "s.yaml").write_text("features:\n  - {name: t, kind: string, target_encoding: "
                                "{labels: y, fold_column: u, folds: 3}}\n")
    analyze.run(["--spec", str(tmp / "s.yaml"), "--input", str(tmp / "d.jsonl"),
                 "--output", str(tmp / "out"), "--quiet"])
    return json.loads((tmp / "out" / "manifest.json").read_text())


def _set(m: dict, path: list, value) -> dict:
    m = copy.deepcopy(m)
    node = m
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return m


CASES = {
    "no stats": (TE, KeyError, "stats.target_encoding` is missing"),
    "no file": (["features", "t", "files", "target_encoding"], KeyError,
                "files.target_encoding` is missing"),
    "folds 1": ([*TE, "folds"], 1, "target_encoding.folds"),
    "folds bool": ([*TE, "folds"], True, "target_encoding.folds"),
    "negative smoothing": ([*TE, "smoothing"], -1.0, "target_encoding.smoothing"),
    "rows per fold short": ([*TE, "rows_per_fold"], [40], "rows_per_fold"),
    "rows per fold wrong sum": ([*TE, "rows_per_fold"], [1, 2, 3], "summing to rows=40"),
    "negative rows": ([*TE, "rows"], -1, "target_encoding.rows"),
    "string mean": ([*TE, "global_mean"], "0.5", "global_mean"),
    "oof means short": ([*TE, "out_of_fold_means"], [0.5], "out_of_fold_means"),
    "empty label column": ([*TE, "label_column"], "", "label_column"),
    "bad file sha": (["features", "t", "files", "target_encoding", "sha256"], "x" * 64,
                     "sha256"),
}


def test_the_job_manifest_is_valid(manifest):
    validate_manifest(manifest, "m.json", Spec.from_dict(manifest["spec"]))


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_entry_is_refused(manifest, case):
    path, value, message = CASES[case]
    bad = _set(manifest, path, value)
    with pytest.raises(ArtifactError, match=message.replace(".", r"\.")) as err:
        validate_manifest(bad, "m.json", Spec.from_dict(bad["spec"]))
    assert "\n" not in str(err.value)
