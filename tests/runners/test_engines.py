"""analyze, transform and make-elwc on Flink and Spark give the DirectRunner's bytes.

Each job runs on the in-process FnApiRunner (the reference) and on each engine through
Beam's portable runner, with SDK workers isolated as on separate hosts (see
tests/runners/engines.py): every file of the output (artifacts and manifest, transform
shards, ELWC shards, rejected rows and their per-reason counts) must be byte-identical, and no
other file may exist. The inputs cover every feature family (tests/runners/data.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from beam_prep.pipelines import analyze, make_elwc, transform

from tests.artifact_diff import assert_same_artifacts
from tests.runners import engines

pytestmark = pytest.mark.runners

ENGINES = ["flink", "spark"]
SPEC_FLAGS = ["--input_split_bytes", "20000"]


def _analyze(inputs, out: Path, *beam_args: str) -> Path:
    analyze.run(["--spec", str(inputs["spec"]), "--input", str(inputs["events"] / "*.csv"),
                 "--output", str(out), *SPEC_FLAGS, *beam_args])
    return out


def _transform(artifacts: Path, inputs, out: Path, *beam_args: str) -> Path:
    transform.run(["--artifacts", str(artifacts), "--input", str(inputs["events"] / "*.csv"),
                   "--output", str(out), "--input_split_bytes", "20000", *beam_args])
    return out


def _elwc(inputs, out: Path, *beam_args: str) -> Path:
    make_elwc.run(["--input", str(inputs["letor"]), "--output", str(out), "--num_shards", "3",
                   "--splits", "train:0.8,test:0.2", "--input_split_bytes", "4096",
                   "--max_bad_fraction", "0.05", *beam_args])
    return out


def _engine_args(engine, pool) -> list[str]:
    # Keep SDK workers between stages (Beam's default 0 starts a new worker per stage and
    # task on Spark: 5x slower here).
    return [*engine.beam_args(pool), "--environment_cache_millis=600000"]


@pytest.fixture(scope="module")
def reference(inputs):
    """The three jobs on the default local runner."""
    root = engines.shared_dir("direct-")
    art = _analyze(inputs, root / "artifacts")
    return {"artifacts": art, "encoded": _transform(art, inputs, root / "encoded"),
            "elwc": _elwc(inputs, root / "elwc")}


def test_inputs_cover_every_feature_family_and_reject_rows(reference):
    manifest = json.loads((reference["artifacts"] / "manifest.json").read_text())
    assert manifest["input"]["rejected_by_reason"] == {"unparsable_number": 3,
                                                       "wrong_column_count": 3}
    assert (reference["artifacts"] / "per_key").is_dir()
    stats = json.loads((reference["elwc"] / "stats.json").read_text())
    assert json.dumps(stats).count("rejected") >= 1


def test_workers_are_isolated(pool, tmp_path):
    """A file the launcher puts in /tmp is not visible to a worker (private mount namespace)."""
    marker = Path("/tmp") / f"beam_prep_isolation_{tmp_path.name}"
    marker.write_text("x")
    try:
        shim = pool.folder / "isolated-python"
        seen = subprocess.run([str(shim), "-c", f"import os; print(os.path.exists('{marker}'),"
                                                "os.getcwd())"],
                              capture_output=True, text=True, check=True).stdout.split()
        assert seen == ["False", "/tmp/worker"]
    finally:
        marker.unlink()


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_analyze_transform_and_make_elwc_give_the_direct_runners_bytes(engine, pool, inputs,
                                                                      reference):
    root = engines.shared_dir(f"{engine.runner}-")
    args = _engine_args(engine, pool)
    art = _analyze(inputs, root / "artifacts", *args)
    assert_same_artifacts(reference["artifacts"], art)
    # transform reads the reference artifacts: its output must not depend on the runner
    encoded = _transform(reference["artifacts"], inputs, root / "encoded", *args)
    assert_same_artifacts(reference["encoded"], encoded)
    elwc = _elwc(inputs, root / "elwc", *args)
    assert_same_artifacts(reference["elwc"], elwc)


def _kill_one_busy_worker(pool, before: set[int], killed: list[int], done: threading.Event,
                          busy_for: float = 15.0) -> None:
    """SIGKILLs one SDK worker of this job once it has run ``busy_for`` seconds.

    A worker killed while it starts (before it connects) is not what this test is about:
    Beam's ExternalEnvironmentFactory then waits for it forever (docs/runners.md).
    """
    first_seen: dict[int, float] = {}
    while not done.is_set() and not killed:
        now = time.monotonic()
        for pid in pool.live_workers():
            if pid in before:
                continue
            first_seen.setdefault(pid, now)
            if now - first_seen[pid] >= busy_for:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        time.sleep(0.5)


@pytest.mark.xfail(strict=True, reason=(
    "found, not fixed: with --environment_cache_millis the Spark job fails when an SDK worker "
    "is killed mid-job (every retry of the task meets the cached dead worker: "
    "FnApiControlClient / BundleProcessor.newBundle errors until spark.task.maxFailures); "
    "the output is left uncommitted (_LOCK and _staging-* only). docs/runners.md"))
def test_spark_retries_a_killed_sdk_worker_and_gives_the_same_bytes(spark, pool, inputs,
                                                                    reference):
    root = engines.shared_dir("spark-fault-")
    killed: list[int] = []
    before = set(pool.worker_pids())
    done = threading.Event()
    killer = threading.Thread(target=_kill_one_busy_worker, args=(pool, before, killed, done))
    killer.start()
    # In a subprocess with a timeout: a job that hangs fails the test instead of the suite.
    argv = ["--spec", str(inputs["spec"]), "--input", str(inputs["events"] / "*.csv"),
            "--output", str(root / "artifacts"), "--no_report", "--quiet", *SPEC_FLAGS,
            *_engine_args(spark, pool)]
    try:
        proc = subprocess.run([sys.executable, "-m", "beam_prep.pipelines.analyze", *argv],
                              capture_output=True, text=True, timeout=900)
    finally:
        done.set()
        killer.join()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert killed, "no SDK worker of this job lived 15 s: nothing was killed"
    assert len(set(pool.worker_pids()) - before) > 1  # a new worker replaced the killed one
    assert_same_artifacts(reference["artifacts"], root / "artifacts")
