"""The shared output policy (beam_prep.io.commit.output) on local disk, and through both jobs.

Expected folder contents are written out by hand from what each test puts in the folder.
The object-store twin of these tests is tests/io/commit/test_output_gcs.py.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys

import pytest

from beam_prep.errors import ArtifactError
from beam_prep.io.commit import output
from beam_prep.io.commit.output import OutputPolicy, OutputRun

POLICY = OutputPolicy(job="demo", signatures=(("manifest.json",),),
                      owned=("manifest.json", "vocab/**", "rejected/**"), last="manifest.json")


def _tree(root) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root).replace(os.sep, "/")] = open(p, "rb").read()
    return out


def _put(root, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_globs_of_owned_paths():
    elwc = OutputPolicy(job="x", signatures=(("stats.json",),), last="stats.json",
                        owned=("stats.json", "rejected/**", "*-?????-of-?????.tfrecord"))
    assert elwc.owns("train-00001-of-00004.tfrecord")
    assert elwc.owns("rejected/rejected.jsonl") and elwc.owns("rejected/a/b")
    assert not elwc.owns("my.tfrecord")
    assert not elwc.owns("sub/train-00001-of-00004.tfrecord")  # * stays within a name
    assert not elwc.owns("train-0001-of-00004.tfrecord")
    assert not elwc.owns("notes/stats.json")
    with pytest.raises(ArtifactError, match="`last` must match"):
        OutputPolicy(job="x", signatures=(("a",),), owned=("b",), last="a")


def test_listing_emptiness_and_delete_tree(tmp_path):
    root = tmp_path / "o"
    assert output.list_files(str(root)) == [] and output.is_empty(str(root))
    _put(root, {"a.txt": b"1", "d/e/f.txt": b"2"})
    (root / "empty").mkdir()
    assert output.list_files(str(root)) == ["a.txt", "d/e/f.txt"]
    assert output.list_entries(str(root)) == ["a.txt", "d/e/f.txt", "empty/"]
    assert not output.is_empty(str(root))
    output.delete_tree(str(root / "d"))
    assert output.list_entries(str(root)) == ["a.txt", "empty/"]
    (root / "a.txt").unlink()
    assert not output.is_empty(str(root))  # an empty subfolder is still content locally


def test_foreign_folder_is_refused_even_with_overwrite_and_left_intact(tmp_path):
    user = {"vocab/mine.txt": b"my words", "rejected/keep.jsonl": b"{}", "notes.md": b"hi"}
    _put(tmp_path, user)
    with pytest.raises(ArtifactError) as e:
        with OutputRun(str(tmp_path), POLICY, overwrite=True):
            pass
    msg = str(e.value)
    assert "no finished demo output (no manifest.json)" in msg
    assert "notes.md, rejected/keep.jsonl, vocab/mine.txt" in msg
    assert _tree(tmp_path) == user  # nothing deleted, lock released


def test_finished_output_needs_overwrite_then_only_owned_paths_are_replaced(tmp_path):
    _put(tmp_path, {"manifest.json": b"old", "vocab/a.txt": b"old a", "vocab/gone.txt": b"x",
                    "rejected/rejected.jsonl": b"old bad", "README.md": b"user notes"})
    with pytest.raises(ArtifactError, match="not empty: it holds a finished demo output.*"
                                            "--overwrite"):
        with OutputRun(str(tmp_path), POLICY):
            pass
    with OutputRun(str(tmp_path), POLICY, overwrite=True) as run:
        # Nothing of the old output is deleted while the new one is being written.
        assert _tree(tmp_path)["manifest.json"] == b"old"
        assert run.staging == str(tmp_path / f"_staging-{run.run_id}")
        _put(run.staging, {"vocab/a.txt": b"new a", "vocab/b.txt": b"new b",
                           "manifest.json": b"new"})
        assert run.commit()
    assert _tree(tmp_path) == {"manifest.json": b"new", "vocab/a.txt": b"new a",
                               "vocab/b.txt": b"new b", "README.md": b"user notes"}


def test_incomplete_staging_is_not_committed(tmp_path):
    _put(tmp_path, {"manifest.json": b"old", "vocab/a.txt": b"old a"})
    with OutputRun(str(tmp_path), POLICY, overwrite=True) as run:
        _put(run.staging, {"vocab/a.txt": b"new a"})  # no manifest: the job did not finish
        assert not run.commit()
    assert _tree(tmp_path) == {"manifest.json": b"old", "vocab/a.txt": b"old a"}


def test_failed_run_keeps_old_output_and_staging_which_next_run_removes(tmp_path):
    _put(tmp_path, {"manifest.json": b"old"})
    with pytest.raises(RuntimeError):
        with OutputRun(str(tmp_path), POLICY, overwrite=True, run_id="r1") as run:
            _put(run.staging, {"rejected/rejected.jsonl": b"why"})
            raise RuntimeError("pipeline failed")
    assert _tree(tmp_path) == {"manifest.json": b"old",
                               "_staging-r1/rejected/rejected.jsonl": b"why"}
    with OutputRun(str(tmp_path), POLICY, overwrite=True, run_id="r2") as run:
        assert not os.path.exists(tmp_path / "_staging-r1")
        _put(run.staging, {"manifest.json": b"new"})
        run.commit()
    assert _tree(tmp_path) == {"manifest.json": b"new"}


def test_lock_refuses_a_second_run_and_names_the_holder(tmp_path):
    with OutputRun(str(tmp_path), POLICY, run_id="first") as run:
        holder = json.loads((tmp_path / "_LOCK").read_text())
        assert holder["run_id"] == "first" and holder["pid"] == os.getpid()
        assert holder["host"] == socket.gethostname() and holder["started"]
        with pytest.raises(ArtifactError, match=f"locked by run first .*pid {os.getpid()}"):
            with OutputRun(str(tmp_path), POLICY):
                pass
        # The holder (this process) is alive on this host: --force_unlock is refused too.
        with pytest.raises(ArtifactError, match="--force_unlock refused.*still running"):
            with OutputRun(str(tmp_path), POLICY, force_unlock=True):
                pass
        _put(run.staging, {"manifest.json": b"m"})
        run.commit()
    assert _tree(tmp_path) == {"manifest.json": b"m"}  # released


def test_stale_lock_needs_force_unlock(tmp_path):
    stale = {"run_id": "dead", "host": socket.gethostname(), "pid": _dead_pid(),
             "started": "2020-01-01T00:00:00+00:00"}
    (tmp_path / "_LOCK").write_text(json.dumps(stale))
    with pytest.raises(ArtifactError, match="locked by run dead.*--force_unlock"):
        with OutputRun(str(tmp_path), POLICY):
            pass
    with OutputRun(str(tmp_path), POLICY, force_unlock=True, run_id="mine"):
        assert json.loads((tmp_path / "_LOCK").read_text())["run_id"] == "mine"
    assert not (tmp_path / "_LOCK").exists()


def test_lock_is_released_when_the_run_fails(tmp_path):
    with pytest.raises(ValueError):
        with OutputRun(str(tmp_path), POLICY):
            raise ValueError("boom")
    assert not (tmp_path / "_LOCK").exists()


def _try_lock(folder: str, run_id: str, barrier, results) -> None:
    barrier.wait()
    try:
        output.acquire_lock(folder, run_id)
        results.put(run_id)
    except ArtifactError:
        results.put(None)


def test_racing_processes_get_exactly_one_lock(tmp_path):
    ctx = multiprocessing.get_context("fork")
    n = 6
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_try_lock, args=(str(tmp_path), f"r{i}", barrier, results))
             for i in range(n)]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    winners = [g for g in got if g]
    assert len(winners) == 1
    assert json.loads((tmp_path / "_LOCK").read_text())["run_id"] == winners[0]


# ----------------------------------------------------------------------- through the two jobs

LETOR = "".join(f"{q % 2} qid:{q // 3} 1:{q}.5 2:{q}\n" for q in range(9))  # 3 queries


def test_make_elwc_overwrite_never_deletes_a_foreign_folder(tmp_path):
    from beam_prep.pipelines import make_elwc

    (tmp_path / "in.txt").write_text(LETOR)
    out = tmp_path / "cwd"
    user = {"thesis.tex": b"years of work", "data/x.csv": b"1,2"}
    _put(out, user)
    with pytest.raises(ArtifactError, match="holds data/x.csv, thesis.tex"):
        make_elwc.run(["--input", str(tmp_path / "in.txt"), "--output", str(out),
                       "--overwrite"])
    assert _tree(out) == user


def test_analyze_overwrite_never_deletes_user_subfolders(tmp_path):
    from beam_prep.pipelines import analyze

    (tmp_path / "d.csv").write_text("c\na\nb\na\n")
    (tmp_path / "spec.yaml").write_text("features:\n  - {name: c, kind: string}\n")
    out = tmp_path / "out"
    user = {"vocab/words.txt": b"mine", "rejected/x": b"mine", "_tmp/y": b"mine"}
    _put(out, user)
    with pytest.raises(ArtifactError, match="no manifest.json"):
        analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(tmp_path / "d.csv"),
                     "--output", str(out), "--overwrite"])
    assert _tree(out) == user


def test_jobs_refuse_a_locked_output_and_accept_force_unlock_flag(tmp_path):
    from beam_prep.pipelines import analyze, make_elwc

    (tmp_path / "in.txt").write_text(LETOR)
    (tmp_path / "d.csv").write_text("c\na\n")
    (tmp_path / "spec.yaml").write_text("features:\n  - {name: c, kind: string}\n")
    out = tmp_path / "out"
    with OutputRun(str(out), POLICY, run_id="busy"):
        for job, args in ((make_elwc, ["--input", str(tmp_path / "in.txt")]),
                          (analyze, ["--spec", str(tmp_path / "spec.yaml"),
                                     "--input", str(tmp_path / "d.csv")])):
            with pytest.raises(ArtifactError, match="locked by run busy"):
                job.run(args + ["--output", str(out)])
            # The holder (this process) is alive: --force_unlock is refused.
            with pytest.raises(ArtifactError, match="--force_unlock refused"):
                job.run(args + ["--output", str(out), "--force_unlock"])
        assert json.loads((out / "_LOCK").read_text())["run_id"] == "busy"


def test_an_output_folder_that_cannot_be_created_is_an_artifact_error(tmp_path):
    """A path through a regular file (or a read-only mount) is an ArtifactError naming the
    folder and the fix, not a raw OSError traceback from the lock."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    folder = str(blocker / "out")
    with pytest.raises(ArtifactError, match=r"a_file/out' cannot be written: Not a directory"):
        with OutputRun(folder, POLICY):
            pass
    assert blocker.read_text() == "not a folder"
