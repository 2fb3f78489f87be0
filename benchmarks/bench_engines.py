"""One analysis on the DirectRunner (2 processes), Flink and Spark (parallelism 2): rows/s, memory.

Runs ``beam-prep analyze`` on the same Parquet files (``gen_criteo.py``: 13 numeric columns
with quantiles, 26 string vocabularies, a text column unused by the spec) three times, one
after the other:

* ``direct_mp2``: ``--direct_running_mode=multi_processing --direct_num_workers=2``;
* ``flink``: Beam's Flink job server, embedded cluster (``[local]``), ``--parallelism=2``;
* ``spark``: a Spark standalone master with 2 one-core workers and Beam's Spark job server.

Flink and Spark use one SDK worker pool (``--environment_type=EXTERNAL``) whose workers are
isolated as in the tests (tests/runners/engines.py). Wall time is the whole ``beam-prep
analyze`` process (job submission, start of the SDK workers, the job, the commit); rows/s =
rows / wall. Peak memory is the highest sum, sampled every 0.25 s, of the resident set of
every process taking part: the launcher and its children, and for the engines the job
server, the Spark master, workers and executors, and the pool with its SDK workers. Needs
``make runner-jars``; prints a markdown table and writes ``--out``/results.json.

Example:
    $ python benchmarks/gen_criteo.py --rows 10000000 --out build/runners/shared/criteo_10m \
        --formats parquet
    $ python benchmarks/bench_engines.py --data build/runners/shared/criteo_10m \
        --out benchmarks/results/engines_10m
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.runners import engines  # noqa: E402


def _processes() -> dict[int, tuple[int, int]]:
    """pid → (parent pid, resident bytes) of every process, from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                out[int(entry)] = (int(fields[1]), int(fields[21]) * os.sysconf("SC_PAGE_SIZE"))
    return out


def _tree_rss(pids: list[int]) -> int:
    """Resident bytes of ``pids`` and all their descendants, each process counted once."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo = set(), [p for p in pids if p in procs]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += children.get(pid, [])
    return sum(procs[p][1] for p in seen)


def measure(cmd: list[str], service_pids: list[int], timeout: float) -> dict:
    """Runs ``cmd``; wall seconds and the peak summed RSS (MB) of it and the services."""
    peak = [0]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_rss([proc.pid, *service_pids]))
            time.sleep(0.25)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        stop.set()
        t.join()
    wall = time.monotonic() - start
    return {"wall_s": round(wall, 1), "peak_rss_mb": round(peak[0] / 2**20),
            "rc": proc.returncode, "log_tail": out[-1500:]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="gen_criteo.py output folder (parquet/).")
    p.add_argument("--out", required=True)
    p.add_argument("--engines", default="direct_mp2,flink,spark")
    p.add_argument("--timeout", type=float, default=1800)
    args = p.parse_args(argv)
    data = Path(args.data).resolve()
    rows = json.loads((data / "meta.json").read_text())["rows"]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = engines.shared_dir("bench-")
    base = [str(Path(sys.executable).with_name("beam-prep")), "analyze", "--spec",
            str(data / "spec.yaml"), "--input", str(data / "parquet" / "*.parquet"), "--quiet",
            "--no_report"]
    results = {}
    for name in args.engines.split(","):
        dest = ["--output", str(work / "out" / name)]
        with contextlib.ExitStack() as stack:
            services: list[int] = []
            if name == "direct_mp2":
                extra = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
            else:
                pool = stack.enter_context(engines.worker_pool(work / f"{name}-pool"))
                services.append(pool.proc.pid)
                if name == "flink":
                    server = stack.enter_context(engines.flink_job_server(work / name))
                else:
                    cluster = stack.enter_context(engines.spark_cluster(work / f"{name}-cluster"))
                    services += [cluster.master.pid, *(w.pid for w in cluster.workers)]
                    server = stack.enter_context(engines.spark_job_server(work / name,
                                                                          cluster.url))
                services.append(server.proc.pid)
                extra = [*server.beam_args(pool), "--environment_cache_millis=600000"]
            print(f"{name}: running", flush=True)
            load = os.getloadavg()[0]
            r = measure([*base, *dest, *extra], services, args.timeout)
            r["load_before_after"] = [round(load, 1), round(os.getloadavg()[0], 1)]
        r["rows_per_s"] = round(rows / r["wall_s"]) if r["rc"] == 0 else None
        results[name] = r
        print(f"{name}: {r['wall_s']} s, {r['rows_per_s']} rows/s, {r['peak_rss_mb']} MB, "
              f"rc={r['rc']}", flush=True)
        if r["rc"]:
            print(r["log_tail"], flush=True)
    same = None
    if all(results[n]["rc"] == 0 for n in results) and len(results) > 1:
        ref = next(iter(results))
        same = {n: subprocess.run(["diff", "-rq", str(work / "out" / ref), str(work / "out" / n)],
                                  capture_output=True).returncode == 0 for n in results}
    meta = {"rows": rows, "date": datetime.date.today().isoformat(),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                       f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') // 2**30} GB",
            "identical_to_first": same, "command": " ".join(sys.argv)}
    (out / "results.json").write_text(json.dumps({"meta": meta, "runs": results}, indent=1))
    print("\n| engine | wall (s) | rows/s | peak RSS, all processes (MB) | load avg before/after |"
          "\n|---|---:|---:|---:|---|")
    for n, r in results.items():
        print(f"| {n} | {r['wall_s']} | {r['rows_per_s'] or 'failed'} | {r['peak_rss_mb']:,} | "
              f"{r['load_before_after'][0]} / {r['load_before_after'][1]} |")
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
