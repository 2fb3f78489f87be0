"""Rejected input lines of the ELWC job: absolute numbering, range shards, sharded writing.

Every piece of an input file reports its rejected lines numbered from the piece's first line and
its physical line count. :class:`LineIndex` turns the line counts of all pieces into the offset of
each piece (one sort and one pass: ``O(P log P)`` for ``P`` pieces), so numbering a rejected line
is one dictionary lookup. Rejected lines are written by :class:`WriteRejected` as
``rejected/rejected-SSSSS-of-NNNNN.jsonl`` (one ``{"code", "file", "line", "reason", "text"}``
JSON object per line, see :func:`~beam_prep.ranking.data.value_rules.rejected_record`),
range-partitioned by their position in the whole input: shard ``s`` holds the lines whose
0-based global position ``g`` (lines of earlier files + line in file - 1) satisfies
``g * N // total_lines == s``. So the shards, read in name order, are sorted by (file, line),
and their bytes do not depend on the runner, the worker count or the piece size. Every shard file
is written, possibly empty. The rejected lines never travel through a side input: each piece's
lines are keyed by shard, grouped (``GroupRejected``) and written by one worker per shard.

Example:
    >>> index = LineIndex.from_piece_lines({(0, 0): 6, (0, 1): 4, (1, 0): 10})
    >>> index.file_line((0, 1), 1), index.global_position((0, 1), 1), index.total_lines
    (7, 6, 20)
    >>> rejected_shard(6, 20, 4), rejected_path(1, 4)
    (1, 'rejected/rejected-00001-of-00004.jsonl')
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import apache_beam as beam
from apache_beam import pvalue

from beam_prep.io import filesystem

REJECTED_DIR = "rejected"
REJECTED_GLOB = "rejected/rejected-?????-of-?????.jsonl"
PieceKey = tuple[int, int]  # (file index, piece index in the file)
_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)  # json.dumps builds one per call


def rejected_path(shard: int, num_shards: int) -> str:
    """``rejected/rejected-SSSSS-of-NNNNN.jsonl`` (relative to the output folder)."""
    return f"{REJECTED_DIR}/rejected-{shard:05d}-of-{num_shards:05d}.jsonl"


@dataclasses.dataclass(frozen=True)
class LineIndex:
    """Where the lines of every piece start, in its file and in the whole input.

    Attributes:
        offsets: ``(file index, piece index)`` → ``(lines of earlier pieces of the same file,
            lines of earlier pieces of the whole input)``, in (file, piece) order.
        total_lines: physical lines (blank ones included) of the whole input.
    """

    offsets: Mapping[PieceKey, tuple[int, int]]
    total_lines: int

    @classmethod
    def from_piece_lines(cls, piece_lines: Mapping[PieceKey, int]) -> LineIndex:
        """Prefix sums of the piece line counts, in (file, piece) order (one sort, one pass).

        Example:
            >>> LineIndex.from_piece_lines({(1, 0): 2, (0, 0): 3}).offsets
            {(0, 0): (0, 0), (1, 0): (0, 3)}
        """
        offsets: dict[PieceKey, tuple[int, int]] = {}
        file_index, in_file, overall = -1, 0, 0
        for key, n in sorted(piece_lines.items()):
            if key[0] != file_index:
                file_index, in_file = key[0], 0
            offsets[key] = (in_file, overall)
            in_file += n
            overall += n
        return cls(offsets, overall)

    def file_line(self, piece: PieceKey, line: int) -> int:
        """1-based line number in the file of the 1-based ``line`` of ``piece``."""
        return self.offsets[piece][0] + line

    def global_position(self, piece: PieceKey, line: int) -> int:
        """0-based position in the whole input of the 1-based ``line`` of ``piece``."""
        return self.offsets[piece][1] + line - 1


def rejected_shard(position: int, total_lines: int, num_shards: int) -> int:
    """Range shard of a 0-based global line position: ``position * num_shards // total``."""
    if total_lines <= 0:
        return 0
    return min(num_shards - 1, max(0, position * num_shards // total_lines))


def number_rejected(piece: PieceKey, rejected: Iterable[dict[str, Any]], index: LineIndex,
                    num_shards: int) -> dict[int, list[tuple[int, int, str]]]:
    """One piece's rejected lines numbered from their file's start, grouped by rejected shard.

    Returns ``{shard: [(file index, line, JSON text), ...]}``; the JSON object has the keys
    of the piece's records (``code``, ``file``, ``line``, ``reason``, ``text``), sorted.
    Cost: one lookup per line.

    Example:
        >>> idx = LineIndex.from_piece_lines({(0, 0): 2, (0, 1): 2})
        >>> number_rejected((0, 1), [{"file": "a", "line": 1, "reason": "r", "text": "x"}],
        ...                 idx, 2)
        {1: [(0, 3, '{"file": "a", "line": 3, "reason": "r", "text": "x"}')]}
    """
    in_file, overall = index.offsets[piece]
    out: dict[int, list[tuple[int, int, str]]] = {}
    for rej in rejected:
        line = in_file + rej["line"]
        shard = rejected_shard(overall + rej["line"] - 1, index.total_lines, num_shards)
        text = _JSON.encode({**rej, "line": line})
        out.setdefault(shard, []).append((piece[0], line, text))
    return out


class _NumberRejected(beam.DoFn):
    def __init__(self, num_shards: int) -> None:
        self.num_shards = num_shards

    def process(self, element: tuple[PieceKey, list[dict[str, Any]]], meta: dict[str, Any]
                ) -> Iterator[tuple[int, list[tuple[int, int, str]]]]:
        piece, rejected = element
        yield from number_rejected(piece, rejected, meta["line_index"], self.num_shards).items()


class _WriteRejectedShard(beam.DoFn):
    def __init__(self, output: str, num_shards: int) -> None:
        self.output = output
        self.num_shards = num_shards

    def process(self, element: tuple[int, Iterable[list[tuple[int, int, str]]]]
                ) -> Iterator[dict[str, Any]]:
        shard, batches = element
        rows = sorted(row for batch in batches for row in batch)
        rel = rejected_path(shard, self.num_shards)
        filesystem.write_bytes(filesystem.join(self.output, rel),
                               "".join(text + "\n" for _, _, text in rows).encode("utf-8"))
        yield {"path": rel, "lines": len(rows)}


class NumberRejected(beam.PTransform):
    """``((file, piece), [rejected dict, ...])`` → ``(shard, [(file, line, json), ...])``.

    Args:
        meta: the one-element PCollection holding ``{"line_index": LineIndex, ...}``.
        num_shards: number of rejected shards.
    """

    def __init__(self, meta: beam.PCollection, num_shards: int) -> None:
        super().__init__()
        self.meta = meta
        self.num_shards = num_shards

    def expand(self, rejected: beam.PCollection) -> beam.PCollection:
        return rejected | "Number" >> beam.ParDo(_NumberRejected(self.num_shards),
                                                 pvalue.AsSingleton(self.meta))


class WriteRejected(beam.PTransform):
    """Writes the non-empty rejected shards under ``output``; one ``{"path", "lines"}`` per file.

    Input: ``(shard, [(file index, line, JSON text), ...])`` from :class:`NumberRejected`.
    The empty shards are left to the caller (see :func:`rejected_path`).
    """

    def __init__(self, output: str, num_shards: int) -> None:
        super().__init__()
        self.output = output
        self.num_shards = num_shards

    def expand(self, numbered: beam.PCollection) -> beam.PCollection:
        return (numbered
                | "GroupRejected" >> beam.GroupByKey()
                | "WriteRejectedShards" >> beam.ParDo(
                    _WriteRejectedShard(self.output, self.num_shards)))
