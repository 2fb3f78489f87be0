"""One streaming pass over a ``vocab/<f>.counts.jsonl`` sidecar: top tokens and a coverage curve.

A sidecar can hold 20M lines. It is read in 4 MiB blocks through Beam FileSystems (local or
``gs://``) and never held whole: the first ``top_n`` lines are decoded with ``json.loads``
(tokens shown on the page); for the others only the count is read (the number after the last
comma, or the second to last with a document frequency: a JSON string may contain commas, its
end may not be followed by a bare number). The cumulative count is sampled at every rank up to
``dense_ranks`` and then at geometrically spaced ranks (ratio ``growth``), plus the last rank:
about 260 points for 20M tokens, whatever the size.

Example:
    >>> import io
    >>> s = summarize_lines(io.BytesIO(b'["a",3]\\n["b, c",1]\\n'), top_n=1)
    >>> s.top, s.tokens, s.total, s.curve
    ([('a', 3, None)], 2, 4, [(1, 3), (2, 4)])
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import BinaryIO

from beam_prep.errors import ArtifactError

_BLOCK = 1 << 22


@dataclass(frozen=True)
class SidecarSummary:
    """What the report keeps of a sidecar.

    Attributes:
        top: ``(token, count, df or None)`` of the first ``top_n`` lines.
        tokens: Lines (tokens) in the sidecar.
        total: Sum of all counts.
        curve: ``(rank k, sum of the first k counts)`` at the sampled ranks, rank ascending,
            ending with ``(tokens, total)``.
        has_df: The lines carry a document frequency.
    """

    top: list[tuple[str, int, int | None]] = field(default_factory=list)
    tokens: int = 0
    total: int = 0
    curve: list[tuple[int, int]] = field(default_factory=list)
    has_df: bool = False


def _tail_count(line: bytes, has_df: bool) -> int:
    body = line.rstrip()
    if not body.endswith(b"]"):
        raise ValueError("no closing bracket")
    parts = body[:-1].rsplit(b",", 2 if has_df else 1)
    return int(parts[1])


def summarize_lines(stream: BinaryIO, *, top_n: int = 25, dense_ranks: int = 50,
                    growth: float = 1.06, name: str = "?") -> SidecarSummary:
    """Summarizes a sidecar read from a binary stream (see the module docstring).

    Args:
        stream: Binary file object positioned at the start of the sidecar.
        top_n: Lines decoded in full and kept.
        dense_ranks: Every rank up to this one is a curve point.
        growth: Ratio between consecutive curve ranks after ``dense_ranks``.
        name: Feature name for error messages.

    Returns:
        The :class:`SidecarSummary`.

    Raises:
        ArtifactError: A line is not ``[token, count]`` / ``[token, count, df]``.
    """
    top: list[tuple[str, int, int | None]] = []
    curve: list[tuple[int, int]] = []
    has_df = False
    k = total = 0
    next_rank = 1.0
    rest = b""
    while True:
        block = stream.read(_BLOCK)
        if not block:
            lines = [rest] if rest.strip() else []
        else:
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
        for line in lines:
            if not line.strip():
                continue
            try:
                if k < top_n:
                    row = json.loads(line)
                    if k == 0:
                        has_df = len(row) == 3
                    count = int(row[1])
                    top.append((str(row[0]), count, int(row[2]) if has_df else None))
                else:
                    count = _tail_count(line, has_df)
            except (ValueError, IndexError, TypeError) as e:
                raise ArtifactError(
                    f"Feature {name!r}: line {k + 1} of the counts sidecar is not "
                    f"[token, count] or [token, count, df] ({e}). Received: "
                    f"{line[:80]!r}. Fix: re-run `beam-prep analyze`; the sidecar is written "
                    "by the analysis and must not be edited.") from e
            k += 1
            total += count
            if k >= next_rank:
                curve.append((k, total))
                next_rank = k + 1 if k < dense_ranks else max(k + 1, k * growth)
        if not block:
            break
    if k and (not curve or curve[-1][0] != k):
        curve.append((k, total))
    return SidecarSummary(top=top, tokens=k, total=total, curve=curve, has_df=has_df)


def summarize_sidecar(path: str, *, name: str, top_n: int = 25) -> SidecarSummary:
    """Streams the sidecar at ``path`` (local or ``gs://``) once; see :func:`summarize_lines`."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return summarize_lines(f, top_n=top_n, name=name)
