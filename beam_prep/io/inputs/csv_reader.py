"""CSV → raw batches: a header row, every requested column read as binary.

Bad rows (wrong number of fields) are set aside as :class:`~beam_prep.io.inputs.formats.RejectedRow`
with their data row number (the header is row 0). Per-file problems are an
:class:`~beam_prep.errors.InputError` naming the file: a header that cannot be parsed or that
names a column twice. A 0-byte file (an empty Spark/Hive part file) is an empty input; a
header-only file needs no trailing newline; a row longer than the parse block makes the file be
read again with larger blocks (up to 1 GiB).

Example:
    >>> b = next(iter_csv(io.BytesIO(b"a,b\\n1,x\\n"), ["a"], batch_size=10, source="mem"))
    >>> b.batch.to_pydict(), b.first_row
    ({'a': [b'1']}, 1)
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import IO

import pyarrow as pa
import pyarrow.csv as pa_csv

from beam_prep.errors import InputError
from beam_prep.io.inputs.formats import (
    REASON_COLUMNS,
    RawBatch,
    RejectedRow,
    require_columns,
    select,
    truncate,
)

CSV_FIRST_BLOCK = 1 << 23
CSV_MAX_BLOCK = 1 << 30


class _Cursor(io.RawIOBase):
    """An independent read position over a shared seekable file.

    pyarrow's CSV reader reads ahead on a thread; a reader given up after an error may still
    read. Each attempt gets its own cursor, and every read seeks and reads under one lock,
    so an abandoned reader cannot move the position of the next one.
    """

    def __init__(self, f: IO[bytes], lock: threading.Lock) -> None:
        super().__init__()
        self._f, self._lock, self._pos = f, lock, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            with self._lock:
                offset += _file_size(self._f)
        elif whence == io.SEEK_CUR:
            offset += self._pos
        self._pos = max(offset, 0)
        return self._pos

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        with self._lock:
            self._f.seek(self._pos)
            data = self._f.read(len(buffer))
        buffer[:len(data)] = data
        self._pos += len(data)
        return len(data)


def _pyarrow_decode_error_hook(previous):  # type: ignore[no-untyped-def]
    def hook(unraisable) -> None:  # type: ignore[no-untyped-def]
        name = getattr(unraisable.object, "__qualname__", "")
        if (isinstance(unraisable.exc_value, UnicodeDecodeError)
                and name.startswith(_HANDLER_NAMES)):
            return  # pyarrow's CSV row handler; the parse error that follows is reported
        previous(unraisable)

    hook._beam_prep_csv = True  # type: ignore[attr-defined]
    return hook


_HANDLER_NAMES = ("iter_csv.<locals>.on_invalid", "csv_header.<locals>.")


def _quiet_pyarrow_decode_errors() -> None:
    """Drops one known unraisable exception, from pyarrow, and nothing else.

    pyarrow's CSV reader (``pyarrow._csv._handle_invalid_row``) decodes a row with the
    wrong number of columns as UTF-8 before it calls our invalid-row handler. When the row
    is not UTF-8 the decode fails inside a C callback: Python prints "Exception ignored in"
    with a traceback to stderr, and the parse then fails with ``ArrowInvalid``, which
    :func:`_parse_error_message` turns into one clear error. The hook installed here drops
    only a ``UnicodeDecodeError`` whose callback is one of this module's handlers and hands
    every other unraisable exception to the hook it wraps. Idempotent.
    """
    if not getattr(sys.unraisablehook, "_beam_prep_csv", False):
        sys.unraisablehook = _pyarrow_decode_error_hook(sys.unraisablehook)


def _file_size(f: IO[bytes]) -> int:
    here = f.tell()
    f.seek(0, io.SEEK_END)  # Beam's CompressedFile.seek returns None: ask tell()
    size = f.tell()
    f.seek(here)
    return size


def csv_header(f: IO[bytes], *, source: str, delimiter: str = ","
               ) -> tuple[list[str], IO[bytes]]:
    """The column names of a CSV file, and the file to read it from.

    A 0-byte file has no columns (``[]``: an empty input, as Spark and Hive write for empty
    partitions). A header longer than one parse block is read with larger blocks. A file that
    is only a header without a trailing newline is handed back as an in-memory copy ending in
    one, which pyarrow needs. ``f`` must be seekable; it is left at its start.

    Raises:
        InputError: The header cannot be parsed or names a column twice (names the file).

    Example:
        >>> csv_header(io.BytesIO(b"a,b"), source="mem")[0]
        ['a', 'b']
    """
    f.seek(0)
    if not f.read(1):
        f.seek(0)
        return [], f
    _quiet_pyarrow_decode_errors()
    block, size = 1 << 16, None
    lock = threading.Lock()
    while True:
        try:
            names = pa_csv.open_csv(
                _Cursor(f, lock),
                read_options=pa_csv.ReadOptions(use_threads=False, block_size=block),
                parse_options=pa_csv.ParseOptions(delimiter=delimiter,
                                                  invalid_row_handler=lambda _row: "skip"),
            ).schema.names
            break
        except pa.ArrowInvalid as e:
            if _data_row_failed(e):  # the header parsed; a later row failed (see below)
                f.seek(0)
                first = f.readline(CSV_MAX_BLOCK).rstrip(b"\r\n") + b"\n"
                try:
                    names = pa_csv.read_csv(io.BytesIO(first), parse_options=pa_csv.ParseOptions(
                        delimiter=delimiter)).schema.names
                    break
                except pa.ArrowInvalid:  # a header with quoted newlines: the general path
                    pass
            size = _file_size(f) if size is None else size
            if block <= size and block < CSV_MAX_BLOCK:
                block = min(block * 8, CSV_MAX_BLOCK)
                continue
            f.seek(0)
            head = f.read(CSV_MAX_BLOCK)
            if b"\n" in head or b"\r" in head or len(head) >= CSV_MAX_BLOCK:
                raise InputError(f"Cannot read the CSV header of {source}: {e}. Check that the "
                                 "file is CSV with a header row (and --csv_delimiter).") from e
            f = io.BytesIO(head + b"\n")  # one line and no newline: a header-only file
    f.seek(0)
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise InputError(
                f"CSV file {source} names the column {name!r} twice in its header (columns "
                f"{seen[name] + 1} and {i + 1}). Rename one of them so that every column "
                "has its own name.")
        seen[name] = i
    return list(names), f


def iter_csv(f: IO[bytes], columns: Sequence[str], *, batch_size: int, source: str,
             delimiter: str = ",", first_row: int = 1,
             strict_columns: bool = False) -> Iterator[RawBatch]:
    """Streams a CSV file with a header row; every requested column is read as binary.

    ``first_row`` numbers the first data row of ``f`` (a byte range of a larger file, with
    the file's header line put in front). ``strict_columns``: a column absent from the
    header is an :class:`InputError`, not all-null.

    ``f`` must be seekable. A row longer than pyarrow's parse block (8 MiB at first) makes
    the file be read again with blocks 4 times larger, from where the batches stopped, up to
    1 GiB blocks; past that the file is refused with an :class:`InputError` naming it.
    """
    header, f = csv_header(f, source=source, delimiter=delimiter)
    if not header:
        return
    if strict_columns:
        require_columns(header, columns, source, "header")
    emitted_good, next_row = 0, first_row
    reported: set[int | None] = set()
    block = CSV_FIRST_BLOCK
    invalid: list[RejectedRow] = []

    def on_invalid(row: pa_csv.InvalidRow) -> str:
        line = (row.number - 2 + first_row if row.number is not None and row.number >= 0
                else None)
        if line is None or line not in reported:
            invalid.append(RejectedRow(
                source, line, REASON_COLUMNS,
                f"expected {row.expected_columns} columns, got {row.actual_columns}",
                truncate(row.text)))
        return "skip"

    lock = threading.Lock()
    while True:
        invalid.clear()  # a restart finds the rows not handed out yet again
        try:
            reader = pa_csv.open_csv(
                _Cursor(f, lock),
                read_options=pa_csv.ReadOptions(use_threads=False, block_size=block),
                parse_options=pa_csv.ParseOptions(delimiter=delimiter,
                                                  invalid_row_handler=on_invalid,
                                                  newlines_in_values=True),
                convert_options=pa_csv.ConvertOptions(
                    include_columns=[c for c in columns if c in header],
                    column_types={c: pa.binary() for c in header},
                    strings_can_be_null=True, quoted_strings_can_be_null=False,
                    null_values=[""]),
            )
            skip = emitted_good  # rows already handed out before a restart
            pending: list[pa.RecordBatch] = []
            pending_rows = 0
            for rb in reader:
                if skip:
                    taken = min(skip, rb.num_rows)
                    skip -= taken
                    rb = rb.slice(taken)
                    if not rb.num_rows:
                        continue
                pending.append(rb)
                pending_rows += rb.num_rows
                if pending_rows >= batch_size:
                    yield from _emit_csv(pending, columns, next_row, invalid, batch_size)
                    emitted_good += pending_rows
                    next_row += pending_rows + len(invalid)
                    reported.update(r.row for r in invalid)
                    invalid.clear()
                    pending, pending_rows = [], 0
            if pending or invalid:
                yield from _emit_csv(pending, columns, next_row, invalid, batch_size)
            return
        except pa.ArrowInvalid as e:
            if "straddl" in str(e) and block < CSV_MAX_BLOCK:
                block = min(block * 4, CSV_MAX_BLOCK)
                continue
            raise InputError(_parse_error_message(source, next_row, e)) from e


def _data_row_failed(e: pa.ArrowInvalid) -> bool:
    """The parse failed on a row after the header (``Row #2`` or later): the read that
    meets that row reports it (:func:`_parse_error_message`)."""
    text = str(e)
    if "Row #" not in text or "straddl" in text:
        return False
    number = text.split("Row #", 1)[1].split(":", 1)[0]
    return number.isdigit() and int(number) >= 2


def _parse_error_message(source: str, next_row: int, e: pa.ArrowInvalid) -> str:
    """The InputError text of a CSV parse failure.

    A row with the wrong number of columns is normally handed to the invalid-row handler and
    set aside; pyarrow decodes the row's text as UTF-8 before calling the handler, so such a
    row that also holds bytes that are not UTF-8 (a line cut in the middle of a multi-byte
    character) fails the parse instead. The message says so.

    Example:
        >>> e = pa.ArrowInvalid("CSV parse error: Row #3: Expected 2 columns, got 3: x")
        >>> _parse_error_message("a.csv", 1, e)[:58]
        'Cannot parse CSV file a.csv: row #3 (counted from the firs'
    """
    text = str(e)
    if "Expected" in text and "columns, got" in text and "Row #" in text:
        row = text.split("Row #", 1)[1].split(":", 1)[0]
        return (f"Cannot parse CSV file {source}: row #{row} (counted from the first line of "
                f"the part being read) has the wrong number of "
                f"columns and bytes that are not UTF-8, which pyarrow's CSV parser cannot set "
                f"aside as a rejected row ({text}). Fix or remove that row (e.g. with "
                "`iconv -c -f utf-8 -t utf-8`), then run again.")
    return (f"Cannot parse CSV file {source} near data row {next_row}: {text}. Fix or remove "
            "the file (a single row may be at most 1 GiB).")


def _emit_csv(batches: list[pa.RecordBatch], columns: Sequence[str], first_row: int,
              invalid: list[RejectedRow], batch_size: int) -> Iterator[RawBatch]:
    """Yields the pending rows; row numbers skip the invalid rows seen among them."""
    import numpy as np

    if not batches:  # only invalid rows: an empty batch (a column-less table slices to any length)
        yield RawBatch(select(pa.table({c: pa.array([], pa.binary()) for c in columns}), columns),
                       first_row, pa.array([], pa.int64()), list(invalid))
        return
    table = pa.Table.from_batches(batches)
    n = table.num_rows
    bad_lines = np.array(sorted(r.row for r in invalid if r.row is not None), dtype=np.int64)
    # Data row number of the i-th well-formed row: first_row + i + (#invalid rows before it).
    positions = first_row + np.arange(n, dtype=np.int64)
    if len(bad_lines):
        for b in bad_lines:  # few by construction; keeps numbering exact
            positions[positions >= b] += 1
    rejected = list(invalid)
    for start in range(0, max(n, 1), batch_size):
        sl = table.slice(start, batch_size)
        yield RawBatch(select(sl, columns), int(positions[start]) if n else first_row,
                       pa.array(positions[start:start + batch_size]), rejected)
        rejected = []
