"""Per-split analysis CPU of the same features with and without instance weights.

One generated Parquet file (string, integer, text with bigrams, numeric with 10 buckets, and
a weight column) goes through ``AnalyzeSplitFn`` in-process, first with a plain spec, then
with every feature weighted by ``w``. Reports the best of ``--repeats`` process CPU times
(all threads), so a change to the shared accumulators can be judged for both paths.

Example:
    $ python benchmarks/bench_weighted_split.py --rows 400000
    plain 0.54 s CPU, weighted 1.01 s CPU (400,000 rows)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from beam_prep.analyzers.split_fn import AnalyzeSplitFn  # noqa: E402
from beam_prep.io.inputs.readers import list_splits  # noqa: E402
from beam_prep.spec import Spec  # noqa: E402

FEATURES = [{"name": "city", "kind": "string"}, {"name": "code", "kind": "integer"},
            {"name": "words", "kind": "text", "ngrams": 2},
            {"name": "x", "kind": "numeric", "num_buckets": 10}]


def write_data(path: str, rows: int, seed: int = 1) -> None:
    """A Parquet file of ``rows`` rows: Zipf cities, integer codes, short texts, lognormal
    values and gamma-distributed weights."""
    rng = np.random.default_rng(seed)
    words = np.array(["a", "b", "c", "dd", "e", "ff", "g", "hh", "ii", "j"])
    texts = [" ".join(rng.choice(words, int(n))) for n in rng.integers(0, 8, rows)]
    table = pa.table({"city": [f"c{int(k)}" for k in rng.zipf(1.3, rows) % 50000],
                      "code": rng.integers(0, 5000, rows), "words": texts,
                      "x": rng.lognormal(1.0, 1.5, rows), "w": rng.gamma(1.0, 2.0, rows)})
    pq.write_table(table, path, row_group_size=100_000)


def split_cpu(spec: Spec, path: str, repeats: int) -> float:
    """Best process CPU seconds of analysing every split of ``path``."""
    best = float("inf")
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            fn = AnalyzeSplitFn(spec.to_dict(), batch_size=65536, num_partitions=16,
                                temp_dir=tmp, spill_rows=8192)
            fn.setup()
            started = time.process_time()
            for split in list_splits(path, "parquet"):
                for _ in fn.process(split):
                    pass
            best = min(best, time.process_time() - started)
            fn.teardown()
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=400_000, help="Rows of the generated file.")
    parser.add_argument("--repeats", type=int, default=3, help="Runs per spec; the best counts.")
    parser.add_argument("--data", default=None,
                        help="Parquet file to write and read (default: a temporary file).")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.data or os.path.join(tmp, "data.parquet")
        if not os.path.exists(path):
            write_data(path, args.rows)
        plain = Spec.from_dict({"version": 1, "features": FEATURES})
        weighted = Spec.from_dict({"version": 1, "features": [
            {**f, "weights": "w"} for f in FEATURES]})
        a, b = split_cpu(plain, path, args.repeats), split_cpu(weighted, path, args.repeats)
    print(f"plain {a:.2f} s CPU, weighted {b:.2f} s CPU ({args.rows:,} rows)")


if __name__ == "__main__":
    main()
