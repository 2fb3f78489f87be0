"""Streams ``(token, count)`` pairs out of a ``vocab/<f>.counts.jsonl`` sidecar.

The sidecar is read in 4 MiB blocks (local or ``gs://`` through Beam FileSystems) and never
held whole; line *i* is the token of vocabulary index *i* (docs/artifacts.md). A line that is
not ``[token, count]`` or ``[token, count, df]`` is an :class:`ArtifactError`.

Example:
    >>> import io
    >>> list(iter_pairs(io.BytesIO(b'["a",3]\\n["b, c",1,1]\\n'), name="f"))
    [('a', 3), ('b, c', 1)]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, BinaryIO

from beam_prep.errors import ArtifactError
from beam_prep.spec.weights import is_weighted

BLOCK_BYTES = 1 << 22


def _count_ok(count: object, weighted: bool) -> bool:
    """An integer >= 0; for a weighted feature (spec.weights) a finite number >= 0."""
    kinds = (int, float) if weighted else (int,)
    return (type(count) in kinds and count >= 0  # type: ignore[operator]
            and (type(count) is int or math.isfinite(count)))  # type: ignore[arg-type]


def _parse(line: bytes, number: int, name: str, path: str = "?",
           weighted: bool = False) -> tuple[str, int]:
    try:
        row = json.loads(line)
        if not isinstance(row, list) or len(row) not in (2, 3) or not isinstance(row[0], str):
            raise ValueError("not a [token, count] array")
        count = row[1]
        if not _count_ok(count, weighted):
            raise ValueError("the count is not a non-negative " +
                             ("finite number" if weighted else "integer"))
    except ValueError as e:
        raise ArtifactError(
            f"Feature {name!r}: line {number} of the counts sidecar {path} is not "
            f"[token, count] or [token, count, df] ({e}). Received: {line[:80]!r}. Fix: "
            "re-run `beam-prep analyze`; the sidecar is written by the analysis and must not "
            "be edited.") from e
    return row[0], count


def _well_formed(row: object, weighted: bool = False) -> bool:
    return (type(row) is list and 2 <= len(row) <= 3 and type(row[0]) is str
            and _count_ok(row[1], weighted))


def _parse_block(lines: list[bytes], first: int, name: str,
                 path: str = "?", weighted: bool = False) -> list[tuple[str, int]]:
    """Parses a block's lines with one ``json.loads``; per line only to name a bad one."""
    try:
        rows = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        rows = None
    if rows is None or len(rows) != len(lines) or not all(
            _well_formed(r, weighted) for r in rows):
        return [_parse(line, first + k, name, path, weighted) for k, line in enumerate(lines)]
    return [(row[0], row[1]) for row in rows]


def iter_pairs(stream: BinaryIO, *, name: str, path: str = "?",
               max_line: int | None = None, weighted: bool = False
               ) -> Iterator[tuple[str, int]]:
    """Yields ``(token, count)`` for each line of a sidecar stream, in file order.

    Each block's lines are decoded by one ``json.loads`` call (a malformed block is then
    re-read line by line to name the bad line).

    Args:
        stream: Binary file object at the start of the sidecar.
        name: Feature name, for error messages.
        path: The sidecar's path, for error messages.
        max_line: Longest line accepted (default
            :data:`beam_prep.io.artifacts.MAX_LINE_BYTES`); memory stays within a block and
            a line.
        weighted: Counts are sums of weights (finite numbers >= 0; spec.weights).

    Raises:
        ArtifactError: A malformed line, or one longer than ``max_line``.
    """
    from beam_prep.io import artifacts

    limit = artifacts.MAX_LINE_BYTES if max_line is None else max_line
    rest = b""
    number = 1
    while True:
        block = stream.read(BLOCK_BYTES)
        if block:
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            artifacts.check_line_length(rest, path, limit)
        else:
            lines = [rest]
        lines = [line for line in lines if line.strip()]
        if lines:
            yield from _parse_block(lines, number, name, path, weighted)
            number += len(lines)
        if not block:
            return


def iter_sidecar(art: Any, name: str) -> Iterator[tuple[str, int]]:
    """Streams a feature's counts sidecar (local or ``gs://``) after checking it against the
    manifest (:meth:`beam_prep.io.artifacts.Artifacts.open_file`); see :func:`iter_pairs`."""
    with art.open_file(name, "counts") as f:
        yield from iter_pairs(f, name=name, path=art.file_path(name, "counts"),
                              weighted=is_weighted(art.spec.feature(name)))
