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

The child's CPU time (user + sys of the waited-for process tree, ``RUSAGE_CHILDREN``) is
reported beside the wall time: on a shared machine it is the figure to compare between
code versions. ``--module`` runs another entry point (``pipelines.analyze`` before the
package move), so an older checkout can be measured on the same data with
``PYTHONPATH=<checkout>``; the sha256 of the vocabulary and sidecar are printed so two runs
can be compared byte for byte.

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


def run_measured(cmd: list[str]) -> dict:
    """Runs a command; returns wall and CPU seconds and the peak RSS (GB) of its tree."""
    import resource

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
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
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed with exit code {proc.returncode}")
    # The kernel's high-water mark of the largest finished child: exact, where the 0.5 s
    # samples above can miss a short peak (e.g. one vocabulary written at the end).
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    system = after.ru_stime - before.ru_stime
    return {"wall_s": round(wall, 1), "cpu_user_s": round(user, 1),
            "cpu_sys_s": round(system, 1), "cpu_s": round(user + system, 1),
            "peak_rss_sampled_gb": round(peak / 1e9, 2),
            "ru_maxrss_gb": round(after.ru_maxrss * 1024 / 1e9, 2),
            "peak_rss_gb": round(max(peak, after.ru_maxrss * 1024) / 1e9, 2),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2)}


def _sha256(path: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check(artifacts: str, meta: dict, lookup: bool = True) -> dict:
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
    hashes = {"vocab_sha256": _sha256(vocab_path), "counts_sha256": _sha256(sidecar)}
    if not lookup:
        return {"vocabulary_size": lines, "sampled_counts_checked": len(wanted), **hashes}
    t0 = time.monotonic()
    import keras

    layer = keras.layers.StringLookup(vocabulary=vocab_path)
    sample = list(wanted)[:50]
    got = np.asarray(layer(np.array(sample))).tolist()
    assert got == [index[t] + 1 for t in sample], "StringLookup indices differ"
    return {"vocabulary_size": lines, "sampled_counts_checked": len(wanted),
            **hashes,
            "stringlookup_load_s": round(time.monotonic() - t0, 1),
            "stringlookup_size": int(layer.vocabulary_size())}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100_000_000)
    p.add_argument("--distinct", type=int, default=20_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="benchmarks/data/large_vocab")
    p.add_argument("--data", default="",
                   help="Data folder (default <out>/data); generated there if absent.")
    p.add_argument("--artifacts", default="", help="Output folder (default <out>/artifacts).")
    p.add_argument("--module", default="beam_prep.pipelines.analyze",
                   help="Entry point run with python -m (older checkouts: pipelines.analyze).")
    p.add_argument("--no_lookup", action="store_true",
                   help="Skip the StringLookup load (quicker A/B runs; hashes still printed).")
    p.add_argument("--beam_args", default="", help="Extra flags for beam-prep analyze.")
    args = p.parse_args(argv)
    data = args.data or os.path.join(args.out, "data")
    artifacts = args.artifacts or os.path.join(args.out, "artifacts")
    t0 = time.monotonic()
    meta = generate(data, args.rows, args.distinct, args.seed)
    print(f"data ready in {time.monotonic() - t0:.0f}s")
    cmd = [sys.executable, "-m", args.module, "--spec", os.path.join(data, "spec.yaml"),
           "--input", os.path.join(data, "*.parquet"), "--output", artifacts, "--overwrite",
           *args.beam_args.split()]
    measured = run_measured(cmd)
    print("measured:", json.dumps(measured), flush=True)
    result = {"rows": args.rows, "distinct": args.distinct, "module": args.module,
              "pythonpath": os.environ.get("PYTHONPATH", ""), **measured,
              "rows_per_s": round(args.rows / measured["wall_s"]),
              "rows_per_cpu_s": round(args.rows / max(measured["cpu_s"], 1e-9)),
              **check(artifacts, meta, lookup=not args.no_lookup)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
