"""Cost of derived-feature expressions on the Arrow side, next to the per-split analysis.

Evaluates four typical expressions (a log, a ratio, a cleaned string, a cross) over every
RecordBatch of one gen_criteo.py Parquet file with ``beam_prep.expr.arrow.evaluate`` and,
with ``--split``, times ``bench_split.run_once`` (the existing analysis of that file) too.
The expression time excludes reading the file (the analysis reads it anyway).

Example:
    $ python benchmarks/bench_expr.py --data /tmp/criteo_1m --split
    expressions: 1,000,000 rows in 0.41 s ...
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from beam_prep.expr import check, parse  # noqa: E402
from beam_prep.expr.arrow import column_types, evaluate  # noqa: E402

EXPRESSIONS = {
    "log1p(price)": "log1p(i1)",
    "price / (qty + 1)": "i2 / (i3 + 1)",
    "lower(strip(city))": "lower(strip(c1))",
    "cross(country, device)": "cross(c2, c3)",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="A gen_criteo.py output directory.")
    parser.add_argument("--batch_size", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--split", action="store_true", help="Also time bench_split.")
    args = parser.parse_args(argv)
    path = sorted(glob.glob(os.path.join(args.data, "parquet", "*.parquet")))[0]
    table = pq.read_table(path)
    batches = table.to_batches(max_chunksize=args.batch_size)
    types = column_types(table.schema)
    trees = {k: check(parse(v), types) for k, v in EXPRESSIONS.items()}
    per_expr = {k: float("inf") for k in trees}
    for _ in range(args.repeats):
        for k, tree in trees.items():
            started = time.perf_counter()
            for batch in batches:
                evaluate(tree, batch)
            per_expr[k] = min(per_expr[k], time.perf_counter() - started)
    total = sum(per_expr.values())
    for k, s in per_expr.items():
        print(f"  {k:<26} {s:.3f} s")
    print(f"expressions: {table.num_rows:,} rows, 4 expressions in {total:.3f} s "
          f"(best of {args.repeats}, batch {args.batch_size})")
    if args.split:
        import yaml

        from beam_prep.spec import Spec
        from benchmarks.bench_split import run_once

        with open(os.path.join(args.data, "spec.yaml"), encoding="utf-8") as f:
            spec = Spec.from_dict(yaml.safe_load(f))
        best = min(run_once(spec, path, "parquet", args.batch_size)[1]
                   for _ in range(args.repeats))
        print(f"analysis split (bench_split): {best:.2f} s; expressions add "
              f"{100 * total / best:.1f}%")


if __name__ == "__main__":
    main()
