"""Rejected rows → ``rejected/rejected-SSSSS-of-NNNNN.jsonl``, sharded, ordered, bounded.

No step ever holds every rejected row (1% of 1B rows is 5-20 GB):

1. ``KeyRejectedChunks``: each row ``(sort key, json line)`` is keyed by its *chunk*:
   ``(file, row // CHUNK_ROWS)`` (rows with no number: chunk ``-1``).
2. ``GroupRejectedChunks`` + ``WriteRejectedChunks``: one worker sorts one chunk (at most
   :data:`CHUNK_ROWS` rows) and writes it to ``_tmp/rejected/``; it yields a small
   :class:`Chunk` descriptor.
3. ``ListRejectedChunks`` gathers only the descriptors (one per non-empty chunk);
   ``PlanRejectedShards`` packs consecutive chunks (ordered by file, then row) into shards of
   about :data:`SHARD_BYTES` (a chunk is never cut), which fixes ``NNNNN``.
4. ``WriteRejectedShards`` (spread over workers) concatenates each shard's chunk files.

Ordering and names are functions of the rejected rows alone: identical for every runner,
worker count, read split size and retry. Content is ordered by (file, row number, line).

Example:
    >>> chunks = [Chunk("a.csv", 1, "t/1", 10, 2), Chunk("a.csv", 0, "t/0", 10, 3)]
    >>> for name, parts in plan_shards(chunks, shard_bytes=5):
    ...     print(name, parts)
    rejected/rejected-00000-of-00002.jsonl ('t/0',)
    rejected/rejected-00001-of-00002.jsonl ('t/1',)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.analyzers import spill
from beam_prep.io import filesystem as fs
from beam_prep.io.contract import artifacts as layout

#: Row numbers per sort chunk: the most rows one worker sorts in memory.
CHUNK_ROWS = 100_000
#: Target size of one rejected-rows shard (chunks are never cut, so a shard may exceed it).
SHARD_BYTES = 64 << 20
#: Glob of the shard files, relative to the artifact directory.
SHARD_GLOB = f"{layout.REJECTED_DIR}/rejected-*-of-*.jsonl"


@dataclasses.dataclass(frozen=True, order=True)
class Chunk:
    """One sorted run of rejected rows, written to a scratch file.

    Attributes:
        source: Input file of the rows.
        index: ``row // CHUNK_ROWS`` (-1: rows without a number).
        path: Scratch file holding the chunk's lines.
        size: Bytes of the scratch file.
        rows: Lines in it.
    """

    source: str
    index: int
    path: str
    size: int
    rows: int


def shard_relpath(shard: int, shards: int) -> str:
    """``rejected/rejected-SSSSS-of-NNNNN.jsonl``.

    Example:
        >>> shard_relpath(2, 10)
        'rejected/rejected-00002-of-00010.jsonl'
    """
    return f"{layout.REJECTED_DIR}/rejected-{shard:05d}-of-{shards:05d}.jsonl"


def chunk_key(item: tuple[str, str], chunk_rows: int = CHUNK_ROWS
              ) -> tuple[tuple[str, int], tuple[str, str]]:
    """Keys a ``(sort key, line)`` pair by ``(file, chunk)``.

    The sort key is ``"<file>\\x00<row, 20 digits>"`` (row -1 when unknown), as
    :class:`~beam_prep.analyzers.split_fn.AnalyzeSplitFn` emits it.

    Example:
        >>> chunk_key(("a.csv\\x00" + f"{250001:020d}", "{}"))[0]
        ('a.csv', 2)
    """
    source, row = item[0].rsplit("\x00", 1)
    number = int(row)
    return (source, number // chunk_rows if number >= 0 else -1), item


def plan_shards(chunks: Iterable[Chunk], *, shard_bytes: int = SHARD_BYTES
                ) -> list[tuple[str, tuple[str, ...]]]:
    """Packs chunks, ordered by (file, chunk), into shards of about ``shard_bytes``.

    A shard is closed once it holds ``shard_bytes`` or more; empty chunks are skipped.

    Returns:
        ``(shard relpath, chunk scratch paths in order)`` per shard.
    """
    groups: list[list[str]] = []
    size = shard_bytes
    for c in sorted(chunks):
        if not c.rows:
            continue
        if size >= shard_bytes:
            groups.append([])
            size = 0
        groups[-1].append(c.path)
        size += c.size
    return [(shard_relpath(i, len(groups)), tuple(g)) for i, g in enumerate(groups)]


class _WriteChunk(beam.DoFn):
    def __init__(self, temp_dir: str) -> None:
        self._temp = temp_dir

    def process(self, kv: tuple[tuple[str, int], Iterable[tuple[str, str]]]) -> Iterator[Chunk]:
        (source, index), items = kv
        lines = [line for _, line in sorted(items)]
        body = "".join(line + "\n" for line in lines).encode("utf-8")
        path = f"{self._temp}/rejected/{spill.stable_id(source)}-{index + 1:09d}.jsonl"
        fs.write_bytes(path, body)  # same name and bytes on a retry
        yield Chunk(source, index, path, len(body), len(lines))


class _WriteShard(beam.DoFn):
    def __init__(self, output_dir: str) -> None:
        self._out = output_dir

    def process(self, shard: tuple[str, Sequence[str]]) -> Iterator[str]:
        relpath, parts = shard
        target = fs.join(self._out, relpath)
        fs.makedirs(FileSystems.split(target)[0])
        plain = CompressionTypes.UNCOMPRESSED
        with FileSystems.create(target, compression_type=plain) as out:
            for part in parts:
                with FileSystems.open(part, compression_type=plain) as f:
                    while block := f.read(1 << 22):
                        out.write(block)
        yield relpath


class WriteRejected(beam.PTransform):
    """Writes ``(sort key, json line)`` pairs as ordered shards; outputs the sorted list of
    shard relpaths (one element; ``[]`` when nothing was rejected).

    Args:
        output_dir: Artifact directory.
        temp_dir: Scratch directory (removed by the caller at the end).
        chunk_rows: Row numbers per sort chunk.
        shard_bytes: Target shard size.
    """

    def __init__(self, output_dir: str, temp_dir: str, *, chunk_rows: int = CHUNK_ROWS,
                 shard_bytes: int = SHARD_BYTES) -> None:
        super().__init__()
        self._out, self._temp = output_dir, temp_dir
        self._chunk_rows, self._shard_bytes = chunk_rows, shard_bytes

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        shard_bytes = self._shard_bytes
        return (rows
                | "KeyRejectedChunks" >> beam.Map(chunk_key, self._chunk_rows)
                | "GroupRejectedChunks" >> beam.GroupByKey()
                | "WriteRejectedChunks" >> beam.ParDo(_WriteChunk(self._temp))
                | "ListRejectedChunks" >> beam.combiners.ToList()
                | "PlanRejectedShards" >> beam.FlatMap(
                    lambda chunks: plan_shards(chunks, shard_bytes=shard_bytes))
                | "SpreadRejectedShards" >> beam.Reshuffle()
                | "WriteRejectedShards" >> beam.ParDo(_WriteShard(self._out))
                | "ListRejectedShards" >> beam.combiners.ToList()
                | "SortRejectedShards" >> beam.Map(sorted))
