"""Benchmark: make-elwc documents/s (DirectRunner in-process and 2 worker processes) against a
minimal single-process converter (parse + build protos + write, no Beam), and reader lists/s.

The synthetic LETOR file is generated deterministically (numpy seed 0): ``--docs`` documents in
queries of 5–40 documents, ``--features`` feature ids with ~30 % present per document.

Usage:
    python benchmarks/bench_elwc.py --docs 200000 --workdir /tmp/bench_elwc
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def generate(path: str, docs: int, features: int) -> int:
    """Writes a LETOR file; returns the number of queries."""
    rng = np.random.default_rng(0)
    lines, q, n = [], 0, 0
    while n < docs:
        size = int(min(rng.integers(5, 41), docs - n))
        for _ in range(size):
            ids = np.flatnonzero(rng.random(features) < 0.3) + 1
            vals = np.round(rng.random(len(ids)), 4)
            label = int(rng.integers(0, 5))
            feats = " ".join(f"{i}:{v:g}" for i, v in zip(ids, vals))
            lines.append(f"{label} qid:{q} {feats}")
        n += size
        q += 1
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return q


def minimal_converter(path: str, out: str, features: int) -> int:
    """Single process, no Beam: parse with the same vectorised parser, group by qid, build ELWC
    protos with protobuf objects, write one TFRecord file."""
    import tensorflow as tf
    from tensorflow_serving.apis import input_pb2

    from beam_prep.ranking.data.letor import parse_letor

    with open(path, "rb") as f:
        p = parse_letor(f.read(), fmt="letor")
    order = np.argsort(p.qids.astype(str), kind="stable")
    names = [f"f{i}" for i in range(1, features + 1)]
    n = 0
    with tf.io.TFRecordWriter(out) as w:
        bounds = np.flatnonzero(p.qids[order][1:] != p.qids[order][:-1]) + 1
        for rows in np.split(order, bounds):
            elwc = input_pb2.ExampleListWithContext()
            for r in rows:
                dense = np.zeros(features, np.float32)
                s, e = p.indptr[r], p.indptr[r + 1]
                dense[p.ids[s:e] - 1] = p.values[s:e]
                feat = elwc.examples.add().features.feature
                for name, v in zip(names, dense.tolist()):
                    feat[name].float_list.value.append(v)
                feat["relevance"].float_list.value.append(p.labels[r])
            w.write(elwc.SerializeToString())
            n += len(rows)
    return n


def minimal_fast_converter(path: str, out: str) -> int:
    """Single process, no Beam, same parser and byte encoder as the job (isolates Beam's cost):
    parse the file in the same line-aligned pieces as the job (faster than one whole-file parse:
    smaller temporary arrays), group by query, encode every list, write one TFRecord file."""
    from beam_prep.ranking.data.build import ListBuilder
    from beam_prep.ranking.data.options import ElwcOptions
    from beam_prep.ranking.data.sources import LayoutCombineFn, plan_pieces, read_piece
    from beam_prep.ranking.data.tfrecord import write_tfrecords
    from beam_prep.ranking.data.transforms import DEFAULT_SPLIT_BYTES

    opts = ElwcOptions(input_format="letor")
    parsed = [read_piece(path, "x", 0, piece, opts)
              for piece in plan_pieces(path, opts, DEFAULT_SPLIT_BYTES)]
    layout = LayoutCombineFn().merge_accumulators(r.layout for r in parsed)
    blocks = [b for r in parsed for _, b in r.blocks]
    records, _ = ListBuilder(opts, layout).build("train", blocks)
    write_tfrecords(out, (data for _, _, data in records))
    return sum(len(b) for b in blocks)


def run_beam(path: str, out: str, extra: list[str]) -> None:
    from beam_prep.pipelines import make_elwc

    shutil.rmtree(out, ignore_errors=True)
    make_elwc.run(["--input", path, "--output", out, "--num_shards", "4", *extra])


def bench_reader(pattern: str, list_size: int, batch_size: int) -> tuple[int, float]:
    from beam_prep.ranking.train.reader import make_dataset

    ds = make_dataset(pattern, list_size=list_size, batch_size=batch_size)
    t = time.perf_counter()
    n = 0
    for _, labels in ds:
        n += int(labels.shape[0])
    return n, time.perf_counter() - t


def digest(directory: str) -> dict[str, str]:
    """sha256 of every file of an output directory."""
    import hashlib

    return {n: hashlib.sha256(open(os.path.join(directory, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(directory)) if n.endswith(".tfrecord")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--workdir", default="/tmp/bench_elwc")
    ap.add_argument("--skip_minimal", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    data = os.path.join(args.workdir, f"synthetic_{args.docs}_{args.features}.txt")
    if not os.path.exists(data):
        t = time.perf_counter()
        q = generate(data, args.docs, args.features)
        print(f"generated {data}: {args.docs} docs, {q} queries in {time.perf_counter() - t:.1f}s")
    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    results = {}
    if not args.skip_minimal:
        t = time.perf_counter()
        n = minimal_converter(data, os.path.join(args.workdir, "minimal.tfrecord"), args.features)
        results["minimal (no Beam, protobuf)"] = n / (time.perf_counter() - t)
        t = time.perf_counter()
        n = minimal_fast_converter(data, os.path.join(args.workdir, "minimal_fast.tfrecord"))
        results["minimal (no Beam, byte encoder)"] = n / (time.perf_counter() - t)
    for name, extra in (("beam in-process", ["--direct_running_mode=in_memory"]),
                        ("beam 2 processes", ["--direct_running_mode=multi_processing",
                                              "--direct_num_workers=2"])):
        t = time.perf_counter()
        run_beam(data, os.path.join(args.workdir, name.replace(" ", "_")), extra)
        results[name] = args.docs / (time.perf_counter() - t)
    same = digest(os.path.join(args.workdir, "beam_in-process")) == \
        digest(os.path.join(args.workdir, "beam_2_processes"))
    print(f"in-process and 2-process shards byte-identical: {same}")
    print(f"load average after conversions: {os.getloadavg()[0]:.2f} (1 min)")
    for name, v in results.items():
        print(f"{name:32s} {v:12,.0f} docs/s")
    if "minimal (no Beam, protobuf)" in results:
        base = results["minimal (no Beam, protobuf)"]
        fast = results["minimal (no Beam, byte encoder)"]
        print(f"ratio 2 processes / minimal protobuf: {results['beam 2 processes'] / base:.2f}x, "
              f"/ minimal byte encoder: {results['beam 2 processes'] / fast:.2f}x")
    pattern = os.path.join(args.workdir, "beam_in-process", "*.tfrecord")
    for list_size, batch in ((32, 32), (64, 128)):
        n, secs = bench_reader(pattern, list_size, batch)
        print(f"reader list_size={list_size} batch={batch}: {n / secs:,.0f} lists/s "
              f"({n} lists, {secs:.1f}s)")


if __name__ == "__main__":
    main()
