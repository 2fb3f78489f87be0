"""Columnar reader of a per-key file: millions of keys without a Python object per line.

The file (:mod:`beam_prep.io.contract.per_key_file`) is read whole and cut into lines by its
``\\n`` bytes; one RE2 pass (``pyarrow.compute.extract_regex``) over blocks of lines
takes each line apart, and the numbers are parsed by Arrow (correctly rounded, as
``json`` parses them). A line the pattern does not take (a key with JSON escapes, a
count beyond 18 digits) goes through :func:`~beam_prep.io.contract.per_key_file.parse_line`
alone. Then the checks of :func:`~beam_prep.io.contract.per_key_file.iter_rows` run on the columns
(finite numbers, ``min <= mean <= max``, keys strictly increasing by UTF-8 bytes, the
manifest's key count). Anything wrong (or not valid UTF-8, or a line too long) makes
the reader fall back to the line-by-line reader, which raises the exact error (file,
line number, fix) or, should the two ever disagree, returns its own result.

Memory: the file's bytes, the columns, and one block of lines' pieces.

Example:
    >>> t = parse_per_key(b'["a",2,1.5,0.25,1.0,2.0]\\n["b",1,3.0,0.0,3.0,3.0]\\n', "f")
    >>> t.keys.to_pylist(), t.count.tolist(), t.mean.tolist()
    (['a', 'b'], [2, 1], [1.5, 3.0])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from beam_prep.io.contract.per_key_file import (
    ROLE,
    PerKeyTable,
    parse_line,
    parse_lines,
    read_per_key,
)

_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
#: One line (``\n`` excluded) with a key free of JSON escapes (no quote, backslash or
#: control character) and a count of at most 18 digits; such a key is its own UTF-8 bytes.
LINE = (r'\["[^"\\\x00-\x1f]+",[1-9][0-9]{0,17},'
        rf"{_NUMBER},(?:{_NUMBER}|null),{_NUMBER},{_NUMBER}\]")
#: Bytes per block of lines (a block ends at a newline).
BLOCK_BYTES = 32 << 20
_MAX_LINE = 64 << 20  # as beam_prep.io.contract.artifacts.MAX_LINE_BYTES
_X, _COMMA = ord("x"), ord(",")
_CSV_NAMES = ["key", "count", "mean", "variance", "min", "max", "end"]


class _Fallback(Exception):
    """The fast path cannot vouch for the file: read it line by line."""


def csv_block(block: bytes, taken: np.ndarray) -> tuple[np.ndarray, np.ndarray, bytes]:
    """Key spans and a CSV of the numbers of a block of whole lines.

    Args:
        block: Lines, each ending with ``\n``.
        taken: Per line, whether it matches :data:`LINE`; other lines must be valid lines
            of at least 12 bytes (they are blanked out: their CSV row is ``x..x,0,0,0,0,0,``).

    Returns:
        ``(key_start, key_end, csv)``: the byte span of each taken line's key (empty for
        the others) and the block with ``[``, the key's quotes and commas as ``x`` and ``]``
        as ``,``: 7 CSV columns (junk, count, mean, variance, min, max, empty).
    """
    buf = np.frombuffer(block, np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate([[0], ends[:-1] + 1])
    quotes = np.flatnonzero(buf == 34)
    commas = np.flatnonzero(buf == _COMMA)
    key_start = starts + 2
    simple = bool(taken.all()) and quotes.size == 2 * ends.size  # the usual file
    if simple:
        key_end = quotes[1::2]
    else:
        at = np.minimum(np.searchsorted(quotes, key_start), max(quotes.size - 1, 0))
        key_end = np.where(taken, quotes[at] if quotes.size else key_start, key_start)
    out = buf.copy()
    line = np.flatnonzero(taken)
    out[starts[line]] = _X
    out[starts[line] + 1] = _X
    out[key_end[line]] = _X
    out[ends[line] - 1] = _COMMA
    if not simple or commas.size != 5 * ends.size:  # commas inside keys
        owner = np.searchsorted(ends, commas)
        out[commas[commas < key_end[owner]]] = _X
    for i in np.flatnonzero(~taken).tolist():
        size = int(ends[i] - starts[i])
        out[starts[i]:ends[i]] = np.frombuffer(b"x" * (size - 11) + b",0,0,0,0,0,", np.uint8)
    return key_start, key_end, out.tobytes()


def _block_columns(block: bytes, path: str, first: int) -> tuple[pa.Array, np.ndarray,
                                                                    np.ndarray]:
    """Keys, counts and ``(n, 4)`` numbers of a block; ``first`` is its first line number."""
    buf = np.frombuffer(block, np.uint8)
    offsets = np.concatenate([[0], np.flatnonzero(buf == 10) + 1]).astype(np.int64)
    n = offsets.size - 1
    if n and int(np.diff(offsets).max()) > _MAX_LINE + 1:
        raise _Fallback
    lines = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets),
                                             pa.py_buffer(block))
    lines.validate(full=True)  # UTF-8, else ArrowInvalid
    whole = pa.LargeStringArray.from_buffers(1, pa.py_buffer(offsets[[0, -1]]),
                                             pa.py_buffer(block))
    if pc.match_substring_regex(whole, f"^(?:{LINE}\n)*$")[0].as_py():
        taken = np.ones(n, bool)  # one RE2 pass over the block: every line is simple
    else:
        taken = pc.match_substring_regex(pc.utf8_rtrim(lines, "\n"), f"^{LINE}$").to_numpy(
            zero_copy_only=False)
    slow = {int(i): parse_line(lines[int(i)].as_py().encode("utf-8")[:-1], path,
                               first + int(i)) for i in np.flatnonzero(~taken)}
    if any(offsets[i + 1] - offsets[i] < 13 for i in slow):
        raise _Fallback
    key_start, key_end, text = csv_block(block, taken)
    spans = np.stack([key_start, key_end], axis=1).reshape(-1)
    spans = np.concatenate([spans, [len(block)]]).astype(np.int64)
    pieces = pa.LargeStringArray.from_buffers(2 * n, pa.py_buffer(spans), pa.py_buffer(block))
    pieces.validate(full=True)
    keys = pieces.take(pa.array(np.arange(0, 2 * n, 2)))
    table = pa_csv.read_csv(pa.py_buffer(text), read_options=pa_csv.ReadOptions(
        column_names=_CSV_NAMES, block_size=max(1 << 20, int(np.diff(offsets).max()) + 1)
        if n else 1 << 20), parse_options=pa_csv.ParseOptions(
        quote_char=False, escape_char=False), convert_options=pa_csv.ConvertOptions(
        column_types={"count": pa.int64(), **{c: pa.float64() for c in _CSV_NAMES[2:6]}},
        include_columns=_CSV_NAMES[1:6], null_values=["null"], strings_can_be_null=False))
    if table.num_rows != n:
        raise _Fallback
    count = table.column("count").to_numpy().astype(np.int64)
    numbers = np.stack([table.column(c).to_numpy(zero_copy_only=False).astype(np.float64)
                        for c in _CSV_NAMES[2:6]], axis=1)
    if slow:
        rows = np.array(sorted(slow))
        keys = pc.replace_with_mask(keys, pa.array(~taken), pa.array(
            [slow[i][0] for i in rows.tolist()], pa.large_string()))
        count[rows] = [slow[i][1] for i in rows.tolist()]
        numbers[rows] = [slow[i][2:] for i in rows.tolist()]
    if np.isnan(numbers[taken][:, [0, 2, 3]]).any():  # a null outside the variance
        raise _Fallback
    return keys, count, numbers


def _blocks(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(first line number, lines)`` blocks of about :data:`BLOCK_BYTES` whole lines."""
    pos, line = 0, 1
    while pos < len(data):
        cut = data.find(b"\n", min(pos + BLOCK_BYTES, len(data)) - 1)
        end = len(data) if cut < 0 else cut + 1
        block = data[pos:end]
        yield line, block
        line += block.count(b"\n")
        pos = end


def _columns(data: bytes, path: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Keys, int64 counts and a float64 ``(n, 4)`` matrix of mean, variance, min, max."""
    if data and not data.endswith(b"\n"):
        data += b"\n"  # a last line without its newline is read as the line reader does
    parts = [_block_columns(block, path, first) for first, block in _blocks(data)]
    if not parts:
        return pa.array([], pa.large_string()), np.zeros(0, np.int64), np.zeros((0, 4))
    return (pa.concat_arrays([k for k, _, _ in parts]),
            np.concatenate([c for _, c, _ in parts]),
            np.concatenate([v for _, _, v in parts]))


def _checked(data: bytes, path: str, key_count: int | None) -> PerKeyTable:
    try:
        keys, count, numbers = _columns(data, path)
    except Exception:  # noqa: BLE001 - any doubt: the line reader decides (and explains)
        raise _Fallback from None
    mean, variance, low, high = numbers.T
    finite = np.isfinite(mean) & np.isfinite(low) & np.isfinite(high)
    ok = finite & (np.isnan(variance) | (variance >= 0)) & (low <= mean) & (mean <= high)
    ok &= ~np.isinf(variance)
    if not ok.all() or (key_count is not None and len(keys) != key_count):
        raise _Fallback
    if len(keys) > 1 and not pc.all(pc.greater(keys.slice(1), keys.slice(0, len(keys) - 1))
                                    ).as_py():
        raise _Fallback
    return PerKeyTable(keys, count, mean.copy(), variance.copy(), low.copy(), high.copy())


def _as_columns(table: PerKeyTable) -> PerKeyTable:
    return dataclasses.replace(table, keys=pa.array(table.keys, pa.large_string()))


def parse_per_key(data: bytes, path: str, key_count: int | None = None) -> PerKeyTable:
    """The checked content of a per-key file's bytes, with ``keys`` as a large_string
    Arrow array (the other columns as :class:`~beam_prep.io.contract.per_key_file.PerKeyTable`).

    Raises:
        ArtifactError: As :func:`~beam_prep.io.contract.per_key_file.parse_lines` raises it.
    """
    try:
        return _checked(data, path, key_count)
    except _Fallback:
        lines = data.split(b"\n")
        return _as_columns(parse_lines(iter(lines[:-1] if not lines[-1] else lines), path,
                                       key_count))


def read_per_key_columns(art: Any, name: str) -> PerKeyTable:
    """A feature's per-key file through the checked artifact reader, keys as an Arrow array.

    Args:
        art: An opened :class:`~beam_prep.io.contract.artifacts.Artifacts`.
        name: The feature.
    """
    path, key_count = art.file_path(name, ROLE), art.stats(name).get("key_count")
    with art.open_file(name, ROLE) as f:
        data = f.read()
    try:
        return _checked(data, path, key_count)
    except _Fallback:
        del data  # the line reader streams the file (and bounds its lines)
        return _as_columns(read_per_key(art, name))
