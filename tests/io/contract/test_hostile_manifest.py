"""Hostile or malformed manifests and sidecars (issue 21 item 5).

Each case edits a valid artifact directory the way a broken copy or a hostile writer could
(the fingerprint recomputed, so only the validation can refuse it) and runs every reader:
``generate``, ``report`` and ``diff`` through the command line (exit 1, one line on stderr, no
traceback) and ``layers_from_artifacts`` (an ``ArtifactError``). A FIFO as a vocabulary file
must not hang: every run has a timeout. A huge line is a sparse file whose manifest records
its size and checksum, read with a lowered line bound.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from typing import Any

import pytest

from beam_prep import cli
from beam_prep.errors import ArtifactError
from beam_prep.io import line_bound
from tests.codegen.artifact_fixtures import write_artifacts

SPEC = {"features": [{"name": "country", "kind": "string"},
                     {"name": "words", "kind": "text", "output_mode": "tf_idf"},
                     {"name": "price", "kind": "numeric", "num_buckets": 3},
                     {"name": "top", "kind": "string", "column": "country",
                      "impute": "most_frequent"},
                     {"name": "filled", "kind": "numeric", "column": "price",
                      "impute": "mean"}]}
COLUMNS = {"country": ["US", "DE", "US", None, "FR"],
           "words": ["a b", "b c", "a", None, "c c"],
           "price": [1.0, 2.0, 4.0, None, 8.0]}
TIMEOUT = 20


def _hostile_json(obj: Any) -> bytes:
    """What a hostile writer can produce: NaN/Infinity allowed, any value kept."""
    return (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def _fingerprint(manifest: Any) -> str:
    body = {k: v for k, v in manifest.items() if k != "fingerprint"}
    return hashlib.sha256(_hostile_json(body)).hexdigest()


def _write_manifest(art: str, manifest: Any, *, refingerprint: bool = True,
                    raw: bytes | None = None) -> None:
    if refingerprint and isinstance(manifest, dict):
        manifest["fingerprint"] = _fingerprint(manifest)
    with open(os.path.join(art, "manifest.json"), "wb") as f:
        f.write(raw if raw is not None else _hostile_json(manifest))


def _file_meta(art: str, rel: str) -> dict[str, Any]:
    h = hashlib.sha256()
    with open(os.path.join(art, rel), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"path": rel, "sha256": h.hexdigest(), "bytes": os.path.getsize(os.path.join(art, rel))}


def _edit(path: list[Any], value: Any) -> Callable[[str, dict], None]:
    def apply(art: str, m: dict) -> None:
        node = m
        for key in path[:-1]:
            node = node[key]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        _write_manifest(art, m)
    return apply


_DELETE = object()


def _top_level_list(art: str, m: dict) -> None:
    _write_manifest(art, [m])


def _huge_number(art: str, m: dict) -> None:
    m["features"]["price"]["stats"]["mean"] = 1.0
    text = _hostile_json(m).replace(b'"mean": 1.0', b'"mean": 1' + b"0" * 400)
    _write_manifest(art, m, raw=text)


def _huge_float(art: str, m: dict) -> None:
    text = _hostile_json(m).replace(b'"vocabulary_size": 3', b'"vocabulary_size": 1e400', 1)
    _write_manifest(art, m, raw=text)


def _fifo_vocabulary(art: str, m: dict) -> None:
    rel = m["features"]["country"]["files"]["vocabulary"]["path"]
    os.remove(os.path.join(art, rel))
    os.mkfifo(os.path.join(art, rel))
    _write_manifest(art, m)


def _fifo_counts(art: str, m: dict) -> None:
    rel = m["features"]["country"]["files"]["counts"]["path"]
    os.remove(os.path.join(art, rel))
    os.mkfifo(os.path.join(art, rel))
    _write_manifest(art, m)


def _size_differs(art: str, m: dict) -> None:
    rel = m["features"]["country"]["files"]["counts"]["path"]
    with open(os.path.join(art, rel), "ab") as f:
        f.write(b'["ZZ", 1]\n')
    _write_manifest(art, m)  # the manifest still records the old size


HUGE_LINE = 9 << 20  # a 9 MiB line (> two 4 MiB blocks) against a 1 MiB bound (stands for 3 GB)


def _huge_line(art: str, m: dict) -> None:
    """A sparse counts file holding one line of NUL bytes; manifest updated to match it."""
    rel = m["features"]["country"]["files"]["counts"]["path"]
    with open(os.path.join(art, rel), "wb") as f:
        f.write(b'["')
        f.truncate(HUGE_LINE)
        f.seek(HUGE_LINE)
        f.write(b'", 1]\n')
    m["features"]["country"]["files"]["counts"] = _file_meta(art, rel)
    _write_manifest(art, m)


def _fifo_manifest(art: str, m: dict) -> None:
    os.remove(os.path.join(art, "manifest.json"))
    os.mkfifo(os.path.join(art, "manifest.json"))


def _huge_manifest(art: str, m: dict) -> None:
    """A sparse 300 MiB manifest.json: refused from its size, before it is read."""
    with open(os.path.join(art, "manifest.json"), "r+b") as f:
        f.truncate(300 << 20)


CASES: dict[str, Callable[[str, dict], None]] = {
    "FIFO manifest": _fifo_manifest,
    "manifest of 300 MiB": _huge_manifest,
    "missing features": _edit(["features"], _DELETE),
    "missing spec": _edit(["spec"], _DELETE),
    "missing stats": _edit(["features", "price", "stats"], _DELETE),
    "missing files": _edit(["features", "country", "files"], _DELETE),
    "missing feature entry": _edit(["features", "words"], _DELETE),
    "features is a list": _edit(["features"], ["country"]),
    "stats is a string": _edit(["features", "price", "stats"], "mean=3"),
    "count is a string": _edit(["features", "price", "stats", "count"], "4"),
    "size is a float": _edit(["features", "country", "stats", "vocabulary_size"], 3.5),
    "bytes is negative": _edit(["features", "country", "files", "counts", "bytes"], -1),
    "bytes is a bool": _edit(["features", "country", "files", "counts", "bytes"], True),
    "sha256 is a number": _edit(["features", "country", "files", "counts", "sha256"], 7),
    "mean is NaN": _edit(["features", "price", "stats", "mean"], float("nan")),
    "variance is Infinity": _edit(["features", "price", "stats", "variance"], float("inf")),
    "negative variance": _edit(["features", "price", "stats", "variance"], -1.0),
    "boundary is NaN": _edit(["features", "price", "stats", "boundaries"], [1.0, float("nan")]),
    "boundaries is a dict": _edit(["features", "price", "stats", "boundaries"], {"a": 1}),
    "quartiles decreasing": _edit(["features", "price", "stats", "quartiles"], [3.0, 1.0, 2.0]),
    "quartiles of two": _edit(["features", "price", "stats", "quartiles"], [1.0, 2.0]),
    "quartile is a string": _edit(["features", "price", "stats", "quartiles"], ["1", 2.0, 3.0]),
    "mean 10**400": _huge_number,
    "vocabulary_size 1e400": _huge_float,
    "count 10**30": _edit(["features", "price", "stats", "count"], 10**30),
    "top-level list": _top_level_list,
    "kind unknown": _edit(["features", "country", "kind"], "weird"),
    "kind differs from spec": _edit(["features", "country", "kind"], "integer"),
    "NUL in path": _edit(["features", "country", "files", "vocabulary", "path"],
                         "vocab/coun\x00try.txt"),
    "../ path": _edit(["features", "country", "files", "vocabulary", "path"],
                      "../outside.txt"),
    "absolute path": _edit(["features", "country", "files", "counts", "path"], "/etc/passwd"),
    "imputed_value missing": _edit(["features", "filled", "stats", "imputed_value"], _DELETE),
    "imputed_value is a string": _edit(["features", "filled", "stats", "imputed_value"], "3"),
    "imputed_value is not the mean": _edit(["features", "filled", "stats", "imputed_value"],
                                           1e300),
    "imputed string is a number": _edit(["features", "top", "stats", "imputed_value"], 7),
    "imputed string is empty": _edit(["features", "top", "stats", "imputed_value"], ""),
    "imputed_value without impute": _edit(["features", "price", "stats", "imputed_value"],
                                          [1]),
    "input is a list": _edit(["input"], [1]),
    "rows_read is a string": _edit(["input", "rows_read"], "many"),
    "patterns is a string": _edit(["input", "patterns"], "data.csv"),
    "FIFO vocabulary": _fifo_vocabulary,
    "FIFO counts": _fifo_counts,
    "size differs from the manifest": _size_differs,
    "huge line": _huge_line,
}


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("valid")
    return write_artifacts(str(root / "art"), SPEC, COLUMNS, boundaries={"price": [2.0, 4.0]})


@pytest.fixture(params=sorted(CASES))
def hostile(request, valid, tmp_path, monkeypatch) -> str:
    art = str(tmp_path / "hostile")
    shutil.copytree(valid, art)
    with open(os.path.join(art, "manifest.json"), "rb") as f:
        manifest = json.loads(f.read())
    CASES[request.param](art, manifest)
    monkeypatch.setattr(line_bound, "MAX_LINE_BYTES", 1 << 20, raising=False)
    return art


def _in_thread(fn: Callable[[], Any]) -> Any:
    """Runs ``fn`` with a timeout (a FIFO must not hang the reader): its result or exception."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT)
    if t.is_alive():
        pytest.fail(f"the reader hung for {TIMEOUT} s")
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _unblock_fifos(art: str) -> None:
    """Opens each FIFO for writing (non-blocking) so a reader stuck in open() returns."""
    for root, _, files in os.walk(art):
        for name in files:
            p = os.path.join(root, name)
            if os.path.exists(p) and not os.path.isfile(p):
                try:
                    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
                    os.close(fd)
                except OSError:
                    pass


def _cli_one_line(argv: list[str], capsys, art: str) -> str:
    try:
        code = _in_thread(lambda: cli.main(argv))
    finally:
        _unblock_fifos(art)
    captured = capsys.readouterr()
    assert code == 1, (code, captured.err[-2000:])
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err[-2000:]
    assert lines[0].startswith("beam-prep ") and "error:" in lines[0]
    return lines[0]


def test_generate(hostile, tmp_path, capsys) -> None:
    out = str(tmp_path / "pp.py")
    line = _cli_one_line(["generate", "--artifacts", hostile, "--output", out, "--quiet"],
                         capsys, hostile)
    assert "manifest.json" in line or "vocab/" in line
    assert not os.path.exists(out)


def test_report(hostile, tmp_path, capsys) -> None:
    out = str(tmp_path / "r.html")
    line = _cli_one_line(["report", hostile, "--output", out], capsys, hostile)
    assert "manifest.json" in line or "vocab/" in line
    assert not os.path.exists(out)


def test_diff_as_new(hostile, valid, capsys) -> None:
    _cli_one_line(["diff", valid, hostile], capsys, hostile)


def test_diff_as_old(hostile, valid, capsys) -> None:
    _cli_one_line(["diff", hostile, valid], capsys, hostile)


def test_layers_from_artifacts(hostile) -> None:
    from beam_prep import layers_from_artifacts

    try:
        with pytest.raises(ArtifactError) as info:
            _in_thread(lambda: layers_from_artifacts(hostile))
    finally:
        _unblock_fifos(hostile)
    assert "\n" not in str(info.value)


def test_valid_directory_still_reads(valid, tmp_path, capsys) -> None:
    """The checks refuse nothing the analysis writes (the same readers, exit 0)."""
    assert cli.main(["report", valid, "--output", str(tmp_path / "r.html")]) == 0
    assert cli.main(["diff", valid, valid]) == 0
    assert cli.main(["generate", "--artifacts", valid, "--output", str(tmp_path / "pp.py"),
                     "--quiet"]) == 0


def _elwc_fifo(out: str) -> None:
    os.remove(os.path.join(out, "stats.json"))
    os.mkfifo(os.path.join(out, "stats.json"))


def _elwc_json(text: bytes) -> Callable[[str], None]:
    def apply(out: str) -> None:
        with open(os.path.join(out, "stats.json"), "wb") as f:
            f.write(text)
    return apply


def _elwc_field(key: str, value: Any) -> Callable[[str], None]:
    def apply(out: str) -> None:
        path = os.path.join(out, "stats.json")
        with open(path, "rb") as f:
            st = json.loads(f.read())
        st[key] = value
        with open(path, "wb") as f:
            f.write(json.dumps(st).encode())
    return apply


def _elwc_huge_rejected_line(out: str) -> None:
    with open(os.path.join(out, "stats.json"), "rb") as f:
        rel = json.loads(f.read()).get("rejected_file") or "rejected/rejected.jsonl"
    with open(os.path.join(out, rel), "wb") as f:
        f.truncate(HUGE_LINE)


ELWC_CASES: dict[str, Callable[[str], None]] = {
    "FIFO stats.json": _elwc_fifo,
    "stats.json is a list": _elwc_json(b"[1, 2]"),
    "stats.json has NaN": _elwc_json(b'{"lists": NaN}'),
    "stats.json not JSON": _elwc_json(b"{"),
    "lists is a string": _elwc_field("lists", "many"),
    "label_histogram is a list": _elwc_field("label_histogram", [1]),
    "huge rejected line": _elwc_huge_rejected_line,
}


@pytest.mark.parametrize("case", sorted(ELWC_CASES))
def test_report_of_a_hostile_elwc_folder(case, tmp_path, capsys, monkeypatch) -> None:
    from tests.report.builders import make_elwc_dir

    out = str(tmp_path / "elwc")
    os.makedirs(out)
    make_elwc_dir(out)
    ELWC_CASES[case](out)
    monkeypatch.setattr(line_bound, "MAX_LINE_BYTES", 1 << 20, raising=False)
    line = _cli_one_line(["report", out, "--output", str(tmp_path / "r.html")], capsys, out)
    assert out in line
