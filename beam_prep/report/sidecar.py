"""One streaming pass over a ``vocab/<f>.counts.jsonl`` sidecar: top tokens and a coverage curve.

A sidecar can hold 20M lines. It is read in 4 MiB blocks through Beam FileSystems (local or
``gs://``) and never held whole: the first ``top_n`` lines are parsed in full by
:func:`beam_prep.io.contract.counts_sidecar.parse_row` (tokens shown on the page); for the
others only the count is read (the number after the last comma, or the second to last with a
document frequency: a JSON string may contain commas, its end may not be followed by a bare
number). The
cumulative count is sampled at every rank up to ``dense_ranks`` and then at geometrically
spaced ranks (ratio ``growth``), plus the last rank: about 260 points for 20M tokens, whatever
the size. Counts after the top lines are found a 4 MiB block at a time: numpy finds each line's
last commas and reads the digits before ``]`` (the compact lines the analysis writes); a block
with any other shape (spaces, blank lines) goes through one regular expression anchored at the
line end. No Python step per line.

Example:
    >>> import io
    >>> s = summarize_lines(io.BytesIO(b'["a",3]\\n["b, c",1]\\n'), top_n=1)
    >>> s.top, s.tokens, s.total, s.curve
    ([('a', 3, None)], 2, 4, [(1, 3), (2, 4)])
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np

from beam_prep.io import line_bound
from beam_prep.io.contract import counts_sidecar
from beam_prep.spec.weights import is_weighted

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


_COUNT = re.compile(rb",[ \t]*(-?\d+)[ \t]*\][ \t\r]*$", re.M)
_COUNT_DF = re.compile(rb",[ \t]*(-?\d+)[ \t]*,[ \t]*-?\d+[ \t]*\][ \t\r]*$", re.M)
# A weighted feature's counts are sums of weights: JSON numbers (spec.weights).
_WEIGHTED = re.compile(rb",[ \t]*(-?[0-9][0-9.eE+-]*)[ \t]*\][ \t\r]*$", re.M)


class _Curve:
    """Running rank, total and sampled curve points."""

    def __init__(self, dense_ranks: int, growth: float, weighted: bool = False) -> None:
        self.k = 0
        self._num: type = float if weighted else int
        self.total = self._num(0)
        self.points: list[tuple[int, int]] = []
        self.dense, self.growth = dense_ranks, growth
        self.next_rank = 1

    def _advance(self) -> None:
        k = self.k
        self.next_rank = k + 1 if k < self.dense else max(k + 1, math.ceil(k * self.growth))

    def add(self, count: int) -> None:
        self.k += 1
        self.total += count
        if self.k >= self.next_rank:
            self.points.append((self.k, self.total))
            self._advance()

    def add_many(self, counts: list[int] | np.ndarray) -> None:
        """Same as ``add`` for each count, with one cumulative sum for the block."""
        num = self._num
        cum = np.cumsum(np.asarray(counts, dtype=np.float64 if num is float else np.int64))
        base_k, base_total = self.k, self.total
        while self.next_rank <= base_k + len(counts):
            self.k = self.next_rank
            self.points.append((self.k, base_total + num(cum[self.k - base_k - 1])))
            self._advance()
        self.k = base_k + len(counts)
        self.total = base_total + (num(cum[-1]) if len(cum) else 0)

    def finish(self) -> list[tuple[int, int]]:
        if self.k and (not self.points or self.points[-1][0] != self.k):
            self.points.append((self.k, self.total))
        return self.points


def _fast_counts(tail: bytes, has_df: bool) -> np.ndarray | None:
    """Counts of compact lines (``...,123]`` / ``...,123,45]``), vectorised; None if any line
    has another shape (spaces, blank line, sign), which the regular expression then handles."""
    if not tail.endswith(b"\n"):
        tail += b"\n"
    arr = np.frombuffer(tail, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    if len(nl) == 0 or np.any(nl[1:] - nl[:-1] < 4) or nl[0] < 3:
        return None
    if np.any(arr[nl - 1] != ord("]")):
        return None
    commas = np.flatnonzero(arr == ord(","))
    last = np.searchsorted(commas, nl) - 1  # last comma of each line
    first_of_line = np.concatenate(([0], nl[:-1] + 1))
    if has_df:
        last = last - 1
    if np.any(last < 0) or np.any(commas[np.maximum(last, 0)] < first_of_line):
        return None
    start = commas[last] + 1
    end = commas[last + 1] if has_df else nl - 1
    length = end - start
    if np.any(length < 1) or np.any(length > 18):
        return None
    values = np.zeros(len(nl), dtype=np.int64)
    for j in range(int(length.max())):
        valid = j < length
        digit = arr[np.where(valid, end - 1 - j, 0)].astype(np.int64) - 48
        if np.any(valid & ((digit < 0) | (digit > 9))):
            return None
        values += np.where(valid, digit * 10**j, 0)
    return values


def summarize_lines(stream: BinaryIO, *, top_n: int = 25, dense_ranks: int = 50,
                    growth: float = 1.06, name: str = "?", path: str = "?",
                    max_line: int | None = None, weighted: bool = False) -> SidecarSummary:
    """Summarizes a sidecar read from a binary stream (see the module docstring).

    Args:
        stream: Binary file object positioned at the start of the sidecar.
        top_n: Lines decoded in full and kept.
        dense_ranks: Every rank up to this one is a curve point.
        growth: Ratio between consecutive curve ranks after ``dense_ranks``.
        name: Feature name for error messages.
        path: The sidecar's path, for error messages.
        max_line: Longest line accepted (default
            :data:`beam_prep.io.line_bound.MAX_LINE_BYTES`): memory stays within a block and
            a line, whatever the file holds.
        weighted: Counts are sums of weights (finite numbers >= 0), not integers.

    Returns:
        The :class:`SidecarSummary`.

    Raises:
        ArtifactError: A line is not ``[token, count]`` / ``[token, count, df]``, or is longer
            than ``max_line``.
    """

    limit = line_bound.MAX_LINE_BYTES if max_line is None else max_line
    top: list[tuple[str, int, int | None]] = []
    curve = _Curve(dense_ranks, growth, weighted)
    num: Any = _weight if weighted else int
    has_df = False
    rest = b""
    while True:
        block = stream.read(_BLOCK)
        data = rest + block
        if block:
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
            line_bound.check_line_length(rest, path, limit)
        pos = 0
        while len(top) < top_n and pos < len(data):  # decoded lines, one by one
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            line, pos = data[pos:end], end + 1
            if not line.strip():
                continue
            row = counts_sidecar.parse_row(line, curve.k + 1, name=name, path=path,
                                           weighted=weighted)
            has_df = has_df or (not top and len(row) == 3)
            if has_df and len(row) < 3:
                raise counts_sidecar.bad_line(line, curve.k + 1, name=name, path=path,
                                              problem="no document frequency")
            count = num(row[1])
            top.append((row[0], count, row[2] if has_df else None))
            curve.add(count)
        tail = data[pos:]
        fast = _fast_counts(tail, has_df) if tail and not weighted else None
        pattern = _WEIGHTED if weighted else (_COUNT_DF if has_df else _COUNT)
        if fast is not None:
            curve.add_many(fast)
        elif tail:  # the other lines: counts only, a whole block at a time
            found = pattern.findall(tail)
            n_lines = tail.count(b"\n") + (0 if tail.endswith(b"\n") else 1)
            counts = None
            if len(found) == n_lines:
                try:
                    counts = [num(c) for c in found]
                except ValueError:  # named below, line by line
                    counts = None
            if counts is not None:
                curve.add_many(counts)
            else:  # a blank or malformed line: find it (and fail on it) line by line
                for line in tail.split(b"\n"):
                    if not line.strip():
                        continue
                    m = pattern.search(line)
                    if m is None:
                        raise counts_sidecar.bad_line(line, curve.k + 1, name=name, path=path,
                                                      problem="no count at the end")
                    try:
                        curve.add(num(m.group(1)))
                    except ValueError as e:
                        raise counts_sidecar.bad_line(line, curve.k + 1, name=name, path=path,
                                                      problem=str(e)) from e
        if not block:
            break
    return SidecarSummary(top=top, tokens=curve.k, total=curve.total, curve=curve.finish(),
                          has_df=has_df)


def _weight(value: Any) -> float:
    """A weighted count: a finite JSON number >= 0 (ValueError otherwise); ``bytes`` are the
    digits the block parser matched."""
    if isinstance(value, bytes):
        value = float(value)
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"a weighted count must be a finite number >= 0, not {value!r}")
    return float(value)


def summarize_sidecar(art: Any, name: str, *, top_n: int = 25) -> SidecarSummary:
    """Streams a feature's counts sidecar once (local or ``gs://``), after checking it against
    the manifest (:meth:`beam_prep.io.contract.artifacts.Artifacts.open_file`); see
    :func:`summarize_lines`."""
    with art.open_file(name, "counts") as f:
        return summarize_lines(f, top_n=top_n, name=name, path=art.file_path(name, "counts"),
                               weighted=is_weighted(art.spec.feature(name)))
