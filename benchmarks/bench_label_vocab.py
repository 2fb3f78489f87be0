"""Cost of the label-aware vocabulary path (``labels:``) beside the count-ranked one.

Times, in this process, the split analysis of one Parquet split (``AnalyzeSplitFn``: read,
count) for a string feature counted plainly, with a binary label and with a 5-class label,
then the scoring step (``label.vocab.rank``: mutual information, adjusted or not) on the
merged label table. Prints one JSON line per measurement (best of ``--repeat``).

Usage::

    nice -n 10 python benchmarks/bench_label_vocab.py --rows 2000000 --tokens 50000
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from beam_prep.analyzers.label.counts import merge_label_tables
from beam_prep.analyzers.label.vocab import rank
from beam_prep.analyzers.split_fn import AnalyzeSplitFn
from beam_prep.io.inputs.readers import Split
from beam_prep.spec import Spec, StringFeature


def _data(path: str, rows: int, tokens: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    ids = (rng.zipf(1.3, rows) - 1) % tokens
    pq.write_table(pa.table({
        "city": pa.array([f"t{k}" for k in range(tokens)]).take(pa.array(ids)),
        "clicked": pa.array((rng.random(rows) < 0.2 + 0.3 * (ids % 7 == 0)).astype(np.int64)),
        "klass": pa.array(((ids + rng.integers(0, 3, rows)) % 5).astype(np.int64))}), path)


def _split_seconds(spec: Spec, path: str, repeat: int) -> tuple[float, list]:
    fn = AnalyzeSplitFn(spec.to_dict(), batch_size=65536, num_partitions=1)
    fn.setup()
    best, out = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        out = list(fn.process(Split(path, "parquet")))
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--tokens", type=int, default=50_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    path = os.path.join(tempfile.mkdtemp(), "data.parquet")
    _data(path, args.rows, args.tokens)
    cases = {"count": "{name: city, kind: string}",
             "labels_binary": "{name: city, kind: string, labels: clicked}",
             "labels_5_class": "{name: city, kind: string, labels: klass}"}
    for case, entry in cases.items():
        seconds, out = _split_seconds(Spec.from_yaml_text(f"features:\n  - {entry}\n"), path,
                                      args.repeat)
        print(json.dumps({"step": "split analysis", "case": case, "rows": args.rows,
                          "seconds": round(seconds, 3),
                          "rows_per_second": round(args.rows / seconds)}))
        tables = [o.value[1] for o in out if getattr(o, "tag", None) == "labels"]
        for adjusted in ((False, True) if tables else ()):
            feature = StringFeature("city", labels="y", adjusted_mutual_info=adjusted)
            whole = merge_label_tables(tables)  # totals and every partition
            start = time.perf_counter()
            ranked = rank(whole, feature)
            print(json.dumps({"step": "scoring", "case": case, "adjusted": adjusted,
                              "tokens": ranked["table"].num_rows,
                              "seconds": round(time.perf_counter() - start, 3)}))


if __name__ == "__main__":
    main()
