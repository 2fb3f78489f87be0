"""Flink and Spark for the runner tests: job servers, a Spark standalone cluster, worker pools.

Everything is started from what ``make runner-jars`` put under ``build/runners/`` (see
docs/runners.md) and listens on 127.0.0.1; the processes are stopped by their own ids.

Workers as separate hosts: the SDK worker pool (``python -m beam_prep.pipelines.worker_pool``)
starts every SDK worker through :data:`SHIM`, which puts the worker in a mount namespace of
its own with an empty private ``/tmp`` (a tmpfs) as its working directory. A file one worker
writes under ``/tmp`` or its working directory is then invisible to every other worker and
to the launcher: a job that relies on it fails or differs, and the equality tests see it.
Only the input and output locations (a folder outside ``/tmp``) are shared, as a distributed
filesystem would be. The shim appends each worker's pid to ``<pool>/workers.pids`` (the
fault tests kill one).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNERS = Path(os.environ.get("BEAM_PREP_RUNNERS_DIR", ROOT / "build" / "runners"))
BEAM_JAVA = os.environ.get("BEAM_JAVA_VERSION", "2.62.0")  # make runner-jars builds it
FLINK_LIB = RUNNERS / f"flink-1.19-job-server-{BEAM_JAVA}" / "lib"
SPARK_LIB = RUNNERS / f"spark-3-job-server-{BEAM_JAVA}" / "lib"
PYSPARK = RUNNERS / "pyspark" / "pyspark"
#: Shared storage for inputs and outputs (never under /tmp, which workers do not share).
WORK = RUNNERS / "shared"
#: Flink settings for the job server (the restart strategy; docs/runners.md "Faults").
FLINK_CONF = ROOT / "runners" / "flink-conf"
#: Settings of the standalone Flink session cluster (JobManager and TaskManagers).
FLINK_CLUSTER_CONF = ROOT / "runners" / "flink-cluster-conf"
#: Spark settings of the job server (the driver): a task that failed on an executor is not
#: retried there, and an executor with failed tasks is excluded and replaced. An executor
#: whose cached SDK worker died otherwise fails every retry sent to it (docs/runners.md).
SPARK_FAULT_CONF = ["-Dspark.excludeOnFailure.enabled=true",
                    "-Dspark.excludeOnFailure.killExcludedExecutors=true"]

JAVA_OPENS = [f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
    "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio",
    "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "java.text",
    "java.time", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs", "sun.security.action",
    "sun.util.calendar")] + ["-Djdk.reflect.useDirectMethodHandle=false"]

#: Runs one SDK worker in its own mount namespace, private /tmp as its working directory.
SHIM = """#!/bin/sh
echo $$ >> "{pids}"
exec unshare --mount --propagation private /bin/sh -c \
  'mount -t tmpfs -o size=4g tmpfs /tmp && mkdir /tmp/worker && cd /tmp/worker && exec "$0" "$@"' \
  "{python}" "$@"
"""


def missing() -> str | None:
    """Why the runner tests cannot run here (None when they can)."""
    if shutil.which("java") is None:
        return "no java on PATH (install Java 17)"
    for path in (FLINK_LIB, SPARK_LIB, PYSPARK / "jars"):
        if not path.is_dir():
            return f"{path} missing: run `make runner-jars`"
    if shutil.which("unshare") is None:
        return "no unshare (util-linux)"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs tmpfs /tmp"], capture_output=True, text=True)
    if probe.returncode:
        return f"mount namespaces unavailable: {probe.stderr.strip()[:200]}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    """Waits until something accepts on 127.0.0.1:port; fails with the log tail otherwise."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:3]} exited {proc.returncode}:\n"
                               f"{log.read_text(errors='replace')[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.5)
    raise RuntimeError(f"nothing listens on {port} after {timeout}s:\n"
                       f"{log.read_text(errors='replace')[-3000:]}")


def start(cmd: list[str], log: Path, **kwargs) -> subprocess.Popen:
    """Starts a service in its own process group (stopped with :func:`stop`)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, **kwargs)


def stop(proc: subprocess.Popen) -> None:
    """Stops a process started by :func:`start` and everything in its process group."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@dataclass
class WorkerPool:
    """An SDK worker pool whose workers are isolated as on separate hosts."""

    proc: subprocess.Popen
    port: int
    folder: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def worker_pids(self) -> list[int]:
        """Pids of the SDK workers started so far (alive or not)."""
        path = self.folder / "workers.pids"
        return [int(x) for x in path.read_text().split()] if path.exists() else []

    def live_workers(self) -> list[int]:
        return [p for p in self.worker_pids() if Path(f"/proc/{p}").exists()
                and "SdkHarness" in _read(Path(f"/proc/{p}/cmdline"))]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:  # the process ended
        return ""


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of process ``pid`` in clock ticks (0 once it has ended)."""
    stat = _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[-1].split()
    return int(stat[11]) + int(stat[12]) if len(stat) > 12 else 0


def connected(pid: int) -> bool:
    """Whether process ``pid`` holds an established TCP connection (an SDK worker that has
    reached its runner, as opposed to one still starting)."""
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        inodes = {os.readlink(fd_dir / fd)[8:-1] for fd in os.listdir(fd_dir)
                  if os.readlink(fd_dir / fd).startswith("socket:[")}
    except OSError:
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in _read(Path(table)).splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "01" and fields[9] in inodes:
                return True
    return False


@contextlib.contextmanager
def worker_pool(folder: Path) -> Iterator[WorkerPool]:
    """A pool on a free port whose every worker runs through :data:`SHIM`."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "isolated-python"
    shim.write_text(SHIM.format(pids=folder / "workers.pids", python=sys.executable))
    shim.chmod(0o755)
    port = free_port()
    log = folder / "pool.log"
    proc = start([sys.executable, "-m", "beam_prep.pipelines.worker_pool", "--port", str(port),
                  "--host", "127.0.0.1", "--worker_python", str(shim)], log, cwd=folder)
    try:
        wait_for_port(port, proc, log, timeout=120)
        yield WorkerPool(proc, port, folder)
    finally:
        stop(proc)


@dataclass
class JobServer:
    """A Beam job server (Flink or Spark) on 127.0.0.1."""

    proc: subprocess.Popen
    port: int
    runner: str
    flags: tuple[str, ...]
    log: Path

    def beam_args(self, pool: WorkerPool) -> list[str]:
        return [f"--runner={self.runner}", f"--job_endpoint=127.0.0.1:{self.port}",
                "--environment_type=EXTERNAL", f"--environment_config={pool.address}",
                *self.flags]


@contextlib.contextmanager
def flink_job_server(folder: Path, *, master: str = "[local]",
                     parallelism: int = 2) -> Iterator[JobServer]:
    """Beam's Flink job server; ``[local]`` runs each job on an embedded Flink cluster."""
    port = free_port()
    log = folder / "flink-job-server.log"
    proc = start(["java", *JAVA_OPENS, "-cp", f"{FLINK_LIB}/*",
                  "org.apache.beam.runners.flink.FlinkJobServerDriver", "--job-host",
                  "127.0.0.1", "--job-port", str(port), "--artifact-port", "0",
                  "--expansion-port", "0", "--flink-master", master,
                  "--flink-conf-dir", str(FLINK_CONF)], log)
    try:
        wait_for_port(port, proc, log)
        yield JobServer(proc, port, "FlinkRunner", (f"--flink_master={master}",
                                                    f"--parallelism={parallelism}"), log)
    finally:
        stop(proc)


@dataclass
class FlinkCluster:
    """A standalone Flink session cluster: a JobManager and TaskManagers of 1 slot each."""

    jobmanager: subprocess.Popen
    taskmanagers: list[subprocess.Popen]
    master: str  # host:port of the JobManager's REST endpoint
    folder: Path
    flags: tuple[str, ...]

    def start_taskmanager(self) -> subprocess.Popen:
        """Starts one more TaskManager (as a supervisor restarting a dead one would)."""
        i = len(self.taskmanagers) + 1
        tm = start(["java", *JAVA_OPENS, "-cp", f"{FLINK_LIB}/*",
                    "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", "--configDir",
                    str(FLINK_CLUSTER_CONF), *self.flags], self.folder / f"taskmanager{i}.log")
        self.taskmanagers.append(tm)
        return tm

    def registered_taskmanagers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://{self.master}/taskmanagers", timeout=5) as r:
                return len(json.load(r)["taskmanagers"])
        except OSError:
            return 0


@contextlib.contextmanager
def flink_cluster(folder: Path, *, taskmanagers: int = 2) -> Iterator[FlinkCluster]:
    """A standalone Flink session cluster on 127.0.0.1, started from the job server's jars
    (Flink's distribution archive is not on Maven Central; its runtime classes are)."""
    rest, rpc = free_port(), free_port()
    flags = (f"-Drest.port={rest}", f"-Djobmanager.rpc.port={rpc}")
    log = folder / "jobmanager.log"
    jm = start(["java", *JAVA_OPENS, "-cp", f"{FLINK_LIB}/*",
                "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
                "--configDir", str(FLINK_CLUSTER_CONF), *flags], log)
    cluster = FlinkCluster(jm, [], f"127.0.0.1:{rest}", folder, flags)
    try:
        wait_for_port(rest, jm, log)
        for _ in range(taskmanagers):
            cluster.start_taskmanager()
        end = time.monotonic() + 180
        while cluster.registered_taskmanagers() < taskmanagers:
            if time.monotonic() > end or any(t.poll() is not None for t in cluster.taskmanagers):
                raise RuntimeError("Flink TaskManagers did not register:\n"
                                   f"{(folder / 'taskmanager1.log').read_text()[-3000:]}")
            time.sleep(1)
        yield cluster
    finally:
        for tm in cluster.taskmanagers:
            stop(tm)
        stop(jm)


@dataclass
class SparkCluster:
    """A Spark standalone master and its workers, started from pyspark's ``spark-class``."""

    master: subprocess.Popen
    workers: list[subprocess.Popen]
    url: str
    folder: Path

    def executors(self, worker: subprocess.Popen) -> list[int]:
        """Pids of the executor JVMs that Spark worker ``worker`` runs now."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            stat = _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[-1].split()
            if (len(stat) > 1 and stat[1] == str(worker.pid)
                    and "CoarseGrainedExecutorBackend" in _read(Path(f"/proc/{pid}/cmdline"))):
                found.append(int(pid))
        return found


def _spark_env(folder: Path) -> dict[str, str]:
    return dict(os.environ, SPARK_HOME=str(PYSPARK), SPARK_LOCAL_IP="127.0.0.1",
                SPARK_LOG_DIR=str(folder / "logs"), SPARK_NO_DAEMONIZE="1")


def spark_worker(folder: Path, url: str, i: int) -> subprocess.Popen:
    """Starts Spark worker ``i`` (1 core) registered with the master at ``url``."""
    return start([str(PYSPARK / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
                  "--host", "127.0.0.1", "--cores", "1", "--memory", "3g", "--webui-port",
                  str(free_port()), "--work-dir", str(folder / f"work{i}"), url],
                 folder / f"worker{i}.log", env=_spark_env(folder))


@contextlib.contextmanager
def spark_cluster(folder: Path, *, workers: int = 2) -> Iterator[SparkCluster]:
    """A standalone Spark master on 127.0.0.1 with ``workers`` workers of 1 core each."""
    port = free_port()
    log = folder / "master.log"
    master = start([str(PYSPARK / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                    "--host", "127.0.0.1", "--port", str(port), "--webui-port",
                    str(free_port())], log, env=_spark_env(folder))
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        wait_for_port(port, master, log)
        procs = [spark_worker(folder, url, i) for i in range(1, workers + 1)]
        end = time.monotonic() + 180
        while log.read_text(errors="replace").count("Registering worker") < workers:
            if time.monotonic() > end:
                raise RuntimeError(f"Spark workers did not register:\n{log.read_text()[-2000:]}")
            time.sleep(1)
        yield SparkCluster(master, procs, url, folder)
    finally:
        for p in procs:
            stop(p)
        stop(master)


@contextlib.contextmanager
def spark_job_server(folder: Path, master_url: str) -> Iterator[JobServer]:
    """Beam's Spark job server submitting to ``master_url``."""
    port = free_port()
    log = folder / "spark-job-server.log"
    # Beam's jars first, in the job server (the Spark driver) and, through
    # spark.executor.extraClassPath, in the executors: pyspark's jars/ hold a Guava 14 that
    # Beam's code cannot use (NoSuchMethodError Preconditions.checkState, a failed first
    # attempt of every task).
    proc = start(["java", *JAVA_OPENS, f"-Dspark.executor.extraClassPath={SPARK_LIB}/*",
                  *SPARK_FAULT_CONF,
                  "-cp", f"{SPARK_LIB}/*:{PYSPARK}/jars/*",
                  "org.apache.beam.runners.spark.SparkJobServerDriver", "--job-host",
                  "127.0.0.1", "--job-port", str(port), "--artifact-port", "0",
                  "--expansion-port", "0", "--spark-master-url", master_url], log)
    try:
        wait_for_port(port, proc, log)
        yield JobServer(proc, port, "SparkRunner", (), log)
    finally:
        stop(proc)


def shared_dir(prefix: str) -> Path:
    """A fresh folder on the shared storage (under build/runners/shared, not /tmp)."""
    WORK.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=WORK))
