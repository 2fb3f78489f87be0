"""No write of ours goes through a symlink (issue 21 item 4).

A symlink inside an output folder (``report.html``, ``vocab/``) could make ``beam-prep report``
or ``analyze --overwrite`` write or move files outside the folder. Every case here plants a
link to a file or folder *outside* the output and checks that the target is untouched and the
error names the link; the report is written atomically (a failed write leaves the old page).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from beam_prep import cli
from beam_prep.analyzers.pipeline import ARTIFACT_OUTPUT
from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit.output import OutputRun, check_folder, commit_staging, list_entries
from beam_prep.ranking.data.transforms import ELWC_OUTPUT
from tests.codegen.artifact_fixtures import write_artifacts
from tests.report.builders import make_elwc_dir

SPEC = {"features": [{"name": "country", "kind": "string"},
                     {"name": "price", "kind": "numeric"}]}


def _artifacts(root) -> str:
    return write_artifacts(str(root), SPEC, {"country": ["US", "DE", "US", None],
                                             "price": [1.0, 2.0, 4.0, None]})


def _outside(tmp_path) -> tuple[str, str]:
    """A folder outside every output with one file whose bytes must never change."""
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    secret = secret_dir / "secret.txt"
    secret.write_bytes(b"do not touch\n")
    return str(secret_dir), str(secret)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("make", ["analysis", "elwc"])
def test_report_refuses_a_symlinked_report_html(tmp_path, capsys, make) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if make == "analysis":
        _artifacts(out)
    else:
        make_elwc_dir(str(out))
    _, secret = _outside(tmp_path)
    os.symlink(secret, out / "report.html")
    assert cli.main(["report", str(out)]) == 1
    line = _one_error_line(capsys)
    assert "report.html" in line and "symlink" in line
    with open(secret, "rb") as f:
        assert f.read() == b"do not touch\n"
    assert os.path.islink(out / "report.html")
    assert not os.path.exists(out / "_LOCK")


def test_report_output_flag_refuses_a_symlink(tmp_path, capsys) -> None:
    art = _artifacts(tmp_path / "art")
    _, secret = _outside(tmp_path)
    link = tmp_path / "page.html"
    os.symlink(secret, link)
    assert cli.main(["report", art, "--output", str(link)]) == 1
    assert "page.html" in _one_error_line(capsys)
    with open(secret, "rb") as f:
        assert f.read() == b"do not touch\n"


def test_overwrite_refuses_a_symlinked_vocab_folder(tmp_path) -> None:
    """``analyze --overwrite`` over a finished output whose ``vocab/`` links outside."""
    out = tmp_path / "out"
    _artifacts(out)
    outside, secret = _outside(tmp_path)
    for name in os.listdir(out / "vocab"):
        os.rename(out / "vocab" / name, os.path.join(outside, name))
    os.rmdir(out / "vocab")
    os.symlink(outside, out / "vocab")
    before = sorted(os.listdir(outside))
    with pytest.raises(ArtifactError, match=r"vocab.*symlink"):
        with OutputRun(str(out), ARTIFACT_OUTPUT, overwrite=True):
            pass
    assert sorted(os.listdir(outside)) == before
    with open(secret, "rb") as f:
        assert f.read() == b"do not touch\n"
    assert not os.path.exists(out / "_LOCK")


def test_commit_refuses_a_symlink_planted_after_the_check(tmp_path) -> None:
    """The moves themselves check every destination folder first: nothing moves outside."""
    out = tmp_path / "out"
    outside, secret = _outside(tmp_path)
    with OutputRun(str(out), ARTIFACT_OUTPUT, overwrite=True) as run:
        _artifacts(run.staging)
        os.symlink(outside, out / "vocab")  # planted while the job ran
        with pytest.raises(ArtifactError, match=r"vocab.*symlink"):
            commit_staging(str(out), run.staging, ARTIFACT_OUTPUT)
        assert sorted(os.listdir(outside)) == ["secret.txt"]
        assert not os.path.exists(out / "manifest.json")


@pytest.mark.parametrize("policy", [ARTIFACT_OUTPUT, ELWC_OUTPUT], ids=["analyze", "elwc"])
def test_folder_holding_only_a_symlink_is_not_empty(tmp_path, policy) -> None:
    out = tmp_path / "out"
    out.mkdir()
    outside, _ = _outside(tmp_path)
    os.symlink(outside, out / "vocab")
    assert list_entries(str(out)) == ["vocab"]
    with pytest.raises(ArtifactError, match="vocab"):
        check_folder(str(out), policy, overwrite=True)


def test_elwc_output_with_a_symlinked_report_is_refused(tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    make_elwc_dir(str(out))
    _, secret = _outside(tmp_path)
    os.symlink(secret, out / "report.html")
    with pytest.raises(ArtifactError, match=r"report\.html.*symlink"):
        with OutputRun(str(out), ELWC_OUTPUT, overwrite=True):
            pass


def test_write_bytes_never_follows_a_symlink(tmp_path) -> None:
    _, secret = _outside(tmp_path)
    link = tmp_path / "x.json"
    os.symlink(secret, link)
    with pytest.raises(ArtifactError, match="x.json"):
        fs.write_bytes(str(link), b"new")
    with open(secret, "rb") as f:
        assert f.read() == b"do not touch\n"


def _limit_file_size() -> None:
    # Writes beyond 2 KiB fail with EFBIG (Python ignores SIGXFSZ): a failure mid-write.
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_report_is_written_atomically(tmp_path) -> None:
    """A write that fails half-way leaves the previous page whole, and no temporary file."""
    art = _artifacts(tmp_path / "art")
    old = b"<html>previous report</html>\n"
    with open(os.path.join(art, "report.html"), "wb") as f:
        f.write(old)
    before = sorted(os.listdir(art))
    proc = subprocess.run([sys.executable, "-m", "beam_prep.cli", "report", art],
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_file_size)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "report.html" in proc.stderr
    with open(os.path.join(art, "report.html"), "rb") as f:
        assert f.read() == old
    assert sorted(os.listdir(art)) == before


def test_report_of_a_locked_folder_is_refused(tmp_path, capsys) -> None:
    """A job holding the folder's lock: no report of a half-written folder, one line."""
    from beam_prep.io.commit.output_lock import acquire_lock, release_lock

    art = _artifacts(tmp_path / "art")
    acquire_lock(art, "job-run-1")
    try:
        assert cli.main(["report", art]) == 1
        line = _one_error_line(capsys)
        assert "job-run-1" in line and "locked" in line
        assert not os.path.exists(os.path.join(art, "report.html"))
    finally:
        release_lock(art, "job-run-1")
    assert cli.main(["report", art]) == 0
    assert os.path.exists(os.path.join(art, "report.html"))


def test_analyze_overwrite_cli_refuses_a_symlinked_vocab(tmp_path, capsys) -> None:
    """The real job: a finished output whose ``vocab/`` was replaced by a link outside."""
    data = tmp_path / "data.csv"
    data.write_text("country\nUS\nDE\nUS\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: country, kind: string}\n")
    out = tmp_path / "out"
    argv = ["analyze", "--spec", str(spec), "--input", str(data), "--output", str(out),
            "--quiet", "--no_report"]
    assert cli.main(argv) == 0
    outside, secret = _outside(tmp_path)
    for name in os.listdir(out / "vocab"):
        os.rename(out / "vocab" / name, os.path.join(outside, name))
    os.rmdir(out / "vocab")
    os.symlink(outside, out / "vocab")
    before = {n: open(os.path.join(outside, n), "rb").read() for n in os.listdir(outside)}
    data.write_text("country\nFR\nFR\nJP\n")  # a new run would write other bytes
    capsys.readouterr()
    code = cli.main([*argv, "--overwrite"])
    assert {n: open(os.path.join(outside, n), "rb").read()
            for n in os.listdir(outside)} == before  # nothing written through the link
    assert code == 1
    line = _one_error_line(capsys)
    assert str(out / "vocab") in line and "symlink" in line
    assert os.path.exists(out / "manifest.json")  # the old output is left as it was


def test_make_elwc_cli_refuses_a_symlinked_report_and_writes_it_atomically(tmp_path,
                                                                           capsys) -> None:
    """make-elwc's output goes through the same policy: its report is written by the same
    atomic writer, and a ``report.html`` link in a finished output is refused."""
    data = tmp_path / "a.txt"
    data.write_text("1 qid:A 1:1\n0 qid:A 1:2\n2 qid:B 2:3\n0 qid:B 1:4\n")
    out = tmp_path / "elwc"
    argv = ["make-elwc", "--input", str(data), "--output", str(out), "--query_id_feature",
            "qid", "--num_shards", "1", "--quiet"]
    assert cli.main(argv) == 0
    assert os.path.isfile(out / "report.html") and not os.path.islink(out / "report.html")
    assert not [n for n in os.listdir(out) if ".tmp-" in n]
    os.remove(out / "report.html")
    _, secret = _outside(tmp_path)
    os.symlink(secret, out / "report.html")
    capsys.readouterr()
    assert cli.main([*argv, "--overwrite"]) == 1
    line = _one_error_line(capsys)
    assert "report.html" in line and "symlink" in line
    with open(secret, "rb") as f:
        assert f.read() == b"do not touch\n"
