"""The SDK worker pool (``python -m beam_prep.pipelines.worker_pool``) without Java.

Worker ids are unique only within one runner process: every Spark executor and Flink
TaskManager names its first worker ``1-1``. A StopWorker from one runner must stop that
runner's worker and never another's (which, while it starts, leaves its runner waiting
forever; docs/runners.md "Faults").
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import grpc
import pytest
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc
from beam_prep.pipelines import worker_pool

FAKE_WORKER = """#!/bin/sh
echo $$ >> "{pids}"
exec sleep 60
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a stopped worker not yet waited for is a zombie: not alive either
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def _dies(pid: int, seconds: float = 10) -> bool:
    """Whether the process is gone within ``seconds`` (a loaded machine reaps it late)."""
    end = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _wait_for_lines(path: Path, n: int) -> list[int]:
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if path.exists() and len(pids := path.read_text().split()) >= n:
            return [int(p) for p in pids]
        time.sleep(0.05)
    raise AssertionError(f"{n} workers did not start")


@pytest.fixture
def pool(tmp_path):
    script = tmp_path / "worker"
    script.write_text(FAKE_WORKER.format(pids=tmp_path / "pids"))
    script.chmod(0o755)
    started = worker_pool.serve("127.0.0.1", 0, worker_python=str(script))
    server, port = started[0], started[1]
    # two runners: two connections (gRPC would otherwise share one between the channels)
    channels = [grpc.insecure_channel(f"127.0.0.1:{port}",
                                      options=[("grpc.use_local_subchannel_pool", 1)])
                for _ in range(2)]
    try:
        yield [beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(c) for c in channels], \
            tmp_path / "pids"
    finally:
        for c in channels:
            c.close()
        if len(started) > 2:
            started[2].stop_all()
        server.stop(0)
        for pid in (tmp_path / "pids").read_text().split() if (tmp_path / "pids").exists() else []:
            if _alive(int(pid)):
                os.kill(int(pid), 9)


def _start(stub, worker_id: str) -> None:
    response = stub.StartWorker(beam_fn_api_pb2.StartWorkerRequest(
        worker_id=worker_id, control_endpoint={"url": "localhost:1"}))
    assert response.error == ""


def test_a_stop_worker_stops_only_the_callers_worker_of_that_id(pool):
    (runner_a, runner_b), pids = pool
    # one at a time: two workers started together may write their pids in either order
    _start(runner_a, "1-1")
    (worker_a,) = _wait_for_lines(pids, 1)
    _start(runner_b, "1-1")  # another executor: the same worker id
    worker_b = _wait_for_lines(pids, 2)[1]
    runner_a.StopWorker(beam_fn_api_pb2.StopWorkerRequest(worker_id="1-1"))
    assert _dies(worker_a)
    assert _alive(worker_b)  # Beam's pool kills this one (filed by worker id alone)
    runner_a.StopWorker(beam_fn_api_pb2.StopWorkerRequest(worker_id="1-1"))  # nothing left
    assert _alive(worker_b)
    runner_b.StopWorker(beam_fn_api_pb2.StopWorkerRequest(worker_id="1-1"))
    assert _dies(worker_b)


def test_a_worker_that_cannot_start_is_an_error_in_the_response(tmp_path):
    server, port, _ = worker_pool.serve("127.0.0.1", 0,
                                         worker_python=str(tmp_path / "missing-python"))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(channel)
            response = stub.StartWorker(beam_fn_api_pb2.StartWorkerRequest(worker_id="1-1"))
        assert "cannot start an SDK worker with" in response.error
        assert "missing-python" in response.error
    finally:
        server.stop(0)
