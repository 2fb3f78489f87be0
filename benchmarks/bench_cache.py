"""Rolling-window benchmark of the analysis cache (`beam-prep analyze --cache_dir`, issue 16).

Generates ``--days`` (default 31) daily Parquet files, then runs `beam-prep analyze` as a child
process four times, one after the other, on the same data:

====  ==========================================  ==============================================
run   inputs                                      cache
====  ==========================================  ==============================================
a     days 1..W (W = days - 1, default 30)        none (full run)
b     days 1..W                                   ``--cache_dir`` empty (cold: fills the cache)
c     days 2..W+1 (one day dropped, one new)      same cache (warm: one day to read)
d     days 2..W+1                                 none (full run: the reference for c)
s     1,000 rows of day 1                         none (the fixed cost: start-up, graph, writes)
====  ==========================================  ==============================================

Checks: b's artifacts equal a's and c's equal d's, byte for byte, for every file under the
output folder except ``manifest.json``, whose JSON must be equal once the one cache field
(``--cache_field``, default ``cache``) is removed from both sides. Reports for each run the wall
time, the CPU time (user + sys) and the peak RSS of that child and its descendants, from
``os.wait4`` (the rusage of that one child: ``RUSAGE_CHILDREN`` would accumulate over the
runs), plus the sampled peak RSS of the process tree; and the ratios c/d (target <= 0.1).

Data, one file per day (``day_NN.parquet``, seeded by ``(seed, day)`` so a day's bytes do not
depend on the other days; written with ``--row_group_rows`` rows per row group):

* ``item``: string, Zipf(1.1) over ``--vocab`` ids, shifted by 1,000 ids per day (every day
  brings new tokens and loses some): a large vocabulary with a long tail;
* ``store``: integer, Zipf(1.5) over 50,000 store ids;
* ``price``: numeric, log-normal, 1% nulls;
* ``title``: text, 3-8 words from a Zipf(1.3) law over 30,000 words.

``--snapshot REV`` runs the code of a git revision instead of the working tree (``git archive``
into ``<out>/code-REV``, laid out as the wheel installs it, run with ``python -m
beam_prep.cli`` on ``PYTHONPATH``): on a checkout that others edit, every run then measures
the same code.

``--profile`` (after the runs, or alone with ``--runs ""`` on a filled cache) profiles the warm
run in this process with cProfile: a copy of the cache without the newest day's entries, days
2..W+1, ``--split_threads 1`` (cProfile sees one thread); stats in ``<out>/warm.prof``.

Example:
    python benchmarks/bench_cache.py --rows_per_day 300000 --out /tmp/bench_cache --snapshot HEAD
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SPEC = """\
version: 1
features:
  - {name: item, kind: string, top_k: 100000}
  - {name: store, kind: integer}
  - {name: price, kind: numeric, num_buckets: 20}
  - {name: title, kind: text, max_tokens: 20000, output_mode: tf_idf}
"""
WORDS = 30_000
STORES = 50_000
DAY_SHIFT = 1_000


def _day_table(day: int, rows: int, vocab: int, seed: int) -> pa.Table:
    rng = np.random.default_rng([seed, day])
    item_ids = (rng.zipf(1.1, rows) - 1 + day * DAY_SHIFT) % vocab
    item = pc.binary_join_element_wise("item_", pc.cast(pa.array(item_ids), pa.string()), "")
    store = (rng.zipf(1.5, rows) - 1) % STORES
    price = np.round(rng.lognormal(3.0, 1.0, rows), 2)
    price_mask = rng.random(rows) < 0.01
    words = pa.array([f"w{i}" for i in range(WORDS)])
    lengths = rng.integers(3, 9, rows)
    flat = words.take((rng.zipf(1.3, int(lengths.sum())) - 1) % WORDS)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), type=pa.int32())
    title = pc.binary_join(pa.ListArray.from_arrays(offsets, flat), " ")
    return pa.table({
        "item": item,
        "store": pa.array(store, type=pa.int64()),
        "price": pa.array(price, mask=price_mask),
        "title": title,
    })


def generate(data: str, days: int, rows: int, vocab: int, seed: int,
             row_group_rows: int) -> list[str]:
    """Writes (or reuses) the daily files and spec.yaml; returns the day paths in order."""
    os.makedirs(data, exist_ok=True)
    meta = {"days": days, "rows": rows, "vocab": vocab, "seed": seed,
            "row_group_rows": row_group_rows, "spec": SPEC}
    meta_path = os.path.join(data, "meta.json")
    paths = [os.path.join(data, f"day_{d:02d}.parquet") for d in range(1, days + 1)]
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            if json.load(f) == meta and all(os.path.exists(p) for p in paths):
                return paths
    for day, path in enumerate(paths, start=1):
        pq.write_table(_day_table(day, rows, vocab, seed), path, row_group_size=row_group_rows)
    with open(os.path.join(data, "spec.yaml"), "w") as f:
        f.write(SPEC)
    pq.write_table(_day_table(1, 1_000, vocab, seed), os.path.join(data, "tiny.parquet"))
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return paths


def measure(cmd: list[str], log_path: str, code: str | None = None) -> dict[str, Any]:
    """Runs ``cmd``; wall, CPU and peak RSS of that child (``os.wait4``) and its sampled tree."""
    import psutil

    peak = 0
    start = time.monotonic()
    with open(log_path, "w") as log:
        env = dict(os.environ, PYTHONPATH=code) if code else None
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=os.path.dirname(log_path))
    parent = psutil.Process(proc.pid)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            try:
                procs = [parent, *parent.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in procs))
            except psutil.Error:
                pass
            done.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        with open(log_path) as f:
            tail = f.read()[-3000:]
        raise SystemExit(f"{' '.join(cmd)}\nfailed with exit code {proc.returncode}:\n{tail}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "cpu_user_s": round(usage.ru_utime, 2), "cpu_sys_s": round(usage.ru_stime, 2),
            "maxrss_mb": round(usage.ru_maxrss / 1024),
            "tree_rss_sampled_mb": round(peak / 2**20),
            "load_1m_at_end": round(os.getloadavg()[0], 2)}


def _manifest_without(path: str, field: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    manifest.pop(field, None)
    return manifest


def same_artifacts(left: str, right: str, cache_field: str) -> list[str]:
    """Differences between two artifact folders (empty list: identical up to the cache field)."""
    def files(root: str) -> set[str]:
        return {os.path.relpath(os.path.join(d, n), root)
                for d, _, names in os.walk(root) for n in names}

    a, b = files(left), files(right)
    problems = [f"only in {left}: {p}" for p in sorted(a - b)]
    problems += [f"only in {right}: {p}" for p in sorted(b - a)]
    for rel in sorted(a & b):
        x, y = os.path.join(left, rel), os.path.join(right, rel)
        if rel == "manifest.json":
            if _manifest_without(x, cache_field) != _manifest_without(y, cache_field):
                problems.append(f"manifest.json differs beyond `{cache_field}`")
        elif not filecmp.cmp(x, y, shallow=False):
            problems.append(f"bytes differ: {rel}")
    return problems


def profile_warm(spec: str, inputs: list[str], cache: str, out: str, code: str | None) -> None:
    """cProfile of the warm run, in this process, on a cache copy without the newest input."""
    import cProfile
    import pstats

    work = os.path.join(out, "profile")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(cache, os.path.join(work, "cache"))
    newest = json.dumps(inputs[-1])
    for index in glob.glob(os.path.join(work, "cache", "entries", "*", "*", "index.json")):
        with open(index) as f:
            if newest in f.read():
                shutil.rmtree(os.path.dirname(index))
    if code:
        sys.path.insert(0, code)
    from beam_prep.pipelines import analyze

    argv = ["--spec", spec, "--output", os.path.join(work, "out"), "--overwrite", "--quiet",
            "--no_report", "--cache_dir", os.path.join(work, "cache"), "--split_threads", "1"]
    for path in inputs:
        argv += ["--input", path]
    profiler = cProfile.Profile()
    start, cpu = time.monotonic(), time.process_time()
    profiler.runcall(analyze.run, argv)
    print(f"profiled warm run: wall {time.monotonic() - start:.1f} s, "
          f"CPU {time.process_time() - cpu:.1f} s")
    profiler.dump_stats(os.path.join(out, "warm.prof"))
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def _last_cache_record(cache: str) -> dict[str, Any]:
    """Hits and misses of the newest run record under ``<cache>/runs`` (names sort by time)."""
    runs = sorted(os.listdir(os.path.join(cache, "runs")))
    with open(os.path.join(cache, "runs", runs[-1])) as f:
        record = json.load(f)
    return {"cache_hits": record["hits"], "cache_misses": record["misses"]}


def snapshot(rev: str, out: str) -> str:
    """Exports ``rev`` of this repository as an importable tree (wheel layout); returns it."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sha = subprocess.run(["git", "-C", repo, "rev-parse", "--short", rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    code = os.path.join(out, f"code-{sha}")
    if not os.path.isdir(code):
        os.makedirs(code)
        archive = subprocess.run(["git", "-C", repo, "archive", sha, "beam_prep", "pipelines",
                                  "templates"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", code], input=archive, check=True)
        for folder in ("pipelines", "templates"):  # setup.py's package_dir
            shutil.move(os.path.join(code, folder), os.path.join(code, "beam_prep", folder))
        for so in glob.glob(os.path.join(repo, "beam_prep", "io", "*.so")):  # built in place
            shutil.copy(so, os.path.join(code, "beam_prep", "io"))
    return code


def _analyze_cmd(args: argparse.Namespace, spec: str, inputs: list[str], out: str,
                 cache: str | None) -> list[str]:
    start = ([sys.executable, "-m", "beam_prep.cli"] if args.code else [args.beam_prep])
    cmd = [*start, "analyze", "--spec", spec, "--output", out, "--overwrite",
           "--quiet", "--no_report"]
    for path in inputs:
        cmd += ["--input", path]
    if cache:
        cmd += ["--cache_dir", cache]
    return cmd + args.extra.split()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--days", type=int, default=31)
    p.add_argument("--rows_per_day", type=int, default=300_000)
    p.add_argument("--vocab", type=int, default=2_000_000, help="Possible item ids.")
    p.add_argument("--row_group_rows", type=int, default=131_072)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="/tmp/bench_cache")
    p.add_argument("--runs", default="sabcd", help="Which of the runs s, a, b, c, d to make.")
    p.add_argument("--cache_field", default="cache",
                   help="Top-level manifest key that may differ between cached and full runs.")
    p.add_argument("--beam_prep", default=os.path.join(os.path.dirname(sys.executable),
                                                       "beam-prep"))
    p.add_argument("--extra", default="", help="More flags for every analyze run.")
    p.add_argument("--profile", action="store_true", help="Profile the warm run (see above).")
    p.add_argument("--snapshot", default="",
                   help="Git revision to run (default: the installed working tree).")
    args = p.parse_args(argv)
    args.code = snapshot(args.snapshot, args.out) if args.snapshot else None

    t0 = time.monotonic()
    paths = generate(os.path.join(args.out, "data"), args.days, args.rows_per_day, args.vocab,
                     args.seed, args.row_group_rows)
    data_mb = sum(os.path.getsize(x) for x in paths) / 2**20
    print(f"data: {len(paths)} days x {args.rows_per_day:,} rows, {data_mb:.0f} MiB, "
          f"ready in {time.monotonic() - t0:.0f} s", flush=True)
    spec = os.path.join(args.out, "data", "spec.yaml")
    cache = os.path.join(args.out, "cache")
    window, window_next = paths[:-1], paths[1:]
    tiny = [os.path.join(args.out, "data", "tiny.parquet")]
    plan = {"s": (tiny, None), "a": (window, None), "b": (window, cache), "c": (window_next, cache),
            "d": (window_next, None)}
    if "b" in args.runs and os.path.exists(cache):
        shutil.rmtree(cache)
    results: dict[str, Any] = {}
    for run in args.runs:
        inputs, run_cache = plan[run]
        out = os.path.join(args.out, f"run_{run}")
        cmd = _analyze_cmd(args, spec, inputs, out, run_cache)
        results[run] = measure(cmd, os.path.join(args.out, f"run_{run}.log"), args.code)
        if run_cache:
            results[run].update(_last_cache_record(run_cache))
        print(run, json.dumps(results[run]), flush=True)
    checks = {}
    for left, right in (("a", "b"), ("d", "c")):
        if left in results and right in results:
            checks[f"{right}=={left}"] = same_artifacts(
                os.path.join(args.out, f"run_{left}"), os.path.join(args.out, f"run_{right}"),
                args.cache_field) or "identical"
    if "c" in results and results["c"].get("cache_hits") != len(window) - 1:
        checks["c_hits"] = (f"expected {len(window) - 1} cached splits (one per day), got "
                            f"{results['c'].get('cache_hits')} hits")
    summary: dict[str, Any] = {"code": args.code or "working tree", "days": args.days,
                               "rows_per_day": args.rows_per_day,
                               "data_mib": round(data_mb), "runs": results, "checks": checks}
    if "c" in results and "d" in results:
        summary["ratio_c_over_d"] = {
            k: round(results["c"][k] / results["d"][k], 3) for k in ("wall_s", "cpu_s")}
    if os.path.isdir(cache):
        size = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(cache) for n in ns)
        summary["cache_mib"] = round(size / 2**20, 1)
    print(json.dumps(summary, indent=1))
    if results:
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    if args.profile:
        profile_warm(spec, window_next, cache, args.out, args.code)


if __name__ == "__main__":
    main()
