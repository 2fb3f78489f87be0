"""Per-key consumers at scale: the readers of one artifact directory's per-key file.

Each step runs as its own process (wall, CPU s and peak RSS ``ru_maxrss`` of that process,
as :mod:`per_key_stats` measures the analysis), on an artifact directory written by
``benchmarks/per_key_stats.py`` (feature ``price`` with ``per_key: store``):

* ``generated``: render the Keras module, import it, ``build_preprocessor()`` (reads the
  file and builds the ``StaticHashTable``), then encode 100k rows (timed apart);
* ``runtime``: the same through the runtime twin (``layers_from_artifacts``);
* ``transform``: the transform job's numpy twin (``BatchEncoder``), then 100k rows;
* ``report``: ``beam-prep report`` (top keys only);
* ``diff``: ``beam-prep diff DIR DIR`` (the streaming merge-join over every key).

Example:
    nice -n 10 python benchmarks/per_key_consumers.py \\
        benchmarks/data/per_key/artifacts_4000000_1000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROWS = 100_000

_STEP = r"""
import json, resource, sys, time
import numpy as np
kind, art, work = sys.argv[1:4]
t0, c0 = time.monotonic(), time.process_time()
rng = np.random.default_rng(0)
keys = np.array([f"store_{i}" for i in rng.integers(0, 2 * 10**7, %(rows)d)], object)
prices = rng.lognormal(3.0, 1.0, %(rows)d)
if kind in ("generated", "runtime"):
    if kind == "generated":
        from beam_prep.codegen.render import generate
        from importlib import util
        generate(art, work + "/pp.py")
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
""" % {"rows": ROWS}


def measured(cmd: list[str]) -> dict:
    """Wall, CPU seconds and peak RSS of one child process (and its JSON stdout, if any)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
           "peak_rss_gb": round(after.ru_maxrss * 1024 / 1e9, 2)}
    last = done.stdout.strip().splitlines()[-1:] if done.stdout else []
    if last and last[0].startswith("{"):
        out.update(json.loads(last[0]))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("artifacts")
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
            cmd = [*cli, "diff", "--json", args.artifacts, args.artifacts]
        else:
            cmd = [sys.executable, "-c", _STEP, step, args.artifacts, work]
        results[step] = measured(cmd)
        print(step, json.dumps(results[step]), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
