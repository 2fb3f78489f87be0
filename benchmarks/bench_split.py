"""Per-split analysis cost without Beam: one file through ``AnalyzeSplitFn``, in-process.

The analysis of a split (read, decode, count, sketch, partition) is where the rows are
touched; this measures it alone, without runner start-up or the merge tail, so that a
change to the read or count path can be judged in seconds. It reports the best of
``--repeats`` runs and, for TFRecord input, whether the native tf.Example decoder was on.

Example:
    $ python benchmarks/bench_split.py --data benchmarks/data/criteo_2000000 --format tfrecord
    tfrecord part-00000.tfrecord: 1,000,000 rows in 4.31 s (231,800 rows/s), native=True
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from beam_prep.analyzers.split_fn import META, AnalyzeSplitFn  # noqa: E402
from beam_prep.io.inputs.example_decoder import native_available  # noqa: E402
from beam_prep.io.inputs.readers import list_splits  # noqa: E402
from beam_prep.spec import Spec  # noqa: E402


def run_once(spec: Spec, path: str, fmt: str, batch_size: int,
             threads: int = 1) -> tuple[int, float]:
    """Analyses every split of one file; returns (rows, seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        fn = AnalyzeSplitFn(spec.to_dict(), batch_size=batch_size, num_partitions=16,
                            temp_dir=tmp, spill_rows=8192, threads=threads)
        fn.setup()
        rows = 0
        started = time.perf_counter()
        for split in list_splits(path, fmt):
            for out in fn.process(split):
                if getattr(out, "tag", None) == META:
                    rows += out.value["rows_read"]
        return rows, time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="A gen_criteo.py output directory.")
    parser.add_argument("--format", choices=("parquet", "tfrecord"), default="tfrecord")
    parser.add_argument("--batch_size", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1,
                        help="AnalyzeSplitFn threads (beam-prep analyze --split_threads).")
    args = parser.parse_args(argv)
    with open(os.path.join(args.data, "spec.yaml"), encoding="utf-8") as f:
        spec = Spec.from_dict(yaml.safe_load(f))
    path = sorted(glob.glob(os.path.join(args.data, args.format, f"*.{args.format}")))[0]
    best = None
    for _ in range(args.repeats):
        rows, seconds = run_once(spec, path, args.format, args.batch_size, args.threads)
        best = seconds if best is None else min(best, seconds)
    native = native_available() if args.format == "tfrecord" else "n/a"
    print(f"{args.format} {os.path.basename(path)}: {rows:,} rows in {best:.2f} s "
          f"({rows / best:,.0f} rows/s), native={native}, threads={args.threads}")


if __name__ == "__main__":
    main()
