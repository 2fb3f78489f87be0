"""An SDK worker pool for ``--environment_type=EXTERNAL`` (Flink, Spark, any portable runner).

Beam's ``apache_beam.runners.worker.worker_pool_main`` listens on every interface, lets gRPC
share the port with another process (``SO_REUSEPORT``: a second pool on the same port starts
without error and takes half the work), starts each SDK worker as ``python`` from ``PATH``
(which need not be the interpreter that has beam_prep installed) and files its workers by
worker id alone. Worker ids are unique only within one runner process (``1-1``, ``2-1``, ...
in every Spark executor and Flink TaskManager), so with a pool shared by two executors, one
executor's StopWorker kills the other's worker of the same id; when that worker is still
starting, the other executor waits for it forever (``ExternalEnvironmentFactory: Still
waiting for startup of environment``). This pool binds one address, refuses a port that is
taken, starts workers with this interpreter and files each worker under the connection that
asked for it, so a StopWorker stops only a worker that the same runner started::

    python -m beam_prep.pipelines.worker_pool --port 50000 --host 127.0.0.1

The runner then gets ``--environment_type=EXTERNAL --environment_config=127.0.0.1:50000``.
Each worker the runner asks for is a new process, which ends when the runner closes its
control channel or stops it. See docs/runners.md.
"""

from __future__ import annotations

import argparse
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

import grpc
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc
from apache_beam.runners.worker.worker_pool_main import kill_process_gracefully
from apache_beam.utils import thread_pool_executor

_LOG = logging.getLogger("beam_prep.worker_pool")

#: What each worker process runs (Beam's SDK harness, connected to the runner's endpoint).
_HARNESS = ("from apache_beam.runners.worker.sdk_worker import SdkHarness; "
            "SdkHarness({url!r}, worker_id={worker_id!r}, state_cache_size=0, "
            "data_buffer_time_limit_ms=-1).run()")


class WorkerPoolServicer(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
    """Starts one SDK worker process per StartWorker request; stops only the caller's own.

    Workers are filed under (gRPC peer of the request, worker id): a runner sends StopWorker
    on the channel it started the worker on. A StopWorker that matches no worker of that peer
    stops nothing (logged): the worker ends by itself when its runner closes its control
    channel, which the runner does before asking.

    Args:
        worker_python: The program each worker is started with (``-c <harness>`` appended).
    """

    def __init__(self, worker_python: str) -> None:
        self._python = worker_python
        self._workers: dict[tuple[str, str], subprocess.Popen] = {}
        self._lock = threading.Lock()

    def StartWorker(self, request: beam_fn_api_pb2.StartWorkerRequest,  # noqa: N802 (gRPC)
                    context: grpc.ServicerContext) -> beam_fn_api_pb2.StartWorkerResponse:
        """Starts a worker connected to ``request.control_endpoint``."""
        key = (context.peer(), request.worker_id)
        code = _HARNESS.format(url=request.control_endpoint.url, worker_id=request.worker_id)
        try:
            proc = subprocess.Popen([self._python, "-c", code], close_fds=True)
        except OSError as e:
            return beam_fn_api_pb2.StartWorkerResponse(
                error=f"cannot start an SDK worker with {self._python}: {e}")
        _LOG.info("Started worker %s for %s (pid %d)", request.worker_id, key[0], proc.pid)
        with self._lock:
            self._reap()
            self._workers[key] = proc
        return beam_fn_api_pb2.StartWorkerResponse()

    def StopWorker(self, request: beam_fn_api_pb2.StopWorkerRequest,  # noqa: N802 (gRPC)
                   context: grpc.ServicerContext) -> beam_fn_api_pb2.StopWorkerResponse:
        """Stops the worker ``request.worker_id`` that this peer started, if any."""
        key = (context.peer(), request.worker_id)
        with self._lock:
            proc = self._workers.pop(key, None)
        if proc is None:
            _LOG.info("No worker %s started by %s to stop", request.worker_id, key[0])
        else:
            _LOG.info("Stopping worker %s for %s (pid %d)", request.worker_id, key[0], proc.pid)
            kill_process_gracefully(proc)
        return beam_fn_api_pb2.StopWorkerResponse()

    def _reap(self) -> None:
        """Forgets workers that have ended (called with the lock held)."""
        for key in [k for k, p in self._workers.items() if p.poll() is not None]:
            del self._workers[key]

    def stop_all(self) -> None:
        """Stops every worker still running (the pool is shutting down)."""
        with self._lock:
            procs, self._workers = list(self._workers.values()), {}
        for proc in procs:
            kill_process_gracefully(proc)


def serve(host: str, port: int, *, worker_python: str | None = None
          ) -> tuple[grpc.Server, int, WorkerPoolServicer]:
    """Starts the pool's gRPC server on ``host:port`` (0 = any free port).

    Args:
        host: The address to bind (``127.0.0.1`` keeps the pool off the network).
        port: The port; 0 picks a free one.
        worker_python: The program each SDK worker is started with (default: this
            interpreter); e.g. a wrapper that puts the worker in a container or namespace
            and then runs the interpreter with the arguments it was given.

    Returns:
        The started server, the port it listens on and the servicer (``stop_all``).

    Raises:
        OSError: When the address cannot be bound (the port is taken).
    """
    server = grpc.server(thread_pool_executor.shared_unbounded_instance(),
                         options=[("grpc.so_reuseport", 0),
                                  ("grpc.http2.max_pings_without_data", 0),
                                  ("grpc.http2.max_ping_strikes", 0)])
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as e:  # grpc raises RuntimeError for an address it cannot bind
        raise OSError(f"cannot listen on {host}:{port}: {e}") from None
    servicer = WorkerPoolServicer(worker_python or sys.executable)
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(servicer, server)
    server.start()
    return server, bound, servicer


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the pool until interrupted; prints ``worker pool listening on HOST:PORT``."""
    p = argparse.ArgumentParser(prog="python -m beam_prep.pipelines.worker_pool",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True, help="Port to listen on (0: any free).")
    p.add_argument("--host", default="127.0.0.1",
                   help="Address to bind (default 127.0.0.1; 0.0.0.0 for every interface).")
    p.add_argument("--worker_python", default=None,
                   help="Program that starts each SDK worker (default: this interpreter).")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        server, port, servicer = serve(args.host, args.port, worker_python=args.worker_python)
    except OSError as e:
        print(f"worker_pool: error: {e}. Fix: pick a free --port.", file=sys.stderr)
        return 1
    print(f"worker pool listening on {args.host}:{port}", flush=True)
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    stopping.wait()
    server.stop(0)
    servicer.stop_all()  # the workers of a job still running end with it
    return 0


if __name__ == "__main__":
    sys.exit(main())
