"""Benchmark: ``beam-prep transform`` vs TF Transform's ``TransformDataset`` on the same data.

Both read the same Parquet files written by ``gen_criteo.py`` (26 string features with
``top_k``, 13 numeric features with z-score and ``num_buckets``: 52 encoded outputs) and
write tf.Example TFRecords of the encoded features, on the same Beam runner (the in-process
FnApiRunner). Each side runs in its own process (importing TF Transform switches tf.keras to
Keras 2) and times only its transform pipeline, after imports and after the analysis that
made its artifacts / transform_fn: CPU time (``process_time``: every thread of the process)
and wall time. The machine is shared, so CPU time is the number to compare.

Example:
    $ python benchmarks/bench_transform.py --data benchmarks/data/criteo_200k \
        --work /tmp/bench_transform
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
RUNNER = "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"


def _cpu() -> float:
    """User + system CPU seconds of this process (every thread) and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def ours(data: str, work: str, out_json: str, analyze_data: str) -> dict:
    """Analysis of ``analyze_data`` (not timed, reused when present), then the timed
    transform job over ``data``, in this process."""
    from beam_prep.pipelines import analyze, transform

    parquet = os.path.join(data, "parquet", "*.parquet")
    artifacts = os.path.join(work, "artifacts")
    if not os.path.exists(os.path.join(artifacts, "manifest.json")):
        analyze.run(["--spec", os.path.join(analyze_data, "spec.yaml"), "--input",
                     os.path.join(analyze_data, "parquet", "*.parquet"),
                     "--output", artifacts, RUNNER])
    output = os.path.join(work, "ours_out")
    shutil.rmtree(output, ignore_errors=True)
    cpu0, wall0 = _cpu(), time.perf_counter()
    transform.run(["--artifacts", artifacts, "--input", parquet, "--output", output, RUNNER])
    timing = {"cpu_seconds": _cpu() - cpu0,
              "wall_seconds": time.perf_counter() - wall0}
    with open(os.path.join(output, "transform.json")) as f:
        manifest = json.load(f)
    timing["rows"] = manifest["counts"]["rows_written"]
    timing["bytes"] = sum(x["bytes"] for x in manifest["files"])
    with open(out_json, "w") as f:
        json.dump(timing, f)
    return timing


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="Directory written by gen_criteo.py.")
    p.add_argument("--work", required=True, help="Scratch folder (artifacts, outputs).")
    p.add_argument("--side", choices=("both", "ours", "tft"), default="both")
    p.add_argument("--analyze_data", default=None,
                   help="Directory whose data both analyses read (artifacts / transform_fn, "
                        "kept in --work and reused); default --data. Lets a large table be "
                        "transformed without TFT's long analysis of it.")
    a = p.parse_args(argv)
    os.makedirs(a.work, exist_ok=True)
    with open(os.path.join(a.data, "meta.json")) as f:
        rows = json.load(f)["rows"]
    analyze_data = a.analyze_data or a.data
    results = {}
    if a.side in ("both", "ours"):
        out = os.path.join(a.work, "ours.json")
        subprocess.run([sys.executable, "-c",
                        "import sys; sys.path.insert(0, sys.argv[1]); "
                        "from benchmarks.bench_transform import ours; "
                        "ours(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])",
                        os.path.dirname(HERE), a.data, a.work, out, analyze_data], check=True)
        with open(out) as f:
            results["beam_prep"] = json.load(f)
    if a.side in ("both", "tft"):
        out = os.path.join(a.work, "tft.json")
        if os.path.exists(out):
            os.remove(out)
        # TensorFlow may crash in its own teardown after the timings are written (seen:
        # SIGSEGV at exit): the JSON file, not the exit code, says whether the run finished.
        subprocess.run([sys.executable, os.path.join(HERE, "tft_transform_baseline.py"),
                        "--data", a.data, "--output", os.path.join(a.work, "tft_out"),
                        "--json", out, "--analyze_data", analyze_data,
                        "--transform_fn", os.path.join(a.work, "tft_transform_fn")],
                       check=False)
        with open(out) as f:
            results["tft"] = json.load(f)
    for name, r in results.items():
        r["rows_per_cpu_second"] = rows / r["cpu_seconds"]
        print(f"{name:<10} {rows:,} rows  CPU {r['cpu_seconds']:8.1f} s  wall "
              f"{r['wall_seconds']:8.1f} s  {r['rows_per_cpu_second']:,.0f} rows/CPU-s")
    if len(results) == 2:
        ratio = results["tft"]["cpu_seconds"] / results["beam_prep"]["cpu_seconds"]
        print(f"beam_prep / TFT throughput (CPU): {ratio:.1f}x")
        results["speedup_cpu"] = ratio
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
