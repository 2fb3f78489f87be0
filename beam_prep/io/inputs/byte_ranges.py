"""Record-aligned byte ranges of large CSV / JSONL files, so one big file is many work items.

Planning (:func:`plan_ranges`) reads the file once, in blocks, and cuts it near every multiple
of ``split_bytes``: a range starts right after the first ``\\n`` at or after its nominal start
(the first range at byte 0) and owns every record that *starts* inside it. Each range carries
the true number of its first row, counted during that pass, so rejected rows keep their file
row numbers:

* JSONL: row ``n`` is line ``n`` (blank lines are numbered, as when the file is read whole).
* CSV: row ``n`` is the n-th non-empty line after the header (``\\n`` or ``\\r\\n`` endings;
  pyarrow skips empty lines).

A file is **not split** (one range, read whole, exactly as before) when:

* it is at most ``split_bytes`` long (no pass at all), or compressed (``.gz`` … cannot seek);
* CSV: a quoted field holds a newline anywhere in the file (detected exactly: a ``\\n`` after
  an odd number of ``"`` since the file start), or a line ends in a lone ``\\r``: then
  ``\\n`` is not a record boundary. Fields must follow RFC 4180 quoting (a ``"`` opens a field
  or is doubled); stray quotes inside unquoted fields can only make the check refuse to split.

Cost: one sequential read of each file larger than ``split_bytes`` in the planning step
(measured: about 160 MiB/s for CSV, 790 MiB/s for JSONL on one core, plus the read itself).

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.jsonl")
    >>> _ = open(path, "wb").write(b'{"a": 1}\\n{"a": 2}\\n{"a": 3}\\n')
    >>> plan_ranges(path, "jsonl", 12)
    [ByteRange(start=0, end=18, first_row=1), ByteRange(start=18, end=27, first_row=3)]
"""

from __future__ import annotations

import dataclasses

import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

#: Default nominal size of one range.
DEFAULT_SPLIT_BYTES = 64 << 20
_BLOCK = 8 << 20
_NL, _CR, _QUOTE = 10, 13, 34


@dataclasses.dataclass(frozen=True)
class ByteRange:
    """A record-aligned part of a file.

    Attributes:
        start: First byte (a record start).
        end: One past the last byte (a record start or the file size).
        first_row: 1-based data row number of the first record in the range.
    """

    start: int
    end: int
    first_row: int


def splittable(path: str, fmt: str) -> bool:
    """True for uncompressed CSV and JSONL files."""
    return fmt in ("csv", "jsonl") and CompressionTypes.detect_compression_type(
        path) == CompressionTypes.UNCOMPRESSED


def plan_ranges(path: str, fmt: str, split_bytes: int = DEFAULT_SPLIT_BYTES
                ) -> list[ByteRange] | None:
    """The ranges of a file, or None when it is read whole (see the module docstring)."""
    if split_bytes <= 0 or not splittable(path, fmt):
        return None
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    if size <= split_bytes:
        return None
    # Range k starts after the first "\n" at or after k * split_bytes - 1.
    targets = [k * split_bytes - 1 for k in range(1, -(-size // split_bytes))]
    counter = _LineCounter(targets, csv=fmt == "csv")
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        offset = 0
        while block := f.read(_BLOCK):
            if not counter.add(np.frombuffer(block, dtype=np.uint8), offset):
                return None
            offset += len(block)
    starts, firsts = [0], [1]
    for newline, records in counter.found:
        start = newline + 1
        first = records - (1 if fmt == "csv" else 0) + 1
        if start < size and start > starts[-1] and first >= 1:
            starts.append(start)
            firsts.append(first)
    if len(starts) == 1:
        return None
    bounds = [*starts, size]
    return [ByteRange(bounds[i], bounds[i + 1], firsts[i]) for i in range(len(starts))]


class _LineCounter:
    """For each target byte: the first ``\\n`` at or after it and the records (lines; CSV:
    non-empty lines) ended up to that ``\\n``. Memory: one block, not one entry per line."""

    def __init__(self, targets: list[int], *, csv: bool) -> None:
        self._csv = csv
        self._targets = np.asarray(targets, dtype=np.int64)
        self.found: list[tuple[int, int]] = []
        self._count = 0
        self._last_nl = -1  # global position of the previous "\n"
        self._prev_byte = -1  # last byte of the previous block
        self._quote_parity = 0

    def add(self, arr: np.ndarray, offset: int) -> bool:
        """Counts one block; False when the file must not be split."""
        nl = np.flatnonzero(arr == _NL)
        if self._csv:
            if not self._csv_block_ok(arr, nl):
                return False
            starts = np.concatenate(([self._last_nl + 1], nl[:-1] + offset + 1))[:len(nl)]
            ends = nl + offset
            length = ends - starts
            before = np.empty(len(nl), dtype=np.int64)  # byte before each "\n"
            inside = nl > 0
            before[inside] = arr[nl[inside] - 1]
            before[~inside] = self._prev_byte
            empty = (length == 0) | ((length == 1) & (before == _CR))
            counts = self._count + np.cumsum(~empty)
        else:
            counts = self._count + np.arange(1, len(nl) + 1)
        if len(nl):
            ends = nl + offset
            ready = self._targets[self._targets <= ends[-1]]
            for i in np.searchsorted(ends, ready):
                self.found.append((int(ends[i]), int(counts[i])))
            self._targets = self._targets[len(ready):]
            self._count = int(counts[-1])
            self._last_nl = int(nl[-1]) + offset
        self._prev_byte = int(arr[-1]) if len(arr) else self._prev_byte
        return True

    def _csv_block_ok(self, arr: np.ndarray, nl: np.ndarray) -> bool:
        quotes = np.flatnonzero(arr == _QUOTE)
        if len(quotes):  # quotes before each "\n" (+ those of earlier blocks), odd = inside
            inside = (np.searchsorted(quotes, nl) + self._quote_parity) & 1
            if inside.any():
                return False  # a newline inside a quoted field
            self._quote_parity = (self._quote_parity + len(quotes)) & 1
        elif self._quote_parity and len(nl):
            return False
        cr = np.flatnonzero(arr == _CR)
        if len(cr):
            follow = np.append(arr[1:], _NL)  # a "\r" ending a block: checked with the next
            if (follow[cr] != _NL).any():
                return False
        if self._prev_byte == _CR and len(arr) and arr[0] != _NL:
            return False
        return True
