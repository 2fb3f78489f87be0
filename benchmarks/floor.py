"""Single-process floor: the spec's statistics straight from Parquet, no Beam.

Reads the Parquet files one row group at a time (pyarrow), and for each feature:

* ``kind: string``: ``pyarrow.compute.value_counts`` per row group, merged with a grouped sum
  whenever the pending partial counts grow past the merged table; then the top_k by count
  descending, ties by token bytes descending (TFT's order); empty tokens and tokens holding
  ``\\n``/``\\r`` are dropped as TFT drops them.
* ``kind: numeric``: count/mean/M2 per row group in float64, merged with the parallel (Chan)
  formula (population variance); boundaries from ``tfx_bsl.sketches.QuantilesSketch`` with the
  same epsilon and ``max_num_elements = 2**32`` as TFT, ``num_buckets - 1`` interior points.

Missing cells (null) and NaN are skipped. pyarrow may use its own threads to decode Parquet; the
Python work is single-threaded.

Example:
    $ python benchmarks/floor.py --data benchmarks/data/criteo_100k --dump /tmp/floor_dump
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import load_spec_features, parquet_files, write_dump  # noqa: E402


class TokenCounter:
    """Exact token counts of one column, merged across row groups.

    Example:
        >>> c = TokenCounter()
        >>> c.add(pa.array(["a", "b", "a", None]))
        >>> c.top_k(1)
        ['a']
    """

    def __init__(self) -> None:
        self._merged: pa.Table | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def add(self, column: pa.Array | pa.ChunkedArray) -> None:
        vc = pc.value_counts(column)
        table = pa.table({"v": vc.field("values"), "n": vc.field("counts")}).filter(
            pc.is_valid(vc.field("values")))
        self._pending.append(table)
        self._pending_rows += table.num_rows
        merged_rows = 0 if self._merged is None else self._merged.num_rows
        if self._pending_rows > max(merged_rows, 1_000_000):
            self._compact()

    def _compact(self) -> None:
        parts = self._pending + ([self._merged] if self._merged is not None else [])
        if not parts:
            return
        table = pa.concat_tables(parts)
        agg = table.group_by("v").aggregate([("n", "sum")])
        self._merged = pa.table({"v": agg["v"], "n": agg["n_sum"]})
        self._pending, self._pending_rows = [], 0

    def counts(self) -> pa.Table:
        self._compact()
        if self._merged is None:
            return pa.table({"v": pa.array([], pa.string()), "n": pa.array([], pa.int64())})
        return self._merged

    def top_k(self, k: int | None) -> list[str]:
        table = self.counts()
        bad = pc.or_(pc.equal(table["v"], ""), pc.match_substring_regex(table["v"], "[\n\r]"))
        table = table.filter(pc.invert(bad))
        keys = [("n", "descending"), ("v", "descending")]
        if k is not None and k < table.num_rows:
            idx = pc.select_k_unstable(table, k=k, sort_keys=keys)
        else:
            idx = pc.sort_indices(table, sort_keys=keys)
        return table["v"].take(idx).to_pylist()


class Moments:
    """count/mean/M2 in float64, merged with Chan et al.'s parallel formula.

    Example:
        >>> m = Moments(); m.add(np.array([1.0, 2.0])); m.add(np.array([3.0]))
        >>> m.count, m.mean, m.variance
        (3, 2.0, 0.6666666666666666)
    """

    def __init__(self) -> None:
        self.count, self.mean, self._m2 = 0, 0.0, 0.0

    def add(self, x: np.ndarray) -> None:
        n = len(x)
        if n == 0:
            return
        mean_b = float(x.mean())
        m2_b = float(((x - mean_b) ** 2).sum())
        total = self.count + n
        delta = mean_b - self.mean
        self.mean += delta * n / total
        self._m2 += m2_b + delta * delta * self.count * n / total
        self.count = total

    @property
    def variance(self) -> float:
        return self._m2 / self.count if self.count else float("nan")


def run(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description="Single-process floor (pyarrow/numpy, no Beam).")
    p.add_argument("--data", required=True, help="Directory written by gen_criteo.py.")
    p.add_argument("--spec", default=None, help="Spec YAML; default DATA/spec.yaml.")
    p.add_argument("--dump", required=True)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    from tfx_bsl.sketches import QuantilesSketch

    cats, nums = load_spec_features(args.spec or os.path.join(args.data, "spec.yaml"))
    columns = sorted({c for _, c, _ in cats} | {c for _, c, _, _ in nums})
    counters = {name: TokenCounter() for name, _, _ in cats}
    moments = {name: Moments() for name, _, _, _ in nums}
    sketches = {name: QuantilesSketch(eps, 1 << 32, 1)
                for name, _, nb, eps in nums if nb}
    t_start = time.perf_counter()
    rows = 0
    for path in parquet_files(args.data):
        pf = pq.ParquetFile(path)
        for rg in range(pf.num_row_groups):
            table = pf.read_row_group(rg, columns=columns)
            rows += table.num_rows
            for name, column, _ in cats:
                counters[name].add(table[column])
            for name, column, _, _ in nums:
                values = table[column].drop_null().to_numpy().astype(np.float64, copy=False)
                values = values[~np.isnan(values)]
                moments[name].add(values)
                if name in sketches:
                    sketches[name].AddValues(pa.array(values))
    t_read = time.perf_counter()
    vocabs = {name: counters[name].top_k(top_k) for name, _, top_k in cats}
    stats = {}
    for name, _, num_buckets, _ in nums:
        m = moments[name]
        s = {"count": m.count, "mean": m.mean, "variance": m.variance}
        if name in sketches:
            q = sketches[name].GetQuantiles(num_buckets).to_pylist()[0]
            s["boundaries"] = [float(np.float32(v)) for v in q[1:-1]]
        stats[name] = s
    t_end = time.perf_counter()
    timing = {"rows": rows, "import_seconds": t_start - t0, "scan_seconds": t_read - t_start,
              "finalize_seconds": t_end - t_read, "analyze_seconds": t_end - t_start}
    write_dump(args.dump, vocabs, stats, timing)
    return timing


if __name__ == "__main__":
    print(run())
