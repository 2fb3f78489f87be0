"""analyze, transform and make-elwc on Flink and Spark give the DirectRunner's bytes.

Each job runs on the in-process FnApiRunner (the reference) and on each engine through
Beam's portable runner, with SDK workers isolated as on separate hosts (see
tests/runners/engines.py): every file of the output (artifacts and manifest, transform
shards, ELWC shards, rejected rows and their per-reason counts) must be byte-identical, and no
other file may exist. The inputs cover every feature family (tests/runners/data.py).

Faults: an SDK worker, a Spark executor JVM or a Spark worker daemon is SIGKILLed in the
middle of an analysis; the engine must retry and the artifacts must still be byte-identical
(no row counted twice: the manifest's counts are compared; no partial file: no extra file).
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
    # No --environment_cache_millis: the jobs' default for portable runners is what is tested
    return engine.beam_args(pool)


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


def _log_size(engine) -> int:
    return engine.log.stat().st_size


def _log_since(engine, offset: int) -> str:
    with open(engine.log, "rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8", "replace")


def _analyze_with_fault(engine, pool, inputs, fault) -> tuple[Path, str, str]:
    """Runs the analysis on ``engine`` in a subprocess while ``fault(done)`` runs in a thread.

    In a subprocess with a timeout: a job that hangs fails the test instead of the suite.

    Returns:
        The artifacts folder, the job's stderr and what the job server logged meanwhile.
    """
    out = engines.shared_dir(f"{engine.runner}-fault-") / "artifacts"
    argv = ["--spec", str(inputs["spec"]), "--input", str(inputs["events"] / "*.csv"),
            "--output", str(out), *SPEC_FLAGS, *_engine_args(engine, pool)]
    offset = _log_size(engine)
    done = threading.Event()
    killer = threading.Thread(target=fault, args=(done,))
    killer.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; from beam_prep.pipelines import analyze; "
                                   "analyze.run(sys.argv[1:])", *argv],
            capture_output=True, text=True, timeout=900)
    finally:
        done.set()
        killer.join()
    log = _log_since(engine, offset)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not list(out.glob("_staging-*")) and not (out / "_LOCK").exists()
    return out, proc.stderr, log


def _kill_one_busy_worker(pool, killed: list[int], done: threading.Event,
                          busy_for: float, *, kill: bool = True) -> None:
    """SIGKILLs one SDK worker of this job that is connected, has run ``busy_for`` s and is
    computing (its CPU time grew in the last 0.2 s): a worker in the middle of a bundle.
    ``kill=False`` only waits for such a worker (appended to ``killed`` all the same).

    A worker killed before it connects is another fault: Beam's ExternalEnvironmentFactory
    waits for it forever (docs/runners.md).
    """
    before = set(pool.worker_pids())
    first_seen: dict[int, float] = {}
    ticks: dict[int, int] = {}
    while not done.is_set():
        now = time.monotonic()
        for pid in pool.live_workers():
            if pid in before or not engines.connected(pid):
                continue
            first_seen.setdefault(pid, now)
            cpu, last = engines.cpu_ticks(pid), ticks.get(pid)
            ticks[pid] = cpu
            if now - first_seen[pid] >= busy_for and last is not None and cpu > last:
                if kill:
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        time.sleep(0.2)


#: What each engine logs when a task failed and was run again (the fault hit mid-job).
RETRIED = {"FlinkRunner": "switched from state RUNNING to RESTARTING",
           "SparkRunner": "Lost task"}


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_killed_sdk_worker_is_replaced_and_the_job_gives_the_same_bytes(engine, pool, inputs,
                                                                         reference):
    killed: list[int] = []
    # Flink [local] runs the whole analysis on one worker in 8-30 s (the machine's load)
    busy_for = 1.0
    out, _, log = _analyze_with_fault(
        engine, pool, inputs, lambda done: _kill_one_busy_worker(pool, killed, done, busy_for))
    assert killed, f"no SDK worker of this job was connected for {busy_for} s: nothing killed"
    assert RETRIED[engine.runner] in log, "the kill did not make a task fail: not mid-job"
    assert_same_artifacts(reference["artifacts"], out)


def _wait_for_finished_tasks(engine, offset: int, n: int, done: threading.Event) -> bool:
    """Waits until the Spark job server has logged ``n`` finished tasks since ``offset``."""
    while not done.is_set():
        if _log_since(engine, offset).count("Finished task") >= n:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("target", ["executor", "worker"])
def test_spark_reschedules_the_work_of_a_killed_executor_or_worker(target, spark, spark_cluster,
                                                                   pool, inputs, reference):
    """SIGKILLs worker 2's executor JVM, or worker 2 itself (its executor then exits too),
    after the job has finished 8 tasks; the lost tasks and shuffle outputs are recomputed."""
    victim = spark_cluster.workers[1]
    killed: list[int] = []
    orphans: list[int] = []  # the killed worker's executors (they should exit by themselves)
    offset = _log_size(spark)

    def fault(done: threading.Event) -> None:
        if not _wait_for_finished_tasks(spark, offset, 8, done):
            return
        pids = spark_cluster.executors(victim) if target == "executor" else [victim.pid]
        if target == "worker":
            orphans.extend(spark_cluster.executors(victim))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        killed.extend(pids)

    try:
        out, _, log = _analyze_with_fault(spark, pool, inputs, fault)
    finally:
        if target == "worker":  # a new worker in its place for the tests that follow
            victim.wait()
            spark_cluster.workers.append(
                engines.spark_worker(spark_cluster.folder, spark_cluster.url, 3))
        left = [p for p in orphans if Path(f"/proc/{p}").exists()]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert not left, f"executors {left} outlived their killed worker"
    assert killed, "the job finished before 8 tasks were logged: nothing killed"
    assert any(m in log for m in ("Lost executor", "Executor lost", "removed:")), log[-2000:]
    assert_same_artifacts(reference["artifacts"], out)


def test_a_flink_cluster_restarts_the_work_of_a_killed_taskmanager(flink_remote, flink_cluster,
                                                                  pool, inputs, reference):
    """The analysis on a standalone Flink cluster (2 TaskManagers of 1 slot): TaskManager 2 is
    SIGKILLed once an SDK worker has computed for 2 s, and a new TaskManager is started in its
    place (Flink's standalone mode starts none); the job restarts and gives the same bytes."""
    killed: list[int] = []
    victim = flink_cluster.taskmanagers[1]
    jm_log = flink_cluster.folder / "jobmanager.log"
    offset = jm_log.stat().st_size

    def fault(done: threading.Event) -> None:
        busy: list[int] = []
        _kill_one_busy_worker(pool, busy, done, 2.0, kill=False)
        if busy:
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)
            flink_cluster.start_taskmanager()

    out, _, _ = _analyze_with_fault(flink_remote, pool, inputs, fault)
    assert killed, "no SDK worker of this job computed for 2 s: nothing killed"
    with open(jm_log, "rb") as f:
        f.seek(offset)
        assert RETRIED["FlinkRunner"] in f.read().decode("utf-8", "replace")
    assert_same_artifacts(reference["artifacts"], out)
