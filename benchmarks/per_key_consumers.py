"""Per-key consumers at scale: the readers of one artifact directory's per-key file.

Each step runs as its own process (wall, CPU s and peak RSS ``ru_maxrss`` of that process,
as :mod:`per_key_stats` measures the analysis), on an artifact directory written by
``benchmarks/per_key_stats.py`` (feature ``price`` with ``per_key: store``):

* ``generated``: render the Keras module, import it, ``build_preprocessor()`` (reads the
  file and builds the ``StaticHashTable``), then encode 100k rows (timed apart);
* ``runtime``: the same through the runtime twin (``layers_from_artifacts``);
* ``transform``: the transform job's numpy twin (``BatchEncoder``), then 100k rows;
* ``report``: ``beam-prep report`` (top keys only);
* ``diff``: ``beam-prep diff DIR OTHER`` (the streaming merge-join over every key).

Example:
    nice -n 10 python benchmarks/per_key_consumers.py \\
        benchmarks/data/per_key/artifacts_4000000_1000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROWS = 100_000

_STEP = r"""
import json, resource, sys, time
import numpy as np
kind, art, work, rows = *sys.argv[1:4], int(sys.argv[4])
rng = np.random.default_rng(0)
keys = np.array([f"store_{i}" for i in rng.integers(0, 2 * 10**7, rows)], object)
prices = rng.lognormal(3.0, 1.0, rows)
if kind in ("generated", "runtime"):
    if kind == "generated":
        from beam_prep.codegen.render import generate
        from importlib import util
        generate(art, work + "/pp.py", overwrite=True)  # a scratch folder
        spec = util.spec_from_file_location("pp_bench", work + "/pp.py")
        pp = util.module_from_spec(spec)
        spec.loader.exec_module(pp)
    else:
        from beam_prep.codegen.runtime import layers_from_artifacts
        pp = layers_from_artifacts(art)
    built = time.monotonic()
    model = pp.build_preprocessor()
    load = time.monotonic() - built
    batch = {"store": keys.reshape(-1, 1), "price": prices.reshape(-1, 1)}
    t1 = time.monotonic()
    out = np.asarray(model(pp.raw_columns(batch))["price"])
    encode = time.monotonic() - t1
else:
    import pyarrow as pa
    from beam_prep.transform.layers import BatchEncoder
    built = time.monotonic()
    enc = BatchEncoder(art)
    load = time.monotonic() - built
    batch = pa.record_batch({"store": pa.array(keys.tolist()), "price": pa.array(prices)})
    t1 = time.monotonic()
    out = enc.encode(batch)["price"].values
    encode = time.monotonic() - t1
print(json.dumps({"load_s": round(load, 2), "encode_100k_s": round(encode, 2)}))
"""


def measured(cmd: list[str]) -> dict:
    """Wall, CPU seconds and peak RSS (``ru_maxrss``) of one child process, read by
    ``os.wait4`` for that child alone (and its JSON stdout, if any)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 3):  # diff exits 3 on drift
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    out = {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
           "peak_rss_gb": round(usage.ru_maxrss * 1024 / 1e9, 2)}
    last = stdout.strip().splitlines()[-1:] if stdout else []
    if last and last[0].startswith("{"):
        out.update(json.loads(last[0]))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("artifacts")
    p.add_argument("--other", help="the NEW side of diff (default: the same directory)")
    p.add_argument("--steps", nargs="*",
                   default=["report", "diff", "transform", "runtime", "generated"])
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="per_key_consumers_")
    cli = [sys.executable, "-m", "beam_prep.cli"]
    results = {}
    for step in args.steps:
        if step == "report":
            cmd = [*cli, "report", args.artifacts, "--output", os.path.join(work, "r.html")]
        elif step == "diff":
            cmd = [*cli, "diff", args.artifacts, args.other or args.artifacts]
        else:
            cmd = [sys.executable, "-c", _STEP, step, args.artifacts, work, str(ROWS)]
        results[step] = measured(cmd)
        print(step, json.dumps(results[step]), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
