"""A full disk or a failed commit while a job writes its output: one line for what happened
and one for what the next run does, no Beam traceback; the data stays safe.

The failures are injected with monkeypatch (the local runner runs the steps in this
process): ENOSPC from the vocabulary writer (a disk filling up while the artifacts are
staged), or from the move of the ``vocab/`` files into place (a commit stopped part-way).
The real thing was checked by hand on a full tmpfs (``mount -t tmpfs -o size=64k``).
"""

from __future__ import annotations

import errno
import json
import logging
import os

import pytest

from beam_prep import cli
from beam_prep.io import filesystem
from beam_prep.io.commit import output


def _full_disk(monkeypatch) -> None:
    def write(self, body):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(filesystem.HashingWriter, "write", write)


def _failed_commit(monkeypatch) -> None:
    real = output.move_files

    def move_files(src, dst, relpaths):
        if any(p.startswith("vocab/") for p in relpaths):
            raise OSError(errno.ENOSPC, "No space left on device", dst + "/vocab")
        return real(src, dst, relpaths)
    monkeypatch.setattr(output, "move_files", move_files)


@pytest.fixture()
def data(tmp_path):
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"c": f"t{i % 7}", "x": float(i)}) + "\n" for i in range(50)))
    (tmp_path / "spec.yaml").write_text(
        "features:\n  - {name: c, kind: string}\n  - {name: x, kind: numeric}\n")
    return tmp_path


def _analyze(data, capsys, caplog, *extra: str) -> tuple[int, list[str], list[str]]:
    """Exit code, the warnings logged, and the lines printed to stderr (progress aside)."""
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        code = cli.main(["analyze", "--spec", str(data / "spec.yaml"), "--input",
                         str(data / "in.jsonl"), "--output", str(data / "out"),
                         "--no_report", *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RuntimeError" not in err, err
    # Beam's own ERROR record with the traceback is dropped for an OSError
    assert not [r for r in caplog.records if r.name == "apache_beam.runners.common"]
    return (code, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING],
            [x for x in err.splitlines() if not x.startswith("beam-prep analyze: 1/1")])


def test_full_disk_while_staging_is_one_line_each_and_the_next_run_cleans_up(
        data, capsys, caplog, monkeypatch):
    _full_disk(monkeypatch)
    code, logged, lines = _analyze(data, capsys, caplog)
    assert code == 1
    assert len(lines) == 1 and len(logged) == 1, (lines, logged)
    assert "failed before its commit" in logged[0] and "is unchanged" in logged[0]
    assert "removed by the next run" in logged[0]
    assert lines[0].startswith("beam-prep analyze: error: No space left on device (OSError, "
                               "errno 28) in step 'Analyze/")
    staged = [n for n in os.listdir(data / "out") if n.startswith("_staging-")]
    assert staged and not os.path.exists(data / "out" / "manifest.json")
    monkeypatch.undo()
    code, _, _ = _analyze(data, capsys, caplog, "--quiet")
    assert code == 0
    assert os.path.exists(data / "out" / "manifest.json")
    assert not [n for n in os.listdir(data / "out") if n.startswith("_staging-")]


def test_failed_commit_says_the_next_run_finishes_it_and_it_does(data, capsys, caplog,
                                                                   monkeypatch):
    _failed_commit(monkeypatch)
    code, logged, lines = _analyze(data, capsys, caplog)
    assert code == 1
    assert len(lines) == 1 and len(logged) == 1, (lines, logged)
    assert "failed while moving its finished output" in logged[0]
    assert "the next run into" in logged[0] and "finishes this commit first" in logged[0]
    assert "removed by the next run" not in logged[0]
    assert "No space left on device (OSError, errno 28)" in lines[0]
    assert not os.path.exists(data / "out" / "manifest.json")  # not a finished output yet
    monkeypatch.undo()
    # the next run finishes the interrupted commit first: the complete output is in place
    _, logged, _ = _analyze(data, capsys, caplog, "--quiet")
    assert any("finishing the interrupted commit" in x for x in logged)
    manifest = json.loads((data / "out" / "manifest.json").read_text())
    for entry in manifest["features"].values():
        for meta in entry.get("files", {}).values():
            assert os.path.getsize(data / "out" / meta["path"]) == meta["bytes"]
    assert not [n for n in os.listdir(data / "out") if n.startswith("_staging-")]
