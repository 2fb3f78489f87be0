"""Large-vocabulary benchmark: one string column, >= 20M distinct values in >= 100M rows.

Generates the data deterministically (Parquet, in chunks, never all in memory), runs
`beam-prep analyze` on it as a separate process while sampling the peak RSS of the whole
process tree, then checks the result against counts known from the generator:

* every one of the ``--distinct`` ids occurs at least once (a permutation is interleaved
  with Zipf draws), so the vocabulary must hold exactly ``--distinct`` tokens;
* exact counts of 2,000 sampled ids (computed with ``np.bincount`` while generating) must
  equal the counts sidecar; the file must be sorted by count descending;
* the vocabulary file loads into ``keras.layers.StringLookup`` and maps sampled ids to
  their line index + 1.

Example:
    python benchmarks/large_vocab.py --rows 100000000 --distinct 20000000 \\
        --out benchmarks/data/large_vocab
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

CHUNK = 5_000_000


def _ids_to_tokens(ids: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(pa.scalar("id_"), pc.cast(pa.array(ids), pa.string()),
                                       pa.scalar(""))


def generate(out: str, rows: int, distinct: int, seed: int) -> dict:
    """Writes Parquet files of column ``id``; returns the expected-count sample."""
    os.makedirs(out, exist_ok=True)
    meta_path = os.path.join(out, "expected.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta["rows"] == rows and meta["distinct"] == distinct and meta["seed"] == seed:
            return meta
    rng = np.random.default_rng(seed)
    permutation = rng.permutation(distinct)
    extra = rows - distinct
    counts = np.zeros(distinct, dtype=np.int64)
    n_chunks = (rows + CHUNK - 1) // CHUNK
    per_chunk_perm = (distinct + n_chunks - 1) // n_chunks
    for i in range(n_chunks):
        n = min(CHUNK, rows - i * CHUNK)
        perm_part = permutation[i * per_chunk_perm:(i + 1) * per_chunk_perm]
        n_zipf = n - len(perm_part)
        zipf = (rng.zipf(1.1, n_zipf) - 1) % distinct
        ids = np.concatenate([perm_part, zipf])
        rng.shuffle(ids)
        counts += np.bincount(ids, minlength=distinct)
        pq.write_table(pa.table({"id": _ids_to_tokens(ids)}),
                       os.path.join(out, f"part-{i:05d}.parquet"), row_group_size=1_000_000)
    assert extra >= 0
    sample = rng.choice(distinct, 2000, replace=False)
    meta = {"rows": rows, "distinct": distinct, "seed": seed,
            "sample": {f"id_{k}": int(counts[k]) for k in sample},
            "max_count": int(counts.max())}
    with open(os.path.join(out, "spec.yaml"), "w") as f:
        f.write("features:\n  - {name: id, kind: string}\n")
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return meta


def run_measured(cmd: list[str]) -> tuple[float, float]:
    """Runs a command; returns (wall seconds, peak RSS GB of the process tree)."""
    import psutil

    start = time.monotonic()
    proc = subprocess.Popen(cmd)
    parent = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [parent] + parent.children(recursive=True)
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.5)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed with exit code {proc.returncode}")
    # The kernel's high-water mark of the largest finished child: exact, where the 0.5 s
    # samples above can miss a short peak (e.g. one vocabulary written at the end).
    import resource

    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return time.monotonic() - start, max(peak, child_peak) / 1e9


def check(artifacts: str, meta: dict) -> dict:
    """Spot-checks the vocabulary against the generator's exact counts."""
    sidecar = os.path.join(artifacts, "vocab", "id.counts.jsonl")
    vocab_path = os.path.join(artifacts, "vocab", "id.txt")
    counts: dict[str, int] = {}
    index: dict[str, int] = {}
    wanted = meta["sample"]
    previous = None
    lines = 0
    with open(sidecar, encoding="utf-8") as f:
        for i, line in enumerate(f):
            token, count = json.loads(line)
            if previous is not None and count > previous:
                raise SystemExit(f"sidecar not sorted by count at line {i}")
            previous = count
            if token in wanted:
                counts[token] = count
                index[token] = i
            lines += 1
    assert lines == meta["distinct"], (lines, meta["distinct"])
    bad = {t: (counts.get(t), c) for t, c in wanted.items() if counts.get(t) != c}
    assert not bad, list(bad.items())[:5]
    t0 = time.monotonic()
    import keras

    layer = keras.layers.StringLookup(vocabulary=vocab_path)
    sample = list(wanted)[:50]
    got = np.asarray(layer(np.array(sample))).tolist()
    assert got == [index[t] + 1 for t in sample], "StringLookup indices differ"
    return {"vocabulary_size": lines, "sampled_counts_checked": len(wanted),
            "stringlookup_load_s": round(time.monotonic() - t0, 1),
            "stringlookup_size": int(layer.vocabulary_size())}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100_000_000)
    p.add_argument("--distinct", type=int, default=20_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="benchmarks/data/large_vocab")
    p.add_argument("--beam_args", default="", help="Extra flags for beam-prep analyze.")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    meta = generate(os.path.join(args.out, "data"), args.rows, args.distinct, args.seed)
    print(f"data ready in {time.monotonic() - t0:.0f}s")
    artifacts = os.path.join(args.out, "artifacts")
    cmd = [sys.executable, "-m", "beam_prep.pipelines.analyze", "--spec",
           os.path.join(args.out, "data", "spec.yaml"), "--input",
           os.path.join(args.out, "data", "*.parquet"), "--output", artifacts, "--overwrite",
           *args.beam_args.split()]
    wall, rss = run_measured(cmd)
    result = {"rows": args.rows, "distinct": args.distinct, "wall_s": round(wall, 1),
              "rows_per_s": round(args.rows / wall), "peak_rss_gb": round(rss, 2),
              **check(artifacts, meta)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
