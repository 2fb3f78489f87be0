"""Every read of an artifact file checks its sha256 (and size) against the manifest.

``beam-prep diff`` and ``beam-prep report`` (and every other reader) used to check only the
size of the files they read, so a file edited in place (same size) was read as if the analysis
had written it. The oracle is ``hashlib`` over the bytes on disk and the manifest's own entry.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil

import pytest

from beam_prep import cli
from beam_prep.errors import ArtifactError
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.io.contract.checked_stream import CheckedStream
from tests.codegen.artifact_fixtures import write_artifacts
from tests.diff.builders import analyze_rows, make_rows


def _meta(data: bytes) -> dict:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@pytest.mark.parametrize("block", [1, 3, 1 << 20, -1])
def test_an_intact_file_reads_through_in_any_block_size(block) -> None:
    data = "a\nb\n日本\n".encode()
    f = CheckedStream(io.BytesIO(data), "v.txt", _meta(data), "features.c.files.vocabulary")
    got = b""
    while chunk := f.read(block):
        got += chunk
        if block < 0:
            break
    assert got == data


@pytest.mark.parametrize(("on_disk", "words"), [
    (b"b\na\n", "does not match its sha256 in manifest.json "
                "(features.c.files.vocabulary.sha256)"),
    (b"a\n", "ended after 2 of the 4 bytes manifest.json records"),  # object-store truncation
    (b"a\nb\nc\n", "holds more than the 4 bytes"),
])
@pytest.mark.parametrize("block", [1, 1 << 20, -1])
def test_a_modified_stream_is_refused_naming_the_file(on_disk, words, block) -> None:
    f = CheckedStream(io.BytesIO(on_disk), "gs://b/v.txt", _meta(b"a\nb\n"),
                      "features.c.files.vocabulary")
    with pytest.raises(ArtifactError) as e:
        while f.read(block):
            pass
    assert str(e.value).startswith("gs://b/v.txt ") and words in str(e.value)
    assert "\n" not in str(e.value)


def _tamper_same_size(path: str) -> None:
    """Changes the last digit of the first line (a count), keeping size and JSON valid."""
    data = bytearray(open(path, "rb").read())
    end = data.index(b"\n")
    i = max(k for k in range(end) if chr(data[k]).isdigit())
    data[i] = ord("8") if data[i] == ord("9") else data[i] + 1
    with open(path, "wb") as f:
        f.write(data)


def test_a_swapped_vocabulary_is_refused_by_every_reader(tmp_path) -> None:
    out = write_artifacts(str(tmp_path / "a"), {"features": [{"name": "c", "kind": "string"}]},
                          {"c": ["aa", "bb", "aa"]})
    art = Artifacts(out)
    path = art.vocabulary_path("c")
    assert open(path, "rb").read() == b"aa\nbb\n"
    with open(path, "wb") as f:
        f.write(b"bb\naa\n")  # same size: only the sha256 tells
    with pytest.raises(ArtifactError, match=f"{path} does not match its sha256"):
        art.vocabulary("c")
    with pytest.raises(ArtifactError, match=f"{path} does not match its sha256"):
        Artifacts(out, verify=True)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("checked"))
    return analyze_rows(root, "old", make_rows(300, 1)).path


def _tampered_copy(analysed: str, tmp_path) -> tuple[str, str]:
    copy = str(tmp_path / "tampered")
    shutil.copytree(analysed, copy)
    manifest = json.load(open(os.path.join(copy, "manifest.json")))
    rel = manifest["features"]["country"]["files"]["counts"]["path"]
    path = os.path.join(copy, rel)
    _tamper_same_size(path)
    return copy, path


def test_diff_refuses_a_tampered_counts_file_in_one_line(analysed, tmp_path, capsys) -> None:
    copy, path = _tampered_copy(analysed, tmp_path)
    assert cli.main(["diff", analysed, analysed]) == 0
    capsys.readouterr()
    assert cli.main(["diff", analysed, copy]) == 1
    err = capsys.readouterr().err.strip()
    assert path in err and "does not match its sha256" in err
    assert "features.country.files.counts.sha256" in err and len(err.splitlines()) == 1


def test_report_refuses_a_tampered_counts_file_in_one_line(analysed, tmp_path, capsys) -> None:
    copy, path = _tampered_copy(analysed, tmp_path)
    html = str(tmp_path / "r.html")
    assert cli.main(["report", analysed, "--output", html]) == 0
    capsys.readouterr()
    assert cli.main(["report", copy, "--output", str(tmp_path / "t.html")]) == 1
    err = capsys.readouterr().err.strip()
    assert path in err and "does not match its sha256" in err and len(err.splitlines()) == 1
    assert not os.path.exists(tmp_path / "t.html")


@pytest.mark.parametrize("role", ["per_key", "target_encoding"])
def test_diff_refuses_a_tampered_per_key_or_target_file(role, tmp_path, capsys) -> None:
    rows = [{"k": f"s{i % 3}", "x": float(i % 7) + 0.25, "c": f"t{i % 4}", "u": i,
             "y": float(i % 2)} for i in range(60)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text(
        "features:\n  - {name: x, kind: numeric, per_key: k}\n"
        "  - {name: c, kind: string, target_encoding: {labels: y, fold_column: u, folds: 2}}\n")
    good = str(tmp_path / "good")
    cli_args = ["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                "--quiet"]
    from beam_prep.pipelines import analyze

    analyze.run([*cli_args, "--output", good])
    bad = str(tmp_path / "bad")
    shutil.copytree(good, bad)
    name = "x" if role == "per_key" else "c"
    manifest = json.load(open(os.path.join(bad, "manifest.json")))
    path = os.path.join(bad, manifest["features"][name]["files"][role]["path"])
    _tamper_same_size(path)
    assert cli.main(["diff", good, good]) == 0
    capsys.readouterr()
    assert cli.main(["diff", good, bad]) == 1
    err = capsys.readouterr().err.strip()
    assert path in err and f"features.{name}.files.{role}.sha256" in err, err
    assert len(err.splitlines()) == 1
