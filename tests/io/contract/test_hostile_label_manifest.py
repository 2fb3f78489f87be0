"""Hostile label-aware manifests and MI sidecars: every reader refuses them in one line.

A valid directory made by the job (tests/label_artifacts.py) is edited (fingerprint and
file checksums recomputed, so only the validation can refuse it); ``generate``, ``report``
and ``diff`` must exit 1 with one ``beam-prep ... error:`` line naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from typing import Any

import pytest

from beam_prep import cli
from tests.label_artifacts import make_labeled_dir

MI = ["features", "city", "stats", "mutual_info"]
FILES = ["features", "city", "files"]


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def _save(art: str, m: dict) -> None:
    m["fingerprint"] = hashlib.sha256(
        _json({k: v for k, v in m.items() if k != "fingerprint"})).hexdigest()
    with open(os.path.join(art, "manifest.json"), "wb") as f:
        f.write(_json(m))


def _edit(path: list[Any], value: Any) -> Callable[[str, dict], None]:
    def apply(art: str, m: dict) -> None:
        node = m
        for key in path[:-1]:
            node = node[key]
        if value is None and path[-1] != "min_mutual_info":
            del node[path[-1]]
        else:
            node[path[-1]] = value
        _save(art, m)
    return apply


def _sidecar(body: bytes) -> Callable[[str, dict], None]:
    def apply(art: str, m: dict) -> None:
        meta = m["features"]["city"]["files"]["mutual_info"]
        with open(os.path.join(art, meta["path"]), "wb") as f:
            f.write(body)
        meta["sha256"], meta["bytes"] = hashlib.sha256(body).hexdigest(), len(body)
        _save(art, m)
    return apply


MANIFEST_CASES = {
    "mutual_info file missing": _edit([*FILES, "mutual_info"], None),
    "mutual_info stats missing": _edit(MI, None),
    "mutual_info is a list": _edit(MI, [1]),
    "adjusted is a string": _edit([*MI, "adjusted"], "yes"),
    "min_diff_from_avg negative": _edit([*MI, "min_diff_from_avg"], -2),
    "min_mutual_info a string": _edit([*MI, "min_mutual_info"], "high"),
    "rows negative": _edit([*MI, "rows"], -1),
    "label_column a number": _edit([*MI, "label_column"], 3),
    "label_rows key not a label": _edit([*MI, "label_rows"], {"x": 1, "1": 2}),
    "label_rows do not sum to rows": _edit([*MI, "label_rows"], {"0": 1, "1": 2}),
    "dropped_min_mutual_info missing": _edit([*MI, "dropped_min_mutual_info"], None),
    "mutual_info path outside": _edit([*FILES, "mutual_info", "path"], "../x.jsonl"),
}
SIDECAR_CASES = {
    "score is NaN": _sidecar(b'["c1", NaN, 3]\n'),
    "score is a string": _sidecar(b'["c1", "2.0", 3]\n'),
    "rows negative": _sidecar(b'["c1", 2.0, -3]\n'),
    "not JSON": _sidecar(b'c1 2.0 3\n'),
    "two fields": _sidecar(b'["c1", 2.0]\n'),
}


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> str:
    return make_labeled_dir(str(tmp_path_factory.mktemp("valid") / "art"))[0]


def _hostile(valid: str, tmp_path, case: Callable[[str, dict], None]) -> str:
    art = str(tmp_path / "hostile")
    shutil.copytree(valid, art)
    with open(os.path.join(art, "manifest.json"), "rb") as f:
        case(art, json.loads(f.read()))
    return art


def _one_line(argv: list[str], capsys) -> str:
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 1, err[-2000:]
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("beam-prep ") and "error:" in lines[0], err
    return lines[0]


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_hostile_manifest_is_refused_by_every_reader(case, valid, tmp_path, capsys):
    art = _hostile(valid, tmp_path, MANIFEST_CASES[case])
    out = str(tmp_path / "pp.py")
    line = _one_line(["generate", "--artifacts", art, "--output", out, "--quiet"], capsys)
    assert "manifest.json" in line or "mutual_info" in line
    _one_line(["report", art, "--output", str(tmp_path / "r.html")], capsys)
    _one_line(["diff", valid, art], capsys)
    assert not os.path.exists(out)


@pytest.mark.parametrize("case", sorted(SIDECAR_CASES))
def test_hostile_mi_sidecar_is_refused_by_its_readers(case, valid, tmp_path, capsys):
    art = _hostile(valid, tmp_path, SIDECAR_CASES[case])
    line = _one_line(["report", art, "--output", str(tmp_path / "r.html")], capsys)
    assert "mutual_info.jsonl" in line
    _one_line(["diff", art, valid], capsys)


def test_valid_labeled_directory_reads(valid, tmp_path):
    assert cli.main(["report", valid, "--output", str(tmp_path / "r.html")]) == 0
    assert cli.main(["diff", valid, valid]) == 0
    assert cli.main(["generate", "--artifacts", valid, "--output", str(tmp_path / "pp.py"),
                     "--quiet"]) == 0
