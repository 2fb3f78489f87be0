"""Per-key buckets benchmark: ``per_key`` + ``num_buckets`` against ``per_key`` alone.

Uses the data of :mod:`benchmarks.per_key_stats` (``--rows`` rows over ``--keys`` keys,
two-decimal lognormal prices), runs ``beam-prep analyze`` with
``{name: price, kind: numeric, per_key: store[, num_buckets: N]}`` as a separate process
and measures wall and CPU time and peak RSS (``ru_maxrss``). Checks: the bucket file holds
``--keys`` lines and the boundaries of 200 sampled keys equal numpy's
(``sorted[min(i * n // N, n - 1)]``; exact while a key has at most 2,048 distinct values,
else in the exact quantile's grid cell).

Example:
    nice -n 10 python benchmarks/per_key_buckets.py --rows 1000000 --keys 100000 --buckets 10
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import numpy as np
import pyarrow.parquet as pq

from benchmarks.per_key_stats import generate, run_measured

SPEC = "features:\n  - {name: price, kind: numeric, per_key: store, num_buckets: %d}\n"


def check(artifacts: str, data: str, keys: int, buckets: int) -> dict:
    from beam_prep import Artifacts
    from beam_prep.analyzers.per_key_buckets.hist import sortable
    from beam_prep.io.contract.per_key_buckets_file import rows_of

    table = pq.ParquetDataset(sorted(glob.glob(os.path.join(data, "*.parquet")))).read()
    store = np.asarray(table.column("store").to_pylist(), object)
    price = table.column("price").to_numpy()
    distinct = np.unique(store)
    sample = set(np.random.default_rng(1).choice(distinct, min(200, distinct.size),
                                                  replace=False))
    n = exact = 0
    for key, _, level, bounds in rows_of(Artifacts(artifacts), "price"):
        n += 1
        exact += level == 0
        if key in sample:
            x = np.sort(price[store == key])
            want = [float(x[min(i * x.size // buckets, x.size - 1)]) for i in range(1, buckets)]
            if level == 0:
                assert bounds == want, key
            else:  # the same grid cell as the exact quantile
                shift = np.uint64(level)
                assert np.array_equal(sortable(np.array(bounds)) >> shift,
                                      sortable(np.array(want)) >> shift), key
    assert n == keys, (n, keys)
    entry = Artifacts(artifacts).manifest["features"]["price"]["files"]["per_key_buckets"]
    return {"keys": n, "exact_keys": exact, "bucket_file_bytes": entry["bytes"],
            "sha256": entry["sha256"]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--buckets", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="benchmarks/data/per_key")
    p.add_argument("--baseline", action="store_true",
                   help="the same data and feature without num_buckets (per_key alone)")
    args = p.parse_args(argv)
    data = os.path.join(args.out, f"rows{args.rows}_keys{args.keys}")
    generate(data, args.rows, args.keys, args.seed)
    spec = os.path.join(args.out, "buckets_spec.yaml")
    text = SPEC % args.buckets
    with open(spec, "w") as f:
        f.write(text.replace(f", num_buckets: {args.buckets}", "") if args.baseline else text)
    artifacts = os.path.join(args.out, f"artifacts_buckets_{args.rows}_{args.keys}"
                             + ("_baseline" if args.baseline else ""))
    cmd = [sys.executable, "-m", "beam_prep.cli", "analyze", "--spec", spec, "--input",
           os.path.join(data, "*.parquet"), "--output", artifacts, "--overwrite", "--quiet",
           "--no_report"]
    measured = run_measured(cmd)
    result = {"rows": args.rows, "keys": args.keys,
              "num_buckets": None if args.baseline else args.buckets, **measured,
              "rows_per_s": round(args.rows / measured["wall_s"]),
              **({} if args.baseline else check(artifacts, data, args.keys, args.buckets))}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
