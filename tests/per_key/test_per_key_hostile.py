"""Hostile per-key files and manifests: every reader refuses them with one clear line."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable

import pytest

from beam_prep import cli
from beam_prep.errors import ArtifactError
from tests.io.contract.test_hostile_manifest import _file_meta, _write_manifest
from tests.per_key import helpers

SPEC = "features:\n  - {name: price, kind: numeric, per_key: store}\n"
REL = "per_key/price.jsonl"


def _lines(transform: Callable[[list[bytes]], list[bytes]]) -> Callable[[str, dict], None]:
    """Rewrites the per-key file and records its new size and sha256 (refingerprinted)."""
    def apply(art: str, m: dict) -> None:
        path = os.path.join(art, REL)
        lines = open(path, "rb").read().split(b"\n")[:-1]
        with open(path, "wb") as f:
            f.write(b"".join(line + b"\n" for line in transform(lines)))
        m["features"]["price"]["files"]["per_key"] = _file_meta(art, REL)
        _write_manifest(art, m)
    return apply


def _manifest(edit: Callable[[dict], None]) -> Callable[[str, dict], None]:
    def apply(art: str, m: dict) -> None:
        edit(m)
        _write_manifest(art, m)
    return apply


def _swap(lines):
    return [lines[1], lines[0], *lines[2:]]


CASES = {
    "not JSON": _lines(lambda ls: [b"{oops", *ls[1:]]),
    "keys out of order": _lines(_swap),
    "key twice": _lines(lambda ls: [ls[0], ls[0], *ls[2:]]),
    "count 0": _lines(lambda ls: [b'["a",0,1.0,0.0,1.0,1.0]', *ls[1:]]),
    "NaN mean": _lines(lambda ls: [b'["\\u0000",1,NaN,0.0,1.0,1.0]', *ls[1:]]),
    "mean outside min..max": _lines(lambda ls: [b'["\\u0000",1,9.0,0.0,1.0,1.0]', *ls[1:]]),
    "empty key": _lines(lambda ls: [b'["",1,1.0,0.0,1.0,1.0]', *ls[1:]]),
    "key not a string": _lines(lambda ls: [b'[7,1,1.0,0.0,1.0,1.0]', *ls[1:]]),
    "lone surrogate key": _lines(lambda ls: [b'["\\ud800",1,1.0,0.0,1.0,1.0]', *ls[1:]]),
    "negative variance": _lines(lambda ls: [b'["\\u0000",1,1.0,-1.0,1.0,1.0]', *ls[1:]]),
    "line dropped (key_count)": _lines(lambda ls: ls[1:]),
    "deep nesting": _lines(lambda ls: [b"[" * 100000, *ls[1:]]),
    "file entry missing": _manifest(lambda m: m["features"]["price"]["files"].clear()),
    "key_count missing": _manifest(lambda m: m["features"]["price"]["stats"].pop("key_count")),
    "key_count a string": _manifest(
        lambda m: m["features"]["price"]["stats"].__setitem__("key_count", "12")),
    "path outside": _manifest(lambda m: m["features"]["price"]["files"]["per_key"]
                              .__setitem__("path", "../escape.jsonl")),
}


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("valid")
    path = str(tmp / "rows.jsonl")
    helpers.write_jsonl(helpers.make_rows(n=600, keys=20), path)
    return helpers.run(tmp, SPEC, path)


@pytest.fixture(params=sorted(CASES))
def hostile(request, valid, tmp_path) -> str:
    art = str(tmp_path / "hostile")
    shutil.copytree(valid, art)
    with open(os.path.join(art, "manifest.json"), "rb") as f:
        manifest = json.loads(f.read())
    CASES[request.param](art, manifest)
    return art


def _one_line(argv, capsys) -> str:
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 1, err[-2000:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-2000:]
    return err


def test_layers_transform_report_and_diff_refuse(hostile, valid, tmp_path, capsys) -> None:
    from beam_prep import layers_from_artifacts
    from beam_prep.transform.layers import BatchEncoder

    with pytest.raises(ArtifactError) as info:
        layers_from_artifacts(hostile).build_layers()
    assert "\n" not in str(info.value)
    with pytest.raises(ArtifactError):
        BatchEncoder(hostile)
    _one_line(["report", hostile, "--output", str(tmp_path / "r.html")], capsys)
    _one_line(["diff", valid, hostile], capsys)


def test_valid_directory_reads(valid, tmp_path) -> None:
    from beam_prep import layers_from_artifacts

    assert layers_from_artifacts(valid).build_layers()
    assert cli.main(["report", valid, "--output", str(tmp_path / "r.html")]) == 0
    assert cli.main(["diff", valid, valid]) == 0


@pytest.mark.parametrize("case", ["not JSON", "key not a string", "NaN mean", "key twice"])
def test_generated_module_refuses_a_bad_per_key_file(case, valid, tmp_path) -> None:
    pytest.importorskip("tensorflow")
    from beam_prep.codegen.render import generate
    from tests.codegen.conftest import import_module_from

    art = str(tmp_path / "hostile")
    shutil.copytree(valid, art)
    with open(os.path.join(art, "manifest.json"), "rb") as f:
        manifest = json.loads(f.read())
    CASES[case](art, manifest)
    module_path = str(tmp_path / "pp.py")
    generate(art, module_path)
    pp = import_module_from(module_path, f"bp_hostile_{abs(hash(case))}")
    with pytest.raises(pp.ArtifactMismatchError, match=r"line [12] is not \[key"):
        pp.build_layers(art)


@pytest.mark.parametrize("rel", [REL, "per_key/price.buckets.jsonl"])
def test_generated_module_refuses_a_per_key_file_changed_after_generate(rel, tmp_path) -> None:
    """The manifest is left alone (its fingerprint still matches the module): the file's
    own size and sha256, which the module carries, catch a line removed."""
    pytest.importorskip("tensorflow")
    from beam_prep.codegen.render import generate
    from tests.codegen.conftest import import_module_from

    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(helpers.make_rows(n=600, keys=20), path)
    art = helpers.run(tmp_path, SPEC.replace("per_key: store}", "per_key: store, "
                                             "num_buckets: 4}"), path)
    module_path = str(tmp_path / "pp.py")
    generate(art, module_path)
    pp = import_module_from(module_path, f"bp_changed_{abs(hash(rel))}")
    assert pp.build_layers(art)  # as analysed: reads
    file = os.path.join(art, rel)
    lines = open(file, "rb").read().split(b"\n")
    assert len(lines) > 3
    with open(file, "wb") as f:
        f.write(b"\n".join(lines[1:]))  # the first key's line removed
    with pytest.raises(pp.ArtifactMismatchError, match="does not match the checksum"):
        pp.build_layers(art)
