"""Cost of derived features (issue 15): 4 `expr:` features vs the same 4 precomputed columns.

Writes one Parquet file with raw columns and, next to them, the derived values computed
upstream (the "separate ETL" alternative); analyses it with spec A (4 plain features on the
precomputed columns) and spec B (the same 4 features as `expr:` over the raw columns), in
alternation, and prints the wall times. Same analysers, same feature kinds: the difference is
the expression evaluation (pyarrow.compute per batch) plus reading the raw columns.

Example:
    $ python benchmarks/derived_cost.py --rows 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

BASE = """\
  - {name: price, kind: numeric, num_buckets: 10}
  - {name: country, kind: string}
"""
PLAIN = BASE + """\
  - {name: lp, kind: numeric, column: pre_lp}
  - {name: ratio, kind: numeric, column: pre_ratio}
  - {name: city, kind: string, column: pre_city}
  - {name: cy, kind: string, column: pre_cy}
"""
DERIVED = BASE + """\
  - {name: lp, kind: numeric, expr: "log1p(price)"}
  - {name: ratio, kind: numeric, expr: "price / (qty + 1)"}
  - {name: city, kind: string, expr: "lower(strip(city_raw))"}
  - {name: cy, kind: string, expr: "cross(country, str(year))"}
"""


def write(path: str, rows: int) -> None:
    rng = np.random.default_rng(0)
    price = rng.lognormal(2.0, 1.0, rows)
    qty = rng.integers(0, 20, rows)
    cities = np.array([f" City{i} " if i % 3 else f"CITY{i}" for i in range(2000)])
    city = pa.array(cities[rng.zipf(1.3, rows) % 2000])
    country = pa.array(np.array([f"C{i}" for i in range(200)])[rng.integers(0, 200, rows)])
    year = rng.integers(2000, 2025, rows)
    table = pa.table({
        "price": price, "qty": qty, "city_raw": city, "country": country, "year": year,
        "pre_lp": np.log1p(price), "pre_ratio": price / (qty + 1.0),
        "pre_city": pc.ascii_lower(pc.ascii_trim_whitespace(city)),
        "pre_cy": pc.binary_join_element_wise(country, pc.cast(pa.array(year), pa.string()),
                                              "|"),
    })
    pq.write_table(table, path, row_group_size=65536)


def run(spec: str, data: str, out: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "beam_prep.cli", "analyze", "--spec", spec,
                    "--input", data, "--output", out, "--overwrite", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    root = tempfile.mkdtemp(prefix="derived_cost_")
    data = os.path.join(root, "data.parquet")
    write(data, args.rows)
    specs = {}
    for name, body in (("plain", PLAIN), ("derived", DERIVED)):
        specs[name] = os.path.join(root, f"{name}.yaml")
        with open(specs[name], "w") as f:
            f.write("features:\n" + body)
    times: dict[str, list[float]] = {"plain": [], "derived": []}
    for _ in range(args.repeats):
        for name in ("plain", "derived"):
            times[name].append(run(specs[name], data, os.path.join(root, name)))
    for name, t in times.items():
        print(f"{name:8s} " + " ".join(f"{x:.1f}s" for x in t) + f"  min {min(t):.1f}s")
    print(f"derived / plain (min): {min(times['derived']) / min(times['plain']):.3f}")


if __name__ == "__main__":
    main()
