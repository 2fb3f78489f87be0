"""Spilling large vocabulary tables to files instead of passing them through the shuffle.

A vocabulary partition of millions of tokens is a poor Beam element: Beam's local runner
holds every element of a stage in memory, and remote runners move each element as one
blob. Tables at or above a row threshold are therefore written as Arrow IPC files under
the artifact directory's ``_tmp/`` (through Beam FileSystems, so ``gs://`` works) and only a
:class:`SpillRef` travels through the pipeline. File names derive from deterministic ids,
so a retried bundle rewrites the same file with the same bytes. ``_tmp/`` is removed
before the manifest is written.

Example:
    >>> ref = spill(table, "out/_tmp/counts/f/p003/abc.arrow")     # doctest: +SKIP
    >>> materialize(ref).num_rows == table.num_rows                 # doctest: +SKIP
    True
"""

from __future__ import annotations

import dataclasses
import hashlib

import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.io import filesystem as fs

TMP_DIR = "_tmp"
DEFAULT_SPILL_ROWS = 1 << 13


@dataclasses.dataclass(frozen=True)
class SpillRef:
    """A vocabulary table stored in a file.

    Attributes:
        path: Arrow IPC stream file.
        rows: Number of rows (for logging and sizing).
    """

    path: str
    rows: int


def stable_id(text: str) -> str:
    """Short deterministic file-name component for any id (e.g. a split id)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]


def spill(table: pa.Table, path: str) -> SpillRef:
    """Writes ``table`` to ``path`` (Arrow IPC stream) and returns its reference."""
    fs.makedirs(FileSystems.split(path)[0])
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        with pa.ipc.new_stream(f, table.schema) as writer:
            writer.write_table(table)
    return SpillRef(path, table.num_rows)


def spill_by_content(table: pa.Table, directory: str) -> SpillRef:
    """Spills ``table`` to ``<directory>/<sha1 of its bytes>.arrow``.

    For tables with no natural identity (a combiner's merged accumulator): the name is a
    function of the content only, so a rerun or a retried bundle writes the same file name
    with the same bytes, and two equal tables share one file (never deleted one by one).

    Example:
        >>> ref = spill_by_content(table, "out/_tmp/combine")      # doctest: +SKIP
        >>> ref.path                                                # doctest: +SKIP
        'out/_tmp/combine/3f2a....arrow'
    """
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    body = sink.getvalue()
    path = f"{directory}/{hashlib.sha1(body).hexdigest()}.arrow"
    fs.write_bytes(path, body.to_pybytes())
    return SpillRef(path, table.num_rows)


def maybe_spill(table: pa.Table, path: str, threshold: int) -> pa.Table | SpillRef:
    """Spills tables with at least ``threshold`` rows; smaller ones stay in memory."""
    return spill(table, path) if table.num_rows >= threshold else table


def materialize(item: pa.Table | SpillRef) -> pa.Table:
    """The table itself, reading it back if it was spilled."""
    if isinstance(item, SpillRef):
        with FileSystems.open(item.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            return pa.ipc.open_stream(f.read()).read_all()
    return item


def tmp_dir(output_dir: str) -> str:
    """The scratch directory of an analysis run."""
    return fs.join(output_dir, TMP_DIR)
