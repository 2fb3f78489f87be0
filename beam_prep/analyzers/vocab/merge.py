"""Streaming k-way merge of sorted vocabulary runs, written straight into the vocabulary files.

A *run* is a vocabulary table already in vocabulary order (count descending, then token
UTF-8 bytes descending; see :mod:`beam_prep.analyzers.vocab.topk`), in memory or spilled
as an Arrow IPC stream of record batches. Runs hold disjoint tokens (one per hash
partition), so the merged order is total and the files are the same bytes whatever the
number of runs.

The merge is vectorised block by block rather than token by token: each run contributes
one batch at a time; the *bound* is the earliest of the batches' last rows; every buffered
row at or before the bound is final (a run's later rows all come after its batch's last
row), so those rows are sorted together and emitted, and the run that supplied the bound
reads its next batch. Memory is about ``runs x batch_rows`` rows whatever the vocabulary
size. With more than ``fan_in`` runs, groups of ``fan_in`` are first merged into
intermediate runs (hierarchically), so open readers stay bounded too.

The global ``top_k`` needs no count threshold up front: the merged stream is in final
order, so writing stops after ``top_k`` lines, and ties at the cut go by token bytes
exactly as :func:`~beam_prep.analyzers.vocab.topk.select_top_k` does.

Example:
    >>> import pyarrow as pa
    >>> from beam_prep.analyzers.vocab.count import table_from_counts
    >>> a = table_from_counts(pa.array(["x", "b"]), pa.array([5, 1]))
    >>> b = table_from_counts(pa.array(["c", "a"]), pa.array([3, 1]))
    >>> [t for c in merge_runs([a, b]) for t in c.column("token").to_pylist()]
    ['x', 'c', 'b', 'a']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.analyzers.spill import SpillRef
from beam_prep.analyzers.vocab.count import SCHEMA
from beam_prep.analyzers.vocab.topk import sort_vocabulary
from beam_prep.analyzers.vocab.write import counts_jsonl, vocabulary_text
from beam_prep.io import filesystem as fs

__all__ = ["BATCH_ROWS", "FAN_IN", "merge_runs", "read_run", "write_run",
           "write_vocabulary_files"]

#: Rows per record batch of a run (and per merge read).
BATCH_ROWS = 1 << 16
#: Runs merged at once; more are merged hierarchically through intermediate runs.
FAN_IN = 64


def write_run(table: pa.Table, path: str, *, batch_rows: int = BATCH_ROWS) -> SpillRef:
    """Writes a sorted table as an Arrow IPC stream of ``batch_rows``-row batches.

    Example:
        >>> ref = write_run(sorted_table, "out/_tmp/pruned/f/p003.arrow")  # doctest: +SKIP
    """
    fs.makedirs(FileSystems.split(path)[0])
    schema = _schema_of(table)
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        with pa.ipc.new_stream(f, schema) as writer:
            writer.write_table(table.cast(schema), max_chunksize=batch_rows)
    return SpillRef(path, table.num_rows)


def _schema_of(table: pa.Table) -> pa.Schema:
    """SCHEMA, or the table's own schema for float (weighted) counts."""
    if pa.types.is_floating(table.schema.field("count").type):
        return table.schema
    return SCHEMA


def _write_stream(chunks: Iterable[pa.Table], path: str, batch_rows: int) -> SpillRef:
    fs.makedirs(FileSystems.split(path)[0])
    rows = 0
    writer = None
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for chunk in chunks:
            if writer is None:
                schema = _schema_of(chunk)
                writer = pa.ipc.new_stream(f, schema)
            writer.write_table(chunk.cast(schema), max_chunksize=batch_rows)
            rows += chunk.num_rows
        if writer is None:
            writer = pa.ipc.new_stream(f, SCHEMA)
        writer.close()
    return SpillRef(path, rows)


def read_run(run: pa.Table | SpillRef, *, batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
    """The non-empty batches of a run, in order, one at a time (a file is streamed).

    Example:
        >>> sum(t.num_rows for t in read_run(table, batch_rows=2))  # doctest: +SKIP
    """
    if isinstance(run, SpillRef):
        with FileSystems.open(run.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            for batch in pa.ipc.open_stream(f):
                if batch.num_rows:
                    yield pa.Table.from_batches([batch])
        return
    for start in range(0, run.num_rows, batch_rows):
        yield run.slice(start, batch_rows)


def _rows_up_to(table: pa.Table, count: int, token: pa.Scalar) -> int:
    """How many leading rows of a sorted run come at or before (count, token)."""
    counts = table.column("count").to_numpy()
    neg = -counts  # ascending
    lo = int(np.searchsorted(neg, -count, side="left"))
    hi = int(np.searchsorted(neg, -count, side="right"))
    if hi == lo:
        return lo
    tied = table.column("token").slice(lo, hi - lo)
    return lo + int(pc.sum(pc.greater_equal(tied, token)).as_py() or 0)


class _Merger:
    """Block-wise merge of runs; :meth:`rest` summarises rows not taken from it."""

    def __init__(self, runs: Sequence[pa.Table | SpillRef], batch_rows: int) -> None:
        self._iters = [read_run(r, batch_rows=batch_rows) for r in runs]
        self._bufs: list[list] = []
        for it in self._iters:
            first = next(it, None)
            if first is not None:
                self._bufs.append([first, it])

    def chunks(self) -> Iterator[pa.Table]:
        bufs = self._bufs
        while bufs:
            if len(bufs) == 1:
                table, it = bufs[0]
                bufs[0][0] = table.slice(table.num_rows)
                yield table
                yield from it
                bufs.clear()
                return
            lasts = []
            for table, _ in bufs:
                tok = table.column("token")[table.num_rows - 1]
                lasts.append((table.column("count")[table.num_rows - 1].as_py(),
                              tok.as_py().encode("utf-8"), tok))
            count, _, token = max(lasts, key=lambda x: (x[0], x[1]))
            parts = []
            for buf in bufs:
                n = _rows_up_to(buf[0], count, token)
                if n:
                    parts.append(buf[0].slice(0, n))
                    buf[0] = buf[0].slice(n)
            yield sort_vocabulary(pa.concat_tables(parts))
            kept = []
            for buf in bufs:
                if buf[0].num_rows == 0:
                    buf[0] = next(buf[1], None)
                if buf[0] is not None:
                    kept.append(buf)
            bufs[:] = kept

    def rest(self) -> dict[str, int]:
        """{tokens, count} of the rows not yet yielded (reads the runs to their end)."""
        tokens = total = 0
        for table, it in self._bufs:
            for t in (table, *it):
                tokens += t.num_rows
                total += int(pc.sum(t.column("count")).as_py() or 0)
        self._bufs = []
        return {"tokens": tokens, "count": total}


def _merge_levels(runs: Sequence[pa.Table | SpillRef], *, fan_in: int, batch_rows: int,
                  temp_dir: str | None, level: int = 0) -> list[pa.Table | SpillRef]:
    """Reduces the runs to at most ``fan_in`` by merging groups into intermediate runs."""
    runs = list(runs)
    while len(runs) > fan_in:
        if temp_dir is None:
            raise ValueError(f"Merging {len(runs)} runs with fan_in={fan_in} needs a "
                             "temp_dir for intermediate runs. Received: temp_dir=None")
        merged = []
        for g in range(0, len(runs), fan_in):
            group = runs[g:g + fan_in]
            path = f"{temp_dir}/L{level}-{g // fan_in:05d}.arrow"
            merged.append(_write_stream(_Merger(group, batch_rows).chunks(), path, batch_rows))
        runs, level = merged, level + 1
    return runs


def merge_runs(runs: Sequence[pa.Table | SpillRef], *, fan_in: int = FAN_IN,
               batch_rows: int = BATCH_ROWS, temp_dir: str | None = None
               ) -> Iterator[pa.Table]:
    """Sorted runs with disjoint tokens, merged into one stream of tables in vocabulary order.

    Args:
        runs: Sorted runs (tables or spilled files).
        fan_in: Runs merged at once (at least 2).
        batch_rows: Rows per batch read from a run.
        temp_dir: Folder for intermediate runs when there are more than ``fan_in`` runs.
    """
    top = _merge_levels(runs, fan_in=max(2, fan_in), batch_rows=batch_rows,
                        temp_dir=temp_dir)
    yield from _Merger(top, batch_rows).chunks()


def write_vocabulary_files(runs: Sequence[pa.Table | SpillRef], vocab_path: str,
                           counts_path: str, *, top_k: int | None, with_df: bool,
                           fan_in: int = FAN_IN, batch_rows: int = BATCH_ROWS,
                           temp_dir: str | None = None) -> dict:
    """Merges sorted runs and streams the first ``top_k`` rows into the ``.txt`` and sidecar.

    The bytes equal :func:`~beam_prep.analyzers.vocab.write.vocabulary_text` and
    :func:`~beam_prep.analyzers.vocab.write.counts_jsonl` of the whole sorted vocabulary
    (both are line by line, so chunks concatenate).

    Args:
        runs: Sorted runs with disjoint tokens.
        vocab_path: Output ``.txt`` path.
        counts_path: Output counts sidecar path.
        top_k: Lines kept (None = all).
        with_df: Sidecar lines carry the document count.
        fan_in: Runs merged at once.
        batch_rows: Rows per batch read from a run.
        temp_dir: Folder for intermediate runs (needed with more than ``fan_in`` runs).

    Returns:
        ``{"vocabulary": (sha256, bytes), "counts": (sha256, bytes), "kept": {tokens,
        count}, "dropped_top_k": {tokens, count}, "first": the first line's token or None}``.

    Example:
        >>> write_vocabulary_files(runs, "v.txt", "v.counts.jsonl", top_k=None,
        ...                        with_df=False)["kept"]            # doctest: +SKIP
        {'tokens': 4, 'count': 10}
    """
    top = _merge_levels(runs, fan_in=max(2, fan_in), batch_rows=batch_rows,
                        temp_dir=temp_dir)
    merger = _Merger(top, batch_rows)
    vocab, counts = fs.HashingWriter.create(vocab_path), fs.HashingWriter.create(counts_path)
    kept = {"tokens": 0, "count": 0}
    rest = {"tokens": 0, "count": 0}
    first = None
    for chunk in merger.chunks():
        if top_k is not None and kept["tokens"] + chunk.num_rows > top_k:
            cut = top_k - kept["tokens"]
            tail = chunk.slice(cut)
            rest = {"tokens": tail.num_rows,
                    "count": int(pc.sum(tail.column("count")).as_py() or 0)}
            chunk = chunk.slice(0, cut)
        if first is None and chunk.num_rows:
            first = chunk.column("token")[0].as_py()  # the most frequent (impute)
        vocab.write(vocabulary_text(chunk.column("token").combine_chunks()))
        counts.write(counts_jsonl(chunk, with_df=with_df))
        kept["tokens"] += chunk.num_rows
        kept["count"] += int(pc.sum(chunk.column("count")).as_py() or 0)
        if rest["tokens"]:
            more = merger.rest()
            rest = {k: rest[k] + more[k] for k in rest}
            break
    return {"vocabulary": vocab.close(), "counts": counts.close(),
            "kept": kept, "dropped_top_k": rest, "first": first}
