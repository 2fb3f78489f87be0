"""Reference row: Keras 3 ``adapt()`` on the same columns, in memory.

Loads the Parquet columns into memory (so this is only run for row counts that fit), then
adapts, per spec feature:

* ``kind: string``: ``StringLookup(max_tokens=top_k + 1)`` (one OOV slot, so ``top_k`` real
  tokens);
* ``kind: numeric``: ``Normalization(axis=None)`` and
  ``Discretization(num_bins=num_buckets, epsilon=...)``.

Missing cells are dropped before adapting (Keras has no notion of a missing cell). The time
to load the data is reported apart from the adapt time. Keras orders tokens of equal count
differently from TFT, so only the set of tokens is comparable.

Example:
    $ python benchmarks/keras_adapt.py --data benchmarks/data/criteo_100k --dump /tmp/keras_dump
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from benchmarks._common import load_spec_features, parquet_files, write_dump  # noqa: E402


def run(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description="Keras adapt() reference (in memory).")
    p.add_argument("--data", required=True, help="Directory written by gen_criteo.py.")
    p.add_argument("--spec", default=None, help="Spec YAML; default DATA/spec.yaml.")
    p.add_argument("--dump", required=True)
    p.add_argument("--batch_size", type=int, default=65536,
                   help="adapt() batch size (Keras default 32 is far slower).")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    import keras

    cats, nums = load_spec_features(args.spec or os.path.join(args.data, "spec.yaml"))
    columns = sorted({c for _, c, _ in cats} | {c for _, c, _, _ in nums})
    t_import = time.perf_counter()
    table = pq.read_table(parquet_files(args.data), columns=columns)
    data = {}
    for c in columns:
        col = table[c].drop_null()
        data[c] = (col.to_numpy(zero_copy_only=False) if col.type == "string"
                   else col.to_numpy().astype(np.float32))
    rows = table.num_rows
    del table
    t_load = time.perf_counter()
    import tensorflow as tf

    def batches(values):
        return tf.data.Dataset.from_tensor_slices(values).batch(args.batch_size)

    vocabs, stats = {}, {}
    for name, column, top_k in cats:
        layer = keras.layers.StringLookup(
            max_tokens=None if top_k is None else top_k + 1, num_oov_indices=1)
        layer.adapt(batches(data[column].astype(object)))
        vocabs[name] = [t for t in layer.get_vocabulary()[1:]]
    for name, column, num_buckets, epsilon in nums:
        norm = keras.layers.Normalization(axis=None)
        norm.adapt(data[column])  # numpy path (a batched dataset breaks axis=None)
        s = {"mean": float(np.asarray(norm.mean).reshape(-1)[0]),
             "variance": float(np.asarray(norm.variance).reshape(-1)[0])}
        if num_buckets:
            disc = keras.layers.Discretization(num_bins=num_buckets, epsilon=epsilon)
            disc.adapt(batches(data[column]))
            s["boundaries"] = [float(b) for b in disc.bin_boundaries]
        stats[name] = s
    t_end = time.perf_counter()
    timing = {"rows": rows, "import_seconds": t_import - t0, "load_seconds": t_load - t_import,
              "adapt_seconds": t_end - t_load, "analyze_seconds": t_end - t_import}
    write_dump(args.dump, vocabs, stats, timing)
    return timing


if __name__ == "__main__":
    print(run())
