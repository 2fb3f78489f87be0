"""Streams ``(token, count)`` pairs out of a ``vocab/<f>.counts.jsonl`` sidecar.

The sidecar is read in 4 MiB blocks (local or ``gs://`` through Beam FileSystems) and never
held whole; line *i* is the token of vocabulary index *i* (docs/artifacts.md). The lines are
parsed by :mod:`beam_prep.io.contract.counts_sidecar`: one that is not ``[token, count]`` or
``[token, count, df]`` is an :class:`ArtifactError`.

Example:
    >>> import io
    >>> list(iter_pairs(io.BytesIO(b'["a",3]\\n["b, c",1,1]\\n'), name="f"))
    [('a', 3), ('b, c', 1)]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from beam_prep.io.contract import counts_sidecar
from beam_prep.spec.weights import is_weighted

BLOCK_BYTES = counts_sidecar.BLOCK_BYTES


def iter_pairs(stream: BinaryIO, *, name: str, path: str = "?",
               max_line: int | None = None, weighted: bool = False
               ) -> Iterator[tuple[str, int]]:
    """Yields ``(token, count)`` for each line of a sidecar stream, in file order
    (:func:`beam_prep.io.contract.counts_sidecar.iter_rows`, ``BLOCK_BYTES`` at a time).

    Args:
        stream: Binary file object at the start of the sidecar.
        name: Feature name, for error messages.
        path: The sidecar's path, for error messages.
        max_line: Longest line accepted (default
            :data:`beam_prep.io.contract.artifacts.MAX_LINE_BYTES`); memory stays within a block and
            a line.
        weighted: Counts are sums of weights (finite numbers >= 0; spec.weights).

    Raises:
        ArtifactError: A malformed line, or one longer than ``max_line``.
    """
    for row in counts_sidecar.iter_rows(stream, name=name, path=path, weighted=weighted,
                                        max_line=max_line, block_bytes=BLOCK_BYTES):
        yield row[0], row[1]


def iter_sidecar(art: Any, name: str) -> Iterator[tuple[str, int]]:
    """Streams a feature's counts sidecar (local or ``gs://``) after checking it against the
    manifest (:meth:`beam_prep.io.contract.artifacts.Artifacts.open_file`); see
    :func:`iter_pairs`."""
    with art.open_file(name, "counts") as f:
        yield from iter_pairs(f, name=name, path=art.file_path(name, "counts"),
                              weighted=is_weighted(art.spec.feature(name)))
