"""The counts sidecar of a vocabulary (``vocab/<feature>.counts.jsonl``): its one line parser.

One JSON array per line, in the order of ``vocab/<feature>.txt`` (line *i* is vocabulary
index *i*; docs/artifacts.md): ``[token, count]``, or ``[token, count, df]`` for a text
feature with tf_idf. ``count`` is an integer >= 0, or for a feature with instance weights
(``weights`` / ``weights_expr``) a finite number >= 0 (a sum of weights); ``df`` is an
integer >= 0. Blank lines are skipped.

Every reader of the sidecar goes through :func:`iter_rows` (the artifact reader's ``counts``
and ``document_frequencies``, the drift diff, the transform job's and the generated layers'
tf_idf state: :func:`read_document_frequencies`) or, for single lines, :func:`parse_row` (the
report, whose count-only scan of the lines after the top ones is its own). The generated Keras
module keeps its own few lines for the document frequencies: it must run without beam_prep.

Example:
    >>> import io
    >>> list(iter_rows(io.BytesIO(b'["a",3]\\n\\n["b, c",1,1]\\n'), name="f"))
    [['a', 3], ['b, c', 1, 1]]
    >>> document_frequencies(iter_rows(io.BytesIO(b'["a",3,2]\\n'), name="f"), name="f")
    [2]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs
from beam_prep.io.line_bound import check_line_length

#: Bytes read at a time: memory stays within a block and a line.
BLOCK_BYTES = 1 << 22


def _count_ok(count: object, weighted: bool) -> bool:
    """An integer >= 0; for a weighted feature a finite number >= 0."""
    kinds = (int, float) if weighted else (int,)
    return (type(count) in kinds and count >= 0  # type: ignore[operator]
            and (type(count) is int or math.isfinite(count)))  # type: ignore[arg-type]


def _problem(row: object, weighted: bool) -> str | None:
    """What is wrong with a decoded line, None when it is a well-formed row."""
    if type(row) is not list or len(row) not in (2, 3) or type(row[0]) is not str:
        return "not a [token, count] array"
    if not _count_ok(row[1], weighted):
        return "the count is not a non-negative " + ("finite number" if weighted else "integer")
    if len(row) == 3 and not (type(row[2]) is int and row[2] >= 0):
        return "the document frequency is not a non-negative integer"
    return None


def bad_line(line: bytes, number: int, *, name: str | None, path: str = "?",
             problem: str) -> ArtifactError:
    """The error for line ``number`` (1-based) of a sidecar that is not a row."""
    where = f"Feature {name!r}: line" if name is not None else "Line"
    return ArtifactError(
        f"{where} {number} of the counts sidecar {path} is not [token, count] or "
        f"[token, count, df] ({problem}). Received: {line[:80]!r}. Fix: re-run `beam-prep "
        "analyze`; the sidecar is written by the analysis and must not be edited.")


def parse_row(line: bytes, number: int, *, name: str | None, path: str = "?",
              weighted: bool = False) -> list[Any]:
    """One sidecar line as ``[token, count]`` or ``[token, count, df]``.

    Args:
        line: The line, without its newline.
        number: Its 1-based line number, for the error.
        name: Feature name, for the error (None: not known).
        path: The sidecar's path, for the error.
        weighted: Counts are sums of instance weights.

    Raises:
        ArtifactError: The line is not such a row.
    """
    try:
        row = json.loads(line)
    except ValueError as e:
        raise bad_line(line, number, name=name, path=path, problem=str(e)) from e
    problem = _problem(row, weighted)
    if problem is not None:
        raise bad_line(line, number, name=name, path=path, problem=problem)
    return row


def _parse_block(lines: list[bytes], first: int, name: str | None, path: str,
                 weighted: bool) -> list[list[Any]]:
    """The rows of a block's lines (line ``first`` first), decoded by one ``json.loads``;
    line by line only to name a bad one."""
    kept = [line for line in lines if line.strip()]
    if not kept:
        return []
    try:
        rows = json.loads(b"[" + b",".join(kept) + b"]")
    except ValueError:
        rows = None
    if rows is not None and len(rows) == len(kept) and all(
            _problem(r, weighted) is None for r in rows):
        return rows
    return [parse_row(line, first + k, name=name, path=path, weighted=weighted)
            for k, line in enumerate(lines) if line.strip()]


def iter_rows(stream: BinaryIO, *, name: str | None, path: str = "?", weighted: bool = False,
              max_line: int | None = None, block_bytes: int = BLOCK_BYTES
              ) -> Iterator[list[Any]]:
    """Yields the rows of a sidecar stream in file order, read ``block_bytes`` at a time.

    Args:
        stream: Binary file object at the start of the sidecar.
        name: Feature name, for errors (None: not known).
        path: The sidecar's path, for errors.
        weighted: Counts are sums of instance weights (finite numbers >= 0).
        max_line: Longest line accepted (default
            :data:`beam_prep.io.line_bound.MAX_LINE_BYTES`).
        block_bytes: Read size.

    Raises:
        ArtifactError: A line that is not a row, or one longer than ``max_line``.
    """
    rest = b""
    number = 1  # line number of the block's first line
    while True:
        block = stream.read(block_bytes)
        if block:
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            check_line_length(rest, path, max_line)
        else:
            lines = [rest]
        yield from _parse_block(lines, number, name, path, weighted)
        number += len(lines)
        if not block:
            return


def document_frequencies(rows: Iterable[list[Any]], *, name: str | None) -> list[int]:
    """The ``df`` of every row (text features with tf_idf).

    Raises:
        ArtifactError: A row has no document frequency.
    """
    df = []
    for row in rows:
        if len(row) < 3:
            raise ArtifactError(f"Feature {name!r} has no document frequencies." if name
                                is not None else "The counts sidecar has no document "
                                "frequencies.")
        df.append(row[2])
    return df


def read_document_frequencies(path: str) -> list[int]:
    """The ``df`` of every line of the sidecar at ``path`` (local or ``scheme://``), read
    without the manifest check of :class:`~beam_prep.io.contract.artifacts.Artifacts` (the tf_idf
    state of the transform job and of the layers built from a plan).

    Raises:
        ArtifactError: A line that is not a row, or a row without ``df``.
    """
    with fs.open_read(path) as f:  # counts are not used here: any kind is accepted
        return document_frequencies(iter_rows(f, name=None, path=path, weighted=True),
                                    name=None)
