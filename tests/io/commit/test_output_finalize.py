"""The in-pipeline end of a run (beam_prep.io.commit.output.Finalizer and
beam_prep.io.commit.output_finalize).

Expected folder contents are written out by hand from what each test stages. The job-level
twin (both jobs run the way the Flex Template launcher runs them, without the driver's commit)
is tests/dataflow/test_flex_finalize.py.
"""

from __future__ import annotations

import json
import logging
import os
import pickle

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from beam_prep.io.commit import output
from beam_prep.io.commit.output import COMMIT_JOURNAL, OutputPolicy, OutputRun
from beam_prep.io.commit.output_finalize import FinalizeOutput

# Shaped like make-elwc's policy: finished only with BOTH stats.json and spec.json.
POLICY = OutputPolicy(job="demo", signatures=(("stats.json", "spec.json"),),
                      owned=("stats.json", "spec.json", "train-*.rec", "rejected/**"),
                      last="stats.json")
OLD = {"stats.json": b"old stats", "spec.json": b"old spec", "train-0-of-3.rec": b"o0",
       "train-1-of-3.rec": b"o1", "train-2-of-3.rec": b"o2", "notes.md": b"user"}
NEW = {"train-0-of-2.rec": b"n0", "train-1-of-2.rec": b"n1", "spec.json": b"new spec",
       "rejected/r.jsonl": b"", "stats.json": b"new stats"}


def _tree(root) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root).replace(os.sep, "/")] = f.read()
    return out


def _put(root, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def test_finalize_commits_releases_and_a_retry_is_a_no_op(tmp_path):
    _put(tmp_path, OLD)
    with OutputRun(str(tmp_path), POLICY, overwrite=True, run_id="r1") as run:
        _put(run.staging, NEW)
        fin = run.finalizer()
        fin = pickle.loads(pickle.dumps(fin))  # it travels to a worker
        assert fin.finalize() == "committed"
        expected = {"notes.md": b"user", **NEW}
        assert _tree(tmp_path) == expected  # old shards gone, no _LOCK, no staging
        assert fin.finalize() == "nothing_staged"  # the runner retried the bundle
        assert _tree(tmp_path) == expected
        assert run.commit()  # the driver's commit after the pipeline: a no-op
    assert _tree(tmp_path) == expected


def test_a_commit_interrupted_midway_is_finished_by_the_retry(tmp_path, monkeypatch):
    _put(tmp_path, OLD)
    real_move = output.move_files

    def crash_before_last(src, dst, rels):
        if "stats.json" in rels:
            raise OSError("worker lost")
        real_move(src, dst, rels)

    with OutputRun(str(tmp_path), POLICY, overwrite=True, run_id="r1") as run:
        _put(run.staging, NEW)
        fin = run.finalizer()
        monkeypatch.setattr(output, "move_files", crash_before_last)
        with pytest.raises(OSError, match="worker lost"):
            fin.finalize()
        # Midway: old shards and stats deleted, new files moved except stats.json.
        assert "stats.json" not in _tree(tmp_path)
        assert json.loads(_tree(tmp_path)[f"_staging-r1/{COMMIT_JOURNAL}"])["files"] == sorted(NEW)
        monkeypatch.setattr(output, "move_files", real_move)
        assert fin.finalize() == "committed"  # the retry keeps what the first attempt moved
        assert output.read_lock(str(tmp_path)) is None
    assert _tree(tmp_path) == {"notes.md": b"user", **NEW}


def test_failed_run_leaves_folder_keeps_report_releases_lock_and_logs(tmp_path, caplog):
    _put(tmp_path, OLD)
    report = {"status": "failed", "error": "3 of 4 input lines were rejected."}
    with OutputRun(str(tmp_path), POLICY, overwrite=True, run_id="r1") as run:
        staged = {"stats.json": json.dumps(report).encode(), "rejected/r.jsonl": b"{}\n"}
        _put(run.staging, staged)
        fin = run.finalizer(report="stats.json")
        with caplog.at_level(logging.ERROR, logger="beam_prep.io.commit.output"):
            assert fin.finalize() == "failed"
            assert fin.finalize() == "failed"  # retried: same, harmless
        assert output.read_lock(str(tmp_path)) is None
        assert _tree(tmp_path) == {**OLD, **{f"_staging-r1/{k}": v for k, v in staged.items()}}
        (rec, _) = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert "3 of 4 input lines were rejected." in rec.getMessage()
        assert "_staging-r1" in rec.getMessage() and "left as it was" in rec.getMessage()
    # The driver's exit without commit removes the failed staging; the old output stays whole.
    assert _tree(tmp_path) == OLD


def test_finalize_refuses_when_the_lock_is_no_longer_this_runs(tmp_path, caplog):
    with OutputRun(str(tmp_path), POLICY, run_id="r1") as run:
        _put(run.staging, NEW)
        fin = run.finalizer()
        os.remove(tmp_path / "_LOCK")  # broken by --force_unlock, or a template run twice
        output.acquire_lock(str(tmp_path), "intruder")
        with caplog.at_level(logging.ERROR, logger="beam_prep.io.commit.output"):
            assert fin.finalize() == "refused"
        assert "no longer holds the lock" in caplog.text
        assert output.read_lock(str(tmp_path)).run_id == "intruder"
        assert sorted(_tree(tmp_path)) == ["_LOCK"] + [f"_staging-r1/{k}" for k in sorted(NEW)]
        output.release_lock(str(tmp_path), "intruder")


def test_hand_over_leaves_lock_and_staging_to_the_pipeline(tmp_path):
    with OutputRun(str(tmp_path), POLICY, run_id="r1") as run:
        fin = run.finalizer()
        run.hand_over()  # the launcher exits after submitting the job
    assert output.read_lock(str(tmp_path)).run_id == "r1"
    assert os.path.isdir(tmp_path / "_staging-r1")
    _put(tmp_path / "_staging-r1", NEW)  # the job runs later and writes its output
    assert fin.finalize() == "committed"
    assert _tree(tmp_path) == NEW


class _WriteLast(beam.DoFn):
    """Writes the staged files, spec.json and stats.json at the end (like WriteReport)."""

    def __init__(self, staging: str) -> None:
        self._staging = staging

    def process(self, _):
        _put(self._staging, NEW)
        yield {"status": "ok"}


def test_finalize_output_runs_after_the_last_output_in_a_pipeline(tmp_path):
    _put(tmp_path, OLD)
    with OutputRun(str(tmp_path), POLICY, overwrite=True, run_id="r1") as run:
        with beam.Pipeline(runner=FnApiRunner()) as p:
            last = p | "Go" >> beam.Create([None]) | "WriteAll" >> beam.ParDo(
                _WriteLast(run.staging))
            outcome = last | "FinalizeOutput" >> FinalizeOutput(run.finalizer())
            assert_that(outcome, equal_to(["committed"]), label="CheckOutcome")
        assert output.read_lock(str(tmp_path)) is None
        assert run.commit()
    assert _tree(tmp_path) == {"notes.md": b"user", **NEW}


def test_next_run_finishes_a_commit_whose_job_was_cancelled_midway(tmp_path, monkeypatch):
    _put(tmp_path, OLD)
    real_move = output.move_files

    def crash_before_last(src, dst, rels):
        if "stats.json" in rels:
            raise OSError("job cancelled")
        real_move(src, dst, rels)

    run = OutputRun(str(tmp_path), POLICY, overwrite=True, run_id="r1").__enter__()
    _put(run.staging, NEW)
    monkeypatch.setattr(output, "move_files", crash_before_last)
    with pytest.raises(OSError):
        run.finalizer().finalize()
    monkeypatch.setattr(output, "move_files", real_move)
    output.release_lock(str(tmp_path), "r1")  # what --force_unlock does for a dead job
    # No stats.json: not a finished output, which a new run would refuse even with
    # --overwrite; the next run first finishes the moves from the staged journal.
    with pytest.raises(output.ArtifactError, match="holds a finished demo output"):
        with OutputRun(str(tmp_path), POLICY, run_id="r2"):
            pass
    assert _tree(tmp_path) == {"notes.md": b"user", **NEW}
