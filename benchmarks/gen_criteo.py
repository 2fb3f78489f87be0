"""Deterministic Criteo-like table generator (Parquet and TFRecord of tf.Example).

Columns (in this order):

* ``i1..i13``  numeric, float32 holding integer values (exact in float32, like Criteo's
  counts), heavy-tailed mixtures of lognormal, Pareto and small geometric counts; about 2%
  missing (null in Parquet, an empty ``Feature`` in tf.Example).
* ``c1..c26``  categorical strings of 8 hex characters (a bijective hash of the Zipf rank),
  Zipf-distributed; cardinalities spread log-uniformly from 10 to ``--max_cardinality``;
  ``--cat_missing`` of the cells missing.
* ``text``     1..6 lowercase words drawn from a Zipf word list (never missing).

Every (chunk, column) pair has its own random stream, seeded from ``--seed``; chunks are
100,000 rows, so the first ``n`` rows of a large table are exactly the ``n``-row table
with the same seed, whatever ``--rows_per_file``.

Output layout (``--out DIR``)::

    DIR/parquet/part-00000.parquet ...   row groups of 100,000 rows
    DIR/tfrecord/part-00000.tfrecord ... uncompressed TFRecord of serialized tf.Example
    DIR/spec.yaml                        the beam_prep spec of the analysis benchmarked
    DIR/schema.pbtxt                     TFMD schema (used by the TF Transform baseline)
    DIR/meta.json                        rows, seed, cardinalities, settings

Example:
    $ python benchmarks/gen_criteo.py --rows 100000 --out benchmarks/data/criteo_100k \
        --formats parquet,tfrecord --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK_ROWS = 100_000
NUM_NUMERIC = 13
NUM_CATEGORICAL = 26
NUMERIC = [f"i{i}" for i in range(1, NUM_NUMERIC + 1)]
CATEGORICAL = [f"c{i}" for i in range(1, NUM_CATEGORICAL + 1)]
TEXT = "text"
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
# Stream ids: numeric columns 0..12, categoricals 100..125, text 200.
_TEXT_STREAM = 200


def cardinalities(max_cardinality: int) -> list[int]:
    """Log-uniformly spread cardinalities from 10 to ``max_cardinality`` (26 columns)."""
    grid = np.geomspace(10, max_cardinality, NUM_CATEGORICAL)
    return [int(round(x)) for x in grid]


def _zipf_cdf(n: int, exponent: float) -> np.ndarray:
    weights = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return cdf


def _hex_tokens(values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """uint32 values -> 8-char lowercase hex strings, built without a per-row loop."""
    n = len(values)
    shifts = np.arange(28, -1, -4, dtype=np.uint32)
    digits = (values[:, None] >> shifts[None, :]) & np.uint32(15)
    data = _HEX[digits].reshape(-1)
    offsets = np.arange(0, 8 * n + 1, 8, dtype=np.int32)
    mask_buf = None
    null_count = 0
    if valid is not None and not valid.all():
        mask_buf = pa.array(valid).buffers()[1]
        null_count = int(n - valid.sum())
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data),
                                       mask_buf, null_count)


def _word_list(size: int, seed: int) -> list[str]:
    rng = np.random.default_rng([seed, 300])
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        length = int(rng.integers(2, 9))
        w = _LETTERS[rng.integers(0, 26, length)].tobytes().decode()
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


class CriteoGenerator:
    """Produces the table chunk by chunk (each chunk an Arrow RecordBatch).

    Args:
        seed: Master seed.
        max_cardinality: Largest categorical cardinality.
        cat_missing: Fraction of missing categorical cells.
        num_missing: Fraction of missing numeric cells.
        zipf_exponent: Zipf exponent of the categorical and word distributions.
        vocab_words: Size of the text word list.

    Example:
        >>> g = CriteoGenerator(seed=1, max_cardinality=1000)
        >>> next(g.chunks(5)).num_rows
        5
    """

    def __init__(self, *, seed: int, max_cardinality: int = 5_000_000,
                 cat_missing: float = 0.01, num_missing: float = 0.02,
                 zipf_exponent: float = 1.05, vocab_words: int = 20_000) -> None:
        self.seed = seed
        self.cards = cardinalities(max_cardinality)
        self.cat_missing = cat_missing
        self.num_missing = num_missing
        self.exponent = zipf_exponent
        self._cdfs: dict[int, np.ndarray] = {}
        self.words = _word_list(vocab_words, seed)
        self._word_cdf = _zipf_cdf(vocab_words, zipf_exponent)
        self._words_arr = pa.array(self.words, pa.string())

    def _cdf(self, n: int) -> np.ndarray:
        if n not in self._cdfs:
            self._cdfs[n] = _zipf_cdf(n, self.exponent)
        return self._cdfs[n]

    def _rng(self, chunk: int, stream: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, chunk, stream])

    def _numeric(self, chunk: int, j: int, n: int) -> pa.Array:
        rng = self._rng(chunk, j)
        comp = rng.random(n)
        lognormal = rng.lognormal(mean=1.0 + 0.4 * j, sigma=1.5 + 0.1 * j, size=n)
        pareto = (rng.pareto(1.2 + 0.1 * (j % 5), size=n) + 1.0) * (3 + j)
        geometric = rng.geometric(0.3, size=n) - 1.0
        x = np.where(comp < 0.5, lognormal, np.where(comp < 0.8, pareto, geometric))
        if j == 1:  # like Criteo's I2, a few negative values
            x = x - 3.0
        x = np.floor(np.minimum(x, 2.0 ** 24 - 1)).astype(np.float32)
        valid = rng.random(n) >= self.num_missing
        return pa.array(x, pa.float32(), mask=~valid)

    def _categorical(self, chunk: int, j: int, n: int) -> pa.Array:
        rng = self._rng(chunk, 100 + j)
        rank = np.searchsorted(self._cdf(self.cards[j]), rng.random(n), side="right")
        # Bijective hash of the rank (odd multiplier mod 2**32), distinct per column.
        h = (rank.astype(np.uint64) * np.uint64(2654435761) + np.uint64(j * 7919 + 17))
        token = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        valid = rng.random(n) >= self.cat_missing
        return _hex_tokens(token, valid)

    def _text(self, chunk: int, n: int) -> pa.Array:
        rng = self._rng(chunk, _TEXT_STREAM)
        lengths = rng.integers(1, 7, n)
        total = int(lengths.sum())
        idx = np.searchsorted(self._word_cdf, rng.random(total), side="right")
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        words = pa.ListArray.from_arrays(pa.array(offsets), self._words_arr.take(idx))
        import pyarrow.compute as pc

        return pc.binary_join(words, " ")

    def chunk(self, index: int, n: int) -> pa.RecordBatch:
        """Rows ``[index * CHUNK_ROWS, index * CHUNK_ROWS + n)`` as a RecordBatch."""
        arrays = [self._numeric(index, j, n) for j in range(NUM_NUMERIC)]
        arrays += [self._categorical(index, j, n) for j in range(NUM_CATEGORICAL)]
        arrays.append(self._text(index, n))
        return pa.RecordBatch.from_arrays(arrays, NUMERIC + CATEGORICAL + [TEXT])

    def chunks(self, rows: int) -> Iterator[pa.RecordBatch]:
        """All chunks of a ``rows``-row table, in order."""
        index = 0
        while index * CHUNK_ROWS < rows:
            yield self.chunk(index, min(CHUNK_ROWS, rows - index * CHUNK_ROWS))
            index += 1


def to_list_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Scalar columns -> list columns (null stays null): the shape tf.Example encoders need."""
    out = []
    for col in batch.columns:
        valid = np.asarray(col.is_valid())
        offsets = np.zeros(len(col) + 1, dtype=np.int32)
        np.cumsum(valid, out=offsets[1:])
        values = col.drop_null() if col.null_count else col
        if pa.types.is_string(values.type):
            values = values.cast(pa.binary())  # the encoder writes bytes_list from binary
        mask = pa.array(~valid) if col.null_count else None
        out.append(pa.ListArray.from_arrays(pa.array(offsets), values, mask=mask))
    return pa.RecordBatch.from_arrays(out, batch.schema.names)


def spec_yaml(top_k: int, num_buckets: int, include_text: bool) -> str:
    """The beam_prep spec matching the TF Transform baseline's preprocessing_fn."""
    lines = ["version: 1", "features:"]
    for c in CATEGORICAL:
        lines.append(f"  - {{name: {c}, kind: string, top_k: {top_k}}}")
    for i in NUMERIC:
        lines.append(f"  - {{name: {i}, kind: numeric, num_buckets: {num_buckets}}}")
    if include_text:
        lines.append(f"  - {{name: {TEXT}, kind: text, max_tokens: {top_k + 2}}}")
    return "\n".join(lines) + "\n"


def schema_pbtxt() -> str:
    """TFMD schema: every feature variable-length (missing cells -> no value)."""
    parts = []
    for i in NUMERIC:
        parts.append(f'feature {{ name: "{i}" type: FLOAT }}')
    for c in CATEGORICAL + [TEXT]:
        parts.append(f'feature {{ name: "{c}" type: BYTES }}')
    return "\n".join(parts) + "\n"


class _Writers:
    def __init__(self, out: str, formats: list[str], rows_per_file: int) -> None:
        self.out, self.formats, self.rows_per_file = out, formats, rows_per_file
        self.file_index = -1
        self.rows_in_file = 0
        self.pq_writer: pq.ParquetWriter | None = None
        self.tf_writer = None
        for fmt in formats:
            os.makedirs(os.path.join(out, fmt), exist_ok=True)

    def _roll(self, schema: pa.Schema) -> None:
        self.close()
        self.file_index += 1
        self.rows_in_file = 0
        name = f"part-{self.file_index:05d}"
        if "parquet" in self.formats:
            self.pq_writer = pq.ParquetWriter(
                os.path.join(self.out, "parquet", name + ".parquet"), schema,
                compression="snappy")
        if "tfrecord" in self.formats:
            import tensorflow as tf

            self.tf_writer = tf.io.TFRecordWriter(
                os.path.join(self.out, "tfrecord", name + ".tfrecord"))

    def write(self, batch: pa.RecordBatch) -> None:
        start = 0
        while start < batch.num_rows:
            if self.file_index < 0 or self.rows_in_file >= self.rows_per_file:
                self._roll(batch.schema)
            take = min(batch.num_rows - start, self.rows_per_file - self.rows_in_file)
            part = batch.slice(start, take)
            if self.pq_writer is not None:
                self.pq_writer.write_batch(part, row_group_size=CHUNK_ROWS)
            if self.tf_writer is not None:
                from tfx_bsl.coders import example_coder

                write = self.tf_writer.write
                for record in example_coder.RecordBatchToExamples(to_list_columns(part)):
                    write(record)
            self.rows_in_file += take
            start += take

    def close(self) -> None:
        if self.pq_writer is not None:
            self.pq_writer.close()
            self.pq_writer = None
        if self.tf_writer is not None:
            self.tf_writer.close()
            self.tf_writer = None


def generate(out: str, *, rows: int, formats: list[str], seed: int, rows_per_file: int,
             max_cardinality: int, top_k: int, num_buckets: int, spec_text: bool,
             cat_missing: float) -> dict:
    """Writes the table and its spec/schema/meta files; returns the meta dict."""
    for fmt in formats:
        if fmt not in ("parquet", "tfrecord"):
            raise ValueError(f"`--formats` entries must be parquet or tfrecord. Received: {fmt!r}")
    if rows_per_file % CHUNK_ROWS and rows > rows_per_file:
        raise ValueError(f"`--rows_per_file` must be a multiple of {CHUNK_ROWS} when the table "
                         f"spans several files. Received: rows_per_file={rows_per_file}")
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    gen = CriteoGenerator(seed=seed, max_cardinality=max_cardinality, cat_missing=cat_missing)
    writers = _Writers(out, formats, rows_per_file)
    done = 0
    for batch in gen.chunks(rows):
        writers.write(batch)
        done += batch.num_rows
        if done % 1_000_000 == 0:
            print(f"  {done:,} rows, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    writers.close()
    with open(os.path.join(out, "spec.yaml"), "w") as f:
        f.write(spec_yaml(top_k, num_buckets, spec_text))
    with open(os.path.join(out, "schema.pbtxt"), "w") as f:
        f.write(schema_pbtxt())
    meta = {"rows": rows, "seed": seed, "formats": formats, "rows_per_file": rows_per_file,
            "max_cardinality": max_cardinality, "cardinalities": dict(zip(CATEGORICAL,
                                                                          gen.cards)),
            "top_k": top_k, "num_buckets": num_buckets, "cat_missing": cat_missing,
            "num_missing": gen.num_missing, "zipf_exponent": gen.exponent,
            "files": writers.file_index + 1, "seconds": round(time.perf_counter() - t0, 2)}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    return meta


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--formats", default="parquet,tfrecord")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rows_per_file", type=int, default=1_000_000)
    p.add_argument("--max_cardinality", type=int, default=5_000_000)
    p.add_argument("--top_k", type=int, default=100_000)
    p.add_argument("--num_buckets", type=int, default=100)
    p.add_argument("--cat_missing", type=float, default=0.01)
    p.add_argument("--spec_text", action="store_true",
                   help="Also declare the text column in spec.yaml (TFT baseline ignores it).")
    a = p.parse_args(argv)
    meta = generate(a.out, rows=a.rows, formats=[f for f in a.formats.split(",") if f],
                    seed=a.seed, rows_per_file=a.rows_per_file,
                    max_cardinality=a.max_cardinality, top_k=a.top_k,
                    num_buckets=a.num_buckets, spec_text=a.spec_text,
                    cat_missing=a.cat_missing)
    print(json.dumps({k: v for k, v in meta.items() if k != "cardinalities"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
