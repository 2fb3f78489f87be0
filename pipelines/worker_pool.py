"""An SDK worker pool for ``--environment_type=EXTERNAL`` (Flink, Spark, any portable runner).

Beam's ``apache_beam.runners.worker.worker_pool_main`` listens on every interface, lets gRPC
share the port with another process (``SO_REUSEPORT``: a second pool on the same port starts
without error and takes half the work) and starts each SDK worker as ``python`` from ``PATH``,
which need not be the interpreter that has beam_prep installed. This entry point runs the same
Beam servicer bound to one address, refuses a port that is taken, and starts workers with this
interpreter::

    python -m beam_prep.pipelines.worker_pool --port 50000 --host 127.0.0.1

The runner then gets ``--environment_type=EXTERNAL --environment_config=127.0.0.1:50000``.
Each worker the runner asks for is a new process, which ends when the runner stops it. See
docs/runners.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence

import grpc
from apache_beam.portability.api import beam_fn_api_pb2_grpc
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer
from apache_beam.utils import thread_pool_executor


def serve(host: str, port: int, *, worker_python: str | None = None
          ) -> tuple[grpc.Server, int]:
    """Starts the pool's gRPC server on ``host:port`` (0 = any free port).

    Args:
        host: The address to bind (``127.0.0.1`` keeps the pool off the network).
        port: The port; 0 picks a free one.
        worker_python: The program each SDK worker is started with (default: this
            interpreter); e.g. a wrapper that puts the worker in a container or namespace
            and then runs the interpreter with the arguments it was given.

    Returns:
        The started server and the port it listens on.

    Raises:
        OSError: When the address cannot be bound (the port is taken).
    """
    # Beam starts each worker as `python` from PATH: make that name the chosen program.
    shim_dir = tempfile.mkdtemp(prefix="beam_prep_pool_")
    os.symlink(os.path.abspath(worker_python or sys.executable), os.path.join(shim_dir, "python"))
    os.environ["PATH"] = shim_dir + os.pathsep + os.environ.get("PATH", "")
    server = grpc.server(thread_pool_executor.shared_unbounded_instance(),
                         options=[("grpc.so_reuseport", 0),
                                  ("grpc.http2.max_pings_without_data", 0),
                                  ("grpc.http2.max_ping_strikes", 0)])
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as e:  # grpc raises RuntimeError for an address it cannot bind
        raise OSError(f"cannot listen on {host}:{port}: {e}") from None
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(
        BeamFnExternalWorkerPoolServicer(use_process=True, data_buffer_time_limit_ms=-1), server)
    server.start()
    return server, bound


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
        server, port = serve(args.host, args.port, worker_python=args.worker_python)
    except OSError as e:
        print(f"worker_pool: error: {e}. Fix: pick a free --port.", file=sys.stderr)
        return 1
    print(f"worker pool listening on {args.host}:{port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
