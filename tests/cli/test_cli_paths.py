"""Every verb x every path argument (missing, a folder, unreadable, empty): exit 1, one line.

Issue 21 item 8: a missing ``--spec`` was a raw FileNotFoundError traceback. The matrix runs
``beam_prep.cli.main`` in-process (the console script calls exactly it), so the suite stays
fast; one subprocess case checks the real script's stderr end to end.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from beam_prep import cli

SPEC = "features:\n  - {name: x, kind: numeric}\n"
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def _make(tmp_path, state: str, *, folder_expected: bool = False):
    """A path in ``state``: missing, folder (or a file where a folder is expected), unreadable,
    empty."""
    path = tmp_path / f"arg_{state}"
    if state == "missing":
        return str(path)
    if state == "folder":
        if folder_expected:  # a plain file where a folder is expected
            path.write_text("not a folder\n")
        else:
            path.mkdir()
        return str(path)
    if state == "empty":
        if folder_expected:
            path.mkdir()
        else:
            path.write_text("")
        return str(path)
    assert state == "unreadable"
    if folder_expected:
        path.mkdir()
        (path / "manifest.json").write_text("{}")
    else:
        path.write_text(SPEC)
    os.chmod(path, 0)
    return str(path)


def _fixtures(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("x\n1\n2\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    letor = tmp_path / "data.txt"
    letor.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    train = tmp_path / "train.yaml"
    train.write_text("data: {}\n")
    return {"data": str(data), "spec": str(spec), "letor": str(letor), "out": str(tmp_path / "o")}


# verb -> path argument -> (argv builder, the path is a folder)
CASES = {
    ("analyze", "--spec"): (lambda f, p: ["analyze", "--spec", p, "--input", f["data"],
                                          "--output", f["out"]], False),
    ("analyze", "--input"): (lambda f, p: ["analyze", "--spec", f["spec"], "--input", p,
                                           "--output", f["out"]], False),
    ("generate", "--artifacts"): (lambda f, p: ["generate", "--artifacts", p, "--output",
                                                f["out"] + ".py"], True),
    ("make-elwc", "--input"): (lambda f, p: ["make-elwc", "--input", p, "--output", f["out"]],
                               False),
    ("train", "--config"): (lambda f, p: ["train", "--config", p], False),
    ("report", "DIR"): (lambda f, p: ["report", p], True),
    ("diff", "OLD"): (lambda f, p: ["diff", p, p], True),
    ("cache", "--cache_dir"): (lambda f, p: ["cache", "prune", "--cache_dir", p,
                                             "--keep_runs", "1"], True),
}
STATES = ["missing", "folder", "unreadable", "empty"]
# Cases whose "empty" or "missing" is legal and does something (nothing to report as an error).
LEGAL = {("cache", "--cache_dir", "empty"), ("cache", "--cache_dir", "missing")}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("case", list(CASES), ids=lambda c: f"{c[0]}{c[1]}")
def test_a_bad_path_is_exit_1_and_one_line(tmp_path, capsys, case, state):
    if state == "unreadable" and ROOT:
        pytest.skip("root reads unreadable files")
    if (*case, state) in LEGAL:
        pytest.skip("legal: nothing to report")
    build, folder = CASES[case]
    argv = build(_fixtures(tmp_path), _make(tmp_path, state, folder_expected=folder))
    try:
        code = cli.main(argv)
    finally:
        for p in tmp_path.iterdir():
            os.chmod(p, 0o755)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1, err
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"beam-prep {case[0]}: error: "), err


def test_the_console_script_prints_one_line_for_a_missing_spec(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "beam-prep")
    data = tmp_path / "d.csv"
    data.write_text("x\n1\n")
    proc = subprocess.run([script, "analyze", "--spec", str(tmp_path / "nope.yaml"), "--input",
                           str(data), "--output", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "nope.yaml" in proc.stderr


def test_an_unreadable_spec_is_one_line_even_as_root(tmp_path, capsys, monkeypatch):
    """The chmod cases skip as root; a PermissionError from the filesystem is simulated."""
    from beam_prep.io import filesystem

    fixtures = _fixtures(tmp_path)
    real = filesystem.open_read

    def forbidden(path):
        if path == fixtures["spec"]:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(filesystem, "open_read", forbidden)
    code = cli.main(["analyze", "--spec", fixtures["spec"], "--input", fixtures["data"],
                     "--output", fixtures["out"]])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "Permission denied" in err and "spec.yaml" in err


# Output and side-file arguments: a file where a folder goes, a folder where a file goes.
OTHER = {
    "analyze --output a file": lambda f, t: ["analyze", "--spec", f["spec"], "--input",
                                             f["data"], "--output", t["file"]],
    "make-elwc --output a file": lambda f, t: ["make-elwc", "--input", f["letor"], "--output",
                                               t["file"]],
    "make-elwc --feature_names_file missing": lambda f, t: [
        "make-elwc", "--input", f["letor"], "--output", f["out"], "--feature_names_file",
        t["missing"]],
    "generate --output a folder": lambda f, t: ["generate", "--artifacts", t["artifacts"],
                                                "--output", t["folder"]],
    "report --output a folder": lambda f, t: ["report", t["artifacts"], "--output",
                                              t["folder"]],
    "analyze --summary_json a folder": lambda f, t: [
        "analyze", "--spec", t["missing"], "--input", f["data"], "--output", f["out"],
        "--summary_json", t["folder"]],
}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    from beam_prep.pipelines import analyze

    root = tmp_path_factory.mktemp("artifacts")
    (root / "d.csv").write_text("x\n1\n2\n")
    (root / "s.yaml").write_text(SPEC)
    analyze.run(["--spec", str(root / "s.yaml"), "--input", str(root / "d.csv"), "--output",
                 str(root / "art")])
    return str(root / "art")


@pytest.mark.parametrize("name", list(OTHER))
def test_a_wrong_kind_of_output_path_is_exit_1_and_one_line(tmp_path, capsys, artifacts, name):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "a_folder").mkdir()
    paths = {"file": str(tmp_path / "a_file"), "folder": str(tmp_path / "a_folder"),
             "missing": str(tmp_path / "nope"), "artifacts": artifacts}
    code = cli.main(OTHER[name](_fixtures(tmp_path), paths))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and "Traceback" not in err, err
    assert len(lines) == 1 and ": error: " in lines[0], err
    if name.endswith("--output a file"):
        assert "is a file, not a folder" in err
