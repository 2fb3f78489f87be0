"""Sorted runs of per-key lines, merged block by block into one per-key file.

A *run* is one hash partition's lines: an Arrow table ``{key, line}`` (large strings)
sorted by key (UTF-8 bytes), kept in memory when small or spilled as an Arrow IPC stream
of record batches under the run's ``_tmp/`` directory (through Beam FileSystems) when it
holds :data:`SPILL_ROWS` rows or more, so a partition of millions of keys travels as a
file name, not as a Beam element. Runs hold disjoint keys (one hash partition each).

The merge is vectorised block by block: each run contributes one batch at a time; the
*bound* is the smallest of the batches' last keys; every buffered row with a key at or
below the bound is final (a run's later rows all have larger keys), so those rows are
sorted together and written, and the run that supplied the bound reads its next batch.
Memory is about ``runs x BATCH_ROWS`` lines whatever the number of keys; the bytes written
do not depend on the number of runs.

Example:
    >>> import pyarrow as pa
    >>> a = make_run(pa.array(["a", "c"]), pa.array(["1\\n", "3\\n"]), "unused")
    >>> b = make_run(pa.array(["b"]), pa.array(["2\\n"]), "unused")
    >>> b"".join(merged_bytes([a, b]))
    b'1\\n2\\n3\\n'
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.analyzers.key_lines import text_bytes
from beam_prep.analyzers.spill import SpillRef
from beam_prep.io import filesystem as fs

SCHEMA = pa.schema([("key", pa.large_string()), ("line", pa.large_string())])
#: Rows per record batch of a spilled run, and per merge read.
BATCH_ROWS = 1 << 16
#: Runs of at least this many rows are spilled to a file.
SPILL_ROWS = 1 << 16


def make_run(keys: pa.Array, lines: pa.Array, path: str, *,
             spill_rows: int | None = None) -> pa.Table | SpillRef:
    """A run of ``(keys, lines)`` already sorted by key: the table, or spilled to ``path``
    (an Arrow IPC stream of :data:`BATCH_ROWS`-row batches) when it has ``spill_rows``
    rows or more (default :data:`SPILL_ROWS`)."""
    table = pa.table([keys.cast(pa.large_string()), lines.cast(pa.large_string())],
                     schema=SCHEMA)
    if table.num_rows < (SPILL_ROWS if spill_rows is None else spill_rows):
        return table
    fs.makedirs(FileSystems.split(path)[0])
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        with pa.ipc.new_stream(f, SCHEMA) as writer:
            writer.write_table(table, max_chunksize=BATCH_ROWS)  # read per batch
    return SpillRef(path, table.num_rows)


def read_run(run: pa.Table | SpillRef, *, batch_rows: int | None = None
             ) -> Iterator[pa.Table]:
    """The non-empty batches of a run, in order (a spilled run is streamed)."""
    if isinstance(run, SpillRef):
        with FileSystems.open(run.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            for batch in pa.ipc.open_stream(f):
                if batch.num_rows:
                    yield pa.Table.from_batches([batch])
        return
    step = BATCH_ROWS if batch_rows is None else batch_rows
    for start in range(0, run.num_rows, step):
        yield run.slice(start, step)


def merged_bytes(runs: Sequence[pa.Table | SpillRef], *,
                 batch_rows: int | None = None) -> Iterator[bytes]:
    """The runs' lines in key order (UTF-8 bytes of the keys), block by block."""
    heads: list[list] = []
    for run in runs:
        reader = read_run(run, batch_rows=batch_rows)
        first = next(reader, None)
        if first is not None:
            heads.append([first, reader])
    while heads:
        bound = min(h[0].column("key")[-1].as_py().encode("utf-8") for h in heads)
        scalar = pa.scalar(bound.decode("utf-8"), pa.large_string())
        taken: list[pa.Table] = []
        for head in heads:
            table = head[0]
            n = int(pc.sum(pc.less_equal(table.column("key"), scalar)).as_py() or 0)
            taken.append(table.slice(0, n))
            head[0] = table.slice(n)
            if head[0].num_rows == 0:
                head[0] = next(head[1], None)
        heads = [h for h in heads if h[0] is not None]
        block = pa.concat_tables(taken)
        if len(taken) > 1:
            block = block.take(pc.sort_indices(block.column("key")))
        yield text_bytes(block.column("line").combine_chunks())
