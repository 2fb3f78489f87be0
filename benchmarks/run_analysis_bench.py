"""Side-by-side analysis benchmark: beam_prep vs TF Transform vs the floor vs Keras adapt.

On the same generated files, in the same run, each contender runs as its own subprocess, one at a
time, interleaved (repetition -> size -> format -> contender). For each run the harness records
the wall time of the whole process and the peak RSS summed over its process tree (psutil, polled
every 50 ms). Each contender runs at a small size (default 1,000 rows, measures start-up) and at
``--rows`` N; throughput is the marginal rate ``(N - small) / (t_N - t_small)``.

Contenders (``--contenders``, comma separated):

=============  ==========================================================================
beam_prep      ``beam-prep analyze`` with default settings (``--beam_prep_cmd`` template)
beam_prep_mp2  the same plus ``--direct_running_mode=multi_processing --direct_num_workers=2``
tft            ``tft_baseline.py``: TF Transform AnalyzeDataset, TFXIO input, same runner
floor          ``floor.py``: single process, pyarrow/numpy + QuantilesSketch (Parquet only)
keras          ``keras_adapt.py``: Keras adapt() in memory (Parquet only, ``--keras_max_rows``)
=============  ==========================================================================

beam_prep is skipped with a message when ``pipelines/analyze.py`` is not importable yet.

Agreement (on the N-row run): beam_prep vs TFT and the floor vs TFT — vocabulary files identical,
mean/variance max relative error, boundaries identical count and max rank error (rank of each
boundary in the exact sorted data vs its target quantile ``i / num_buckets``).

Writes ``results.json`` and ``results.md`` under ``--out`` (default
``benchmarks/results/<timestamp>``) and prints the markdown.

Example:
    $ python benchmarks/run_analysis_bench.py --rows 2000000 --formats parquet,tfrecord \
        --contenders beam_prep,beam_prep_mp2,tft,floor,keras
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import _common  # noqa: E402
from benchmarks._common import compare, load_spec_features  # noqa: E402

HERE = os.path.join(REPO, "benchmarks")
ALL_CONTENDERS = ("beam_prep", "beam_prep_mp2", "tft", "floor", "keras")
PARQUET_ONLY = ("floor", "keras")
DEFAULT_BEAM_PREP_CMD = ("beam-prep analyze --spec {spec} --input {input} --output {output}")
# The local runner `beam-prep analyze` pins by default (pipelines/analyze.py
# DEFAULT_LOCAL_RUNNER); TFT is given the same one so both run on the same engine.
PINNED_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
MP2_FLAGS = "--direct_running_mode=multi_processing --direct_num_workers=2"


def data_dir_for(root: str, rows: int) -> str:
    return os.path.join(root, f"criteo_{rows}")


def ensure_data(path: str, rows: int, formats: list[str], seed: int) -> None:
    """Generates the table unless ``path`` already holds it with these rows and formats."""
    meta_path = os.path.join(path, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta["rows"] == rows and set(formats) <= set(meta["formats"]):
            return
    print(f"[bench] generating {rows:,} rows ({','.join(formats)}) into {path}", flush=True)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_criteo.py"), "--rows", str(rows),
                    "--out", path, "--formats", ",".join(formats), "--seed", str(seed)],
                   check=True, env=_env())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def beam_prep_available() -> str | None:
    """None if `beam-prep analyze` can run, else the reason it cannot."""
    if importlib.util.find_spec("beam_prep.pipelines.analyze") is None:
        return "pipelines/analyze.py does not exist yet"
    return None


def command(contender: str, data: str, fmt: str, out: str, args: argparse.Namespace) -> list[str]:
    """The command line of one run."""
    spec = os.path.join(data, "spec.yaml")
    if contender in ("beam_prep", "beam_prep_mp2"):
        pattern = os.path.join(data, fmt, "*." + fmt)
        cmd = args.beam_prep_cmd.format(spec=spec, input=pattern, output=out, format=fmt)
        extra = args.beam_prep_args + (" " + MP2_FLAGS if contender == "beam_prep_mp2" else "")
        return shlex.split(cmd) + shlex.split(extra)
    py = [sys.executable]
    if contender == "tft":
        return py + [os.path.join(HERE, "tft_baseline.py"), "--data", data, "--format", fmt,
                     "--dump", out] + shlex.split(args.tft_args)
    if contender == "floor":
        return py + [os.path.join(HERE, "floor.py"), "--data", data, "--dump", out]
    if contender == "keras":
        return py + [os.path.join(HERE, "keras_adapt.py"), "--data", data, "--dump", out]
    raise ValueError(f"Unknown contender {contender!r}; choose from {ALL_CONTENDERS}")


def measure(cmd: list[str], log_path: str, timeout: float) -> dict[str, Any]:
    """Runs ``cmd``; returns wall seconds, peak RSS of its process tree (MB) and the exit code."""
    import psutil

    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_env(),
                                start_new_session=True, cwd=REPO)
        root = psutil.Process(proc.pid)
        peak, timed_out = 0, False
        while proc.poll() is None:
            total = 0
            try:
                procs = [root] + root.children(recursive=True)
            except psutil.NoSuchProcess:
                procs = []
            for p in procs:
                try:
                    total += p.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            peak = max(peak, total)
            if time.perf_counter() - t0 > timeout:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)  # only the group this harness started
                proc.wait()
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 3), "peak_rss_mb": round(peak / 2**20, 1),
            "rc": proc.returncode, "timed_out": timed_out}


def _tail(path: str, n: int = 15) -> str:
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-n:])


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "cores": os.cpu_count(),
                            "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(line.split(":", 1)[1].strip() for line in f
                               if line.startswith("model name"))
        with open("/proc/meminfo") as f:
            info["mem_gb"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except (OSError, StopIteration):
        pass
    for mod in ("apache_beam", "tensorflow", "keras", "pyarrow", "tfx_bsl",
                "tensorflow_transform"):
        try:
            from importlib.metadata import version

            info[mod] = version(mod.replace("_", "-"))
        except Exception:  # noqa: BLE001 - version lookup only
            info[mod] = None
    return info


def summarize(runs: list[dict[str, Any]], small: int, big: int) -> list[dict[str, Any]]:
    """One row per (contender, format): best wall per size, marginal throughput, RSS, ratios."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in runs:
        if r["rc"] != 0:
            continue
        key = (r["contender"], r["format"])
        row = rows.setdefault(key, {"contender": key[0], "format": key[1]})
        tag = "small" if r["rows"] == small else "n"
        if row.get(f"wall_{tag}") is None or r["wall_s"] < row[f"wall_{tag}"]:
            row[f"wall_{tag}"] = r["wall_s"]
            row[f"analyze_{tag}"] = r.get("inner", {}).get("analyze_seconds")
        row[f"rss_{tag}"] = max(row.get(f"rss_{tag}", 0), r["peak_rss_mb"])
    for row in rows.values():
        ws, wn = row.get("wall_small"), row.get("wall_n")
        if ws is not None and wn is not None and wn > ws:
            row["marginal_rows_s"] = (big - small) / (wn - ws)
        if wn:
            row["overall_rows_s"] = big / wn
    for row in rows.values():
        tft = rows.get(("tft", row["format"]), {}).get("marginal_rows_s")
        floor = rows.get(("floor", "parquet"), {}).get("marginal_rows_s")
        mine = row.get("marginal_rows_s")
        row["x_tft"] = mine / tft if mine and tft else None
        row["x_floor"] = mine / floor if mine and floor else None
    order = {c: i for i, c in enumerate(ALL_CONTENDERS)}
    return sorted(rows.values(), key=lambda r: (r["format"], order.get(r["contender"], 99)))


def _fmt(v: Any, spec: str = ".1f") -> str:
    return "—" if v is None else format(v, spec)


def markdown(result: dict[str, Any]) -> str:
    s, big, small = result["summary"], result["rows"], result["small_rows"]
    lines = [f"## Analysis benchmark: {big:,} rows (small run: {small:,} rows)", "",
             f"Command: `{result['command']}`", "",
             f"Machine: {result['machine'].get('cpu')}, {result['machine'].get('cores')} cores, "
             f"{result['machine'].get('mem_gb')} GB; Beam {result['machine'].get('apache_beam')}, "
             f"TFT {result['machine'].get('tensorflow_transform')}, "
             f"pyarrow {result['machine'].get('pyarrow')}", "",
             "| contender | format | rows/s (marginal) | rows/s (overall) | wall N (s) | "
             "start-up (s, small run) | peak RSS N (MB) | × TFT | × floor |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in s:
        lines.append(
            f"| {r['contender']} | {r['format']} | {_fmt(r.get('marginal_rows_s'), ',.0f')} | "
            f"{_fmt(r.get('overall_rows_s'), ',.0f')} | {_fmt(r.get('wall_n'))} | "
            f"{_fmt(r.get('wall_small'))} | {_fmt(r.get('rss_n'), ',.0f')} | "
            f"{_fmt(r.get('x_tft'), '.2f')} | {_fmt(r.get('x_floor'), '.2f')} |")
    if result["skipped"]:
        lines += ["", "Skipped: " + "; ".join(f"{k}: {v}" for k, v in result["skipped"].items())]
    failed = [r for r in result["runs"] if r["rc"] != 0]
    if failed:
        lines += ["", "Failed runs: " + "; ".join(
            f"{r['contender']}/{r['format']}/{r['rows']} rc={r['rc']} (log {r['log']})"
            for r in failed)]
    if result["agreement"]:
        lines += ["", "### Agreement (N-row run)", "",
                  "| a vs b | format | vocab files identical | mean max rel err | "
                  "var max rel err | boundaries identical | max rank err a | max rank err b |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for a in result["agreement"]:
            c = a["result"]
            lines.append(
                f"| {a['a']} vs {a['b']} | {a['format']} | "
                f"{c['vocab_identical']}/{c['vocab_total']} | {c['mean_rel_max']:.2e} | "
                f"{c['var_rel_max']:.2e} | {c['boundaries_equal']}/{c['numeric_total']} | "
                f"{_fmt(c.get('rank_err_max_a'), '.4f')} | "
                f"{_fmt(c.get('rank_err_max_b'), '.4f')} |")
            for name, d in list(c["vocab_diff"].items())[:5]:
                lines.append(f"|  ↳ {name} differs | | first line {d['first_diff_line']}, "
                             f"len {d['len_a']} vs {d['len_b']}, same set: {d['same_set']} "
                             "| | | | | |")
    return "\n".join(lines) + "\n"


def _open_output(contender: str, path: str) -> Any:
    if contender.startswith("beam_prep"):
        from beam_prep import Artifacts

        return Artifacts(path)
    return _common.read_dump(path)


def _sorted_numeric(data: str, nums: list) -> dict[str, Any]:
    import numpy as np
    import pyarrow.parquet as pq

    out = {}
    for name, column, _, _ in nums:
        col = pq.read_table(_common.parquet_files(data), columns=[column])[column].drop_null()
        values = col.to_numpy().astype(np.float64)
        out[name] = np.sort(values[~np.isnan(values)])
    return out


def agreement(runs: list[dict[str, Any]], big: int, data: str,
              rank_check: bool) -> list[dict[str, Any]]:
    cats, nums = load_spec_features(os.path.join(data, "spec.yaml"))
    last: dict[tuple[str, str], str] = {}
    for r in runs:
        if r["rc"] == 0 and r["rows"] == big:
            last[(r["contender"], r["format"])] = r["output"]
    values = _sorted_numeric(data, nums) if rank_check else None
    pairs = []
    for (contender, fmt), path in sorted(last.items()):
        if contender == "tft":
            continue
        ref_key = ("tft", fmt) if ("tft", fmt) in last else ("tft", "parquet")
        if ref_key not in last:
            ref_key = ("tft", "tfrecord")
        if ref_key not in last:
            continue
        try:
            a = _open_output(contender, path)
            b = _open_output("tft", last[ref_key])
            res = compare(a, b, cats, nums, values)
        except Exception as e:  # noqa: BLE001 - report, do not abort the benchmark
            res = {"error": f"{type(e).__name__}: {e}"}
            print(f"[bench] agreement {contender}/{fmt} failed: {res['error']}", flush=True)
            continue
        pairs.append({"a": contender, "b": "tft", "format": fmt, "result": res})
        if contender.startswith("beam_prep") and ("floor", "parquet") in last:
            res = compare(a, _common.read_dump(last[("floor", "parquet")]), cats, nums, values)
            pairs.append({"a": contender, "b": "floor", "format": fmt, "result": res})
    if ("tft", "parquet") in last and ("tft", "tfrecord") in last:
        res = compare(_common.read_dump(last[("tft", "parquet")]),
                      _common.read_dump(last[("tft", "tfrecord")]), cats, nums, values)
        pairs.append({"a": "tft(parquet)", "b": "tft(tfrecord)", "format": "both",
                      "result": res})
    return pairs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=2_000_000, help="N, the large run's rows.")
    p.add_argument("--small_rows", type=int, default=1000)
    p.add_argument("--data_root", default=os.path.join(HERE, "data"))
    p.add_argument("--data", default=None, help="N-row data dir (default DATA_ROOT/criteo_N).")
    p.add_argument("--data_small", default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--formats", default="parquet,tfrecord")
    p.add_argument("--contenders", default=",".join(ALL_CONTENDERS))
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3600, help="Seconds per run.")
    p.add_argument("--keras_max_rows", type=int, default=2_000_000)
    p.add_argument("--beam_prep_cmd", default=DEFAULT_BEAM_PREP_CMD,
                   help="Template with {spec} {input} {output} {format}.")
    p.add_argument("--beam_prep_args", default="", help="Extra flags for every beam_prep run.")
    p.add_argument("--tft_args", default="--runner=" + PINNED_RUNNER,
                   help="Beam flags for TFT (default: the runner beam-prep analyze pins).")
    p.add_argument("--no_rank_check", action="store_true")
    p.add_argument("--reuse_small", default=None,
                   help="results.json of an earlier run on this machine: reuse its successful "
                        "small-size runs instead of running them again (saves TFT start-ups).")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    formats = [f for f in args.formats.split(",") if f]
    contenders = [c for c in args.contenders.split(",") if c]
    for c in contenders:
        if c not in ALL_CONTENDERS:
            p.error(f"--contenders: unknown {c!r}; choose from {ALL_CONTENDERS}")
    out = os.path.abspath(args.out) if args.out else os.path.join(
        HERE, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + f"_{args.rows}")
    os.makedirs(out, exist_ok=True)
    sizes = {args.small_rows: args.data_small or data_dir_for(args.data_root, args.small_rows),
             args.rows: args.data or data_dir_for(args.data_root, args.rows)}
    for rows, path in sizes.items():
        ensure_data(path, rows, formats, args.seed)

    skipped: dict[str, str] = {}
    reason = beam_prep_available()
    if reason:
        for c in ("beam_prep", "beam_prep_mp2"):
            if c in contenders:
                contenders.remove(c)
                skipped[c] = reason
                print(f"[bench] skipping {c}: {reason}", flush=True)
    if "keras" in contenders and args.rows > args.keras_max_rows:
        skipped["keras"] = f"{args.rows:,} rows > --keras_max_rows={args.keras_max_rows:,}"

    runs: list[dict[str, Any]] = []
    reused: set[tuple[str, str]] = set()
    if args.reuse_small:
        with open(args.reuse_small) as f:
            for r in json.load(f)["runs"]:
                if r["rows"] == args.small_rows and r["rc"] == 0 and r["contender"] in contenders:
                    runs.append({**r, "reused_from": args.reuse_small})
                    reused.add((r["contender"], r["format"]))
    for rep in range(args.repeats):
        for rows, data in sizes.items():
            for fmt in formats:
                for c in contenders:
                    if c in PARQUET_ONLY and fmt != "parquet":
                        continue
                    if c == "keras" and rows > args.keras_max_rows:
                        continue
                    if rows == args.small_rows and (c, fmt) in reused:
                        continue
                    run_id = f"{c}_{fmt}_{rows}_r{rep}"
                    target = os.path.join(out, "outputs", run_id)
                    cmd = command(c, data, fmt, target, args)
                    log = os.path.join(out, "logs", run_id + ".log")
                    os.makedirs(os.path.dirname(log), exist_ok=True)
                    print(f"[bench] {run_id}: {shlex.join(cmd)}", flush=True)
                    m = measure(cmd, log, args.timeout)
                    rec = {"contender": c, "format": fmt, "rows": rows, "repeat": rep,
                           "command": shlex.join(cmd), "output": target, "log": log, **m}
                    inner = os.path.join(target, "timing.json")
                    if os.path.exists(inner):
                        with open(inner) as f:
                            rec["inner"] = json.load(f)
                    if m["rc"] != 0:
                        print(f"[bench]   FAILED rc={m['rc']}; log tail:\n{_tail(log)}",
                              flush=True)
                    print(f"[bench]   wall {m['wall_s']:.1f} s, peak RSS "
                          f"{m['peak_rss_mb']:,.0f} MB", flush=True)
                    runs.append(rec)
    result = {"command": shlex.join([sys.executable] + sys.argv), "rows": args.rows,
              "small_rows": args.small_rows, "machine": machine(), "runs": runs,
              "skipped": skipped, "summary": summarize(runs, args.small_rows, args.rows)}
    result["agreement"] = agreement(runs, args.rows, sizes[args.rows], not args.no_rank_check)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    md = markdown(result)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(md)
    print(md)
    print(f"[bench] results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
