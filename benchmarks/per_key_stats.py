"""Per-key statistics benchmark: one numeric column grouped by a key column with many keys.

Generates Parquet data deterministically (in chunks): ``--rows`` rows over ``--keys`` keys
(every key occurs: a permutation interleaved with uniform draws), a value column of
two-decimal prices, then runs ``beam-prep analyze`` with ``per_key: store`` as a separate
process, measuring its wall and CPU time and peak RSS (``ru_maxrss``).
Checks: the per-key file holds exactly ``--keys`` lines, sorted, and the statistics of
1,000 sampled keys equal a numpy group-by of the generated rows (count exact; mean and
variance within 1e-12 relative: numpy sums pairwise, the analysis exactly).

Example:
    nice -n 10 python benchmarks/per_key_stats.py --rows 4000000 --keys 1000000 \\
        --out benchmarks/data/per_key
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def run_measured(cmd: list[str]) -> dict:
    """Runs a command; wall and CPU seconds and the kernel's peak RSS of the largest child
    (the analysis runs in one process with the default runner: its whole footprint)."""
    import resource
    import subprocess
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(cmd, check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "peak_rss_gb": round(after.ru_maxrss * 1024 / 1e9, 2),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2)}

CHUNK = 2_000_000
SPEC = "features:\n  - {name: price, kind: numeric, per_key: store}\n"


def generate(out: str, rows: int, keys: int, seed: int) -> dict:
    """Parquet files with ``store`` and ``price``; returns sampled keys' expected stats."""
    os.makedirs(out, exist_ok=True)
    meta_path = os.path.join(out, "expected.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if (meta["rows"], meta["keys"], meta["seed"]) == (rows, keys, seed):
            return meta
    rng = np.random.default_rng(seed)
    ids = np.concatenate([rng.permutation(keys), rng.integers(0, keys, rows - keys)])
    prices = np.round(rng.lognormal(3.0, 1.0, rows), 2)
    sample = rng.choice(keys, size=min(1000, keys), replace=False)
    for i, start in enumerate(range(0, rows, CHUNK)):
        part = ids[start:start + CHUNK]
        store = pc.binary_join_element_wise(pa.scalar("store_"), pc.cast(pa.array(part),
                                                                         pa.string()),
                                            pa.scalar(""))
        pq.write_table(pa.table({"store": store, "price": prices[start:start + CHUNK]}),
                       os.path.join(out, f"part-{i:04d}.parquet"))
    expected = {}
    chosen = np.isin(ids, sample)
    sub_ids, sub_prices = ids[chosen], prices[chosen]
    order = np.argsort(sub_ids, kind="stable")
    sub_ids, sub_prices = sub_ids[order], sub_prices[order]
    starts = np.flatnonzero(np.diff(sub_ids, prepend=-1))
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), sub_ids.size]):
        v = sub_prices[a:b]
        expected[f"store_{sub_ids[a]}"] = [int(v.size), float(v.mean()), float(v.var()),
                                           float(v.min()), float(v.max())]
    meta = {"rows": rows, "keys": keys, "seed": seed, "expected": expected}
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return meta


def check(artifacts: str, meta: dict) -> dict:
    from beam_prep import Artifacts
    from beam_prep.io.contract.per_key_file import rows_of

    art = Artifacts(artifacts)
    want = meta["expected"]
    n, worst = 0, 0.0
    for key, count, mean, variance, low, high in rows_of(art, "price"):
        n += 1
        if key in want:
            c, m, v, lo, hi = want[key]
            assert (count, low, high) == (c, lo, hi), key
            worst = max(worst, abs(mean - m) / abs(m), abs(variance - v) / max(v, 1e-300))
    assert n == meta["keys"], (n, meta["keys"])
    assert worst < 1e-12, worst
    entry = art.manifest["features"]["price"]["files"]["per_key"]
    return {"keys": n, "file_bytes": entry["bytes"], "sha256": entry["sha256"],
            "worst_relative_error_vs_numpy": worst}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=4_000_000)
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="benchmarks/data/per_key")
    p.add_argument("--extra", nargs="*", default=[], help="more analyze flags")
    p.add_argument("--baseline", action="store_true",
                   help="the same data and feature without per_key (the overhead's reference)")
    args = p.parse_args(argv)
    data = os.path.join(args.out, f"rows{args.rows}_keys{args.keys}")
    meta = generate(data, args.rows, args.keys, args.seed)
    spec = os.path.join(args.out, "spec.yaml")
    with open(spec, "w") as f:
        f.write(SPEC.replace(", per_key: store", "") if args.baseline else SPEC)
    artifacts = os.path.join(args.out, f"artifacts_{args.rows}_{args.keys}"
                             + ("_baseline" if args.baseline else ""))
    cmd = [sys.executable, "-m", "beam_prep.cli", "analyze", "--spec", spec, "--input",
           os.path.join(data, "*.parquet"), "--output", artifacts, "--overwrite", "--quiet",
           "--no_report", *args.extra]
    result = {"rows": args.rows, "keys": args.keys, "per_key": not args.baseline,
              **run_measured(cmd), **({} if args.baseline else check(artifacts, meta))}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
