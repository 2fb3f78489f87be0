"""Readers: file globs → splits → typed Arrow record batches, with bad rows set aside.

A *split* is the unit of parallel reading: a run of row groups of a Parquet file, a
record-aligned byte range of an uncompressed CSV / JSONL file larger than the split size
(see :mod:`beam_prep.io.inputs.byte_ranges`; rows keep their file row numbers), or a whole file
(TFRecord, compressed files, small files, CSV with quoted newlines). Splits are
deterministic (sorted paths, fixed row-group runs and byte ranges), and so are the batches
read from a split, which is what makes the analysis byte-for-byte reproducible whatever the
runner or the number of workers.

Supported formats and how values are read:

=========  =================================================================
csv        header row required; empty field = missing; ``""`` = empty string
jsonl      one JSON object per line; scalar values (arrays of scalars for list
           features: ``list_columns``)
parquet    any column type convertible to the feature's type; list columns
tfrecord   ``tf.Example`` records (optionally .gz); a feature is a list column,
           or a flat one (null = absent) when every record of the batch that
           has it holds exactly one value: same values, far less work
=========  =================================================================

Example:
    >>> splits = list_splits("data/train.csv", "csv")              # doctest: +SKIP
    >>> for rb in read_split(splits[0], {"price": "float64"}):      # doctest: +SKIP
    ...     print(rb.batch.num_rows, len(rb.rejected))
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import IO, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError
from beam_prep.io.inputs import (
    bad_rows,
    byte_ranges,
    compressed,
    csv_reader,
    formats,
    tfrecord_reader,
    tfrecord_stream,
)
from beam_prep.io.inputs import columns as colmod
from beam_prep.io.inputs.formats import RejectedRow
from beam_prep.io.inputs.patterns import (  # noqa: F401 (expand_patterns re-exported)
    expand_patterns,
    one_line,
    storage_errors,
)

Format = Literal["csv", "jsonl", "parquet", "tfrecord"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet", "tfrecord")
DEFAULT_BATCH_SIZE = 65536
DEFAULT_PARQUET_ROWS_PER_SPLIT = 1 << 20

_EXTENSIONS = {
    ".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
    ".parquet": "parquet", ".pq": "parquet", ".tfrecord": "tfrecord", ".tfrecords": "tfrecord",
    ".tfr": "tfrecord",
}


@dataclasses.dataclass(frozen=True, order=True)
class Split:
    """A unit of reading work.

    Attributes:
        path: File path (any Beam filesystem).
        format: One of :data:`FORMATS`.
        row_groups: Parquet row groups of this split (None = whole file).
        first_row: 1-based number of the split's first row within its file.
        start: First byte of a byte-range split (CSV/JSONL).
        end: One past its last byte; None = the whole file.
    """

    path: str
    format: str
    row_groups: tuple[int, ...] | None = None
    first_row: int = 1
    start: int = 0
    end: int | None = None

    @property
    def split_id(self) -> str:
        """Stable identifier, used to order partial results canonically."""
        return f"{self.path}#{self.first_row}" + (f"@{self.start}" if self.start else "")


@dataclasses.dataclass
class ReadResult:
    """Typed rows of one batch, plus what was set aside.

    Attributes:
        batch: Columns converted to the requested types; only good rows.
        rows_seen: Rows read from the file for this batch (good + rejected).
        rejected: Rejected rows, each with its reason.
    """

    batch: pa.RecordBatch
    rows_seen: int
    rejected: list[RejectedRow]


def infer_format(path: str) -> str:
    """Guesses the format from the file extension (a trailing .gz is ignored)."""
    lower = path.lower()
    if lower.endswith(".gz"):
        lower = lower[:-3]
    for ext, fmt in _EXTENSIONS.items():
        if lower.endswith(ext):
            return fmt
    raise InputError(
        f"Cannot tell the input format of {path!r} from its extension. Pass "
        f"--input_format with one of {list(FORMATS)}."
    )


def infer_common_format(paths: Sequence[str]) -> str:
    """The format all files have by their extension; two formats are an InputError."""
    fmt = infer_format(paths[0])
    for path in paths[1:]:
        if (other := infer_format(path)) != fmt:
            raise InputError(
                f"--input matches files of two formats: {paths[0]!r} ({fmt}) and {path!r} "
                f"({other}). Narrow the --input globs to one format (e.g. '*.{fmt}'), or "
                "pass --input_format if every file really is of that format.")
    return fmt


def list_splits(path: str, fmt: str, *,
                parquet_rows_per_split: int = DEFAULT_PARQUET_ROWS_PER_SPLIT,
                split_bytes: int = byte_ranges.DEFAULT_SPLIT_BYTES) -> list[Split]:
    """The splits of one file: runs of row groups for Parquet, record-aligned byte ranges of
    about ``split_bytes`` for large uncompressed CSV/JSONL (0 = never), else the whole file."""
    if fmt in ("csv", "jsonl"):
        ranges = byte_ranges.plan_ranges(path, fmt, split_bytes)
        if ranges is None:
            return [Split(path, fmt)]
        return [Split(path, fmt, None, r.first_row, r.start, r.end) for r in ranges]
    if fmt != "parquet":
        return [Split(path, fmt)]
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        meta = formats.open_parquet(f, path).metadata
    splits: list[Split] = []
    group: list[int] = []
    rows = 0
    first = 1
    for i in range(meta.num_row_groups):
        group.append(i)
        rows += meta.row_group(i).num_rows
        if rows >= parquet_rows_per_split:
            splits.append(Split(path, fmt, tuple(group), first))
            first += rows
            group, rows = [], 0
    if group or not splits:
        splits.append(Split(path, fmt, tuple(group), first))
    return splits


def _open(split: Split):
    if split.format == "tfrecord":  # gzip checked for truncation (Beam's reader is not)
        return tfrecord_stream.open_file(split.path)
    if split.format == "parquet":
        return FileSystems.open(split.path, compression_type=CompressionTypes.UNCOMPRESSED)
    return compressed.open_input(split.path)  # a cut .gz/.bz2/.xz fails (Beam's does not)


def _seekable(f: IO[bytes]) -> IO[bytes]:
    """``f``, or an in-memory copy when it cannot seek (Beam's CompressedFile has a
    ``seekable`` property, io files a method)."""
    seekable = getattr(f, "seekable", False)
    return f if (seekable() if callable(seekable) else seekable) else io.BytesIO(f.read())


def _range_bytes(split: Split) -> IO[bytes]:
    """A byte-range split in memory; CSV gets the file's header line in front."""
    assert split.end is not None
    with FileSystems.open(split.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        head = b""
        if split.format == "csv" and split.start > 0:
            while True:  # the first non-empty line (pyarrow skips empty ones)
                line = f.readline()
                head += line
                if not line or line.strip(b"\r\n"):
                    break
        f.seek(split.start)
        data = f.read(split.end - split.start)
    return io.BytesIO(head + data)


def _raw_batches(split: Split, columns: Sequence[str], batch_size: int,
                 csv_delimiter: str, dictionary_columns: Sequence[str] = (),
                 skip_corrupt_tail: bool = False, strict: bool = False,
                 list_columns: Collection[str] = ()) -> Iterator[formats.RawBatch]:
    if split.end is not None:
        f = _range_bytes(split)
        if split.format == "csv":
            yield from csv_reader.iter_csv(f, columns, batch_size=batch_size,
                                           source=split.path, delimiter=csv_delimiter,
                                           first_row=split.first_row, strict_columns=strict)
        else:
            yield from formats.iter_jsonl(f, columns, batch_size=batch_size,
                                          source=split.path, first_row=split.first_row,
                                          text_columns=dictionary_columns,
                                          list_columns=list_columns)
        return
    with _open(split) as f:
        if split.format == "csv":
            yield from csv_reader.iter_csv(_seekable(f), columns, batch_size=batch_size,
                                        source=split.path, delimiter=csv_delimiter,
                                        strict_columns=strict)
        elif split.format == "jsonl":
            yield from formats.iter_jsonl(f, columns, batch_size=batch_size, source=split.path,
                                          text_columns=dictionary_columns,
                                          list_columns=list_columns)
        elif split.format == "parquet":
            yield from formats.iter_parquet(f, columns, batch_size=batch_size,
                                            row_groups=split.row_groups,
                                            first_row=split.first_row,
                                            dictionary_columns=dictionary_columns,
                                            source=split.path, strict_columns=strict)
        elif split.format == "tfrecord":
            yield from tfrecord_reader.iter_tfrecord(f, columns, batch_size=batch_size,
                                                     source=split.path,
                                                     skip_corrupt_tail=skip_corrupt_tail)
        else:
            raise InputError(f"Unknown input format {split.format!r}; use one of {FORMATS}.")


def read_split(split: Split, columns: Mapping[str, str], *,
               batch_size: int = DEFAULT_BATCH_SIZE,
               csv_delimiter: str = ",",
               skip_corrupt_tail: bool = False,
               strict_columns: bool = False,
               list_columns: Collection[str] = ()) -> Iterator[ReadResult]:
    """Reads one split as typed batches; rows with any unconvertible cell are rejected.

    Args:
        split: What to read.
        columns: Column name → target type (``string``, ``int64``, ``float64``).
        batch_size: Rows per batch (the last batch of a split may be smaller; Parquet
            batches hold a whole row group when it is larger, up to 1,048,576 rows).
        csv_delimiter: Field delimiter for CSV.
        skip_corrupt_tail: TFRecord: reject the unframeable rest of a file as one row
            (reason ``corrupt_tail``) instead of raising InputError.
        strict_columns: CSV / Parquet: a column absent from the file's header or schema is
            an InputError naming the file (the jobs), instead of all-missing values.
        list_columns: JSONL: the columns of list features, where a line may hold an array
            of scalars (elsewhere an array rejects its line).

    Yields:
        :class:`ReadResult` per batch, in file order. String columns of Parquet files
        stay dictionary-encoded (``dictionary<int32, large_string>``).
    """
    names = list(columns)
    strings = [c for c, t in columns.items() if t == "string"]
    for raw in _raw_batches(split, names, batch_size, csv_delimiter, strings,
                            skip_corrupt_tail, strict_columns, list_columns):
        _check_types(split.path, raw.batch.schema)
        n = raw.batch.num_rows
        bad_any = np.zeros(n, dtype=bool)
        converted = []
        reasons: list[tuple[str, np.ndarray, str]] = []
        for name in names:
            arr, bad, reason = colmod.normalize(raw.batch.column(name), columns[name])
            converted.append(arr)
            if reason is not None and bad.any():
                reasons.append((name, bad, reason))
                bad_any |= bad
        rejected = list(raw.rejected)
        if bad_any.any():
            rejected.extend(bad_rows.describe_bad_rows(split.path, raw, reasons))
            keep = pa.array(~bad_any)
            converted = [pc.filter(a, keep) for a in converted]
        batch = pa.RecordBatch.from_arrays(converted, names=names)
        yield ReadResult(batch, n + len(raw.rejected), rejected)


def _check_types(path: str, schema: pa.Schema) -> None:
    for field in schema:
        problem = colmod.type_problem(field.type)
        if problem is not None:
            raise InputError(
                f"Column {field.name!r} of {path} has {problem}. Cast it in the file (e.g. "
                "timestamps to int64 or string, decimals to float64, struct fields to their "
                "own columns) or take it out of the spec.")


def available_columns(path: str, fmt: str, *, sample_rows: int = 1000,
                      csv_delimiter: str = ",") -> list[str]:
    """Column names visible in a file (for JSONL/TFRecord: keys of the first rows)."""
    split = Split(path, fmt)  # the whole file: no split planning just to read a header
    if fmt == "csv":
        with _open(split) as f:
            return csv_reader.csv_header(_seekable(f), source=path, delimiter=csv_delimiter)[0]
    if fmt == "parquet":
        with _open(split) as f:
            return list(formats.open_parquet(f, path).schema_arrow.names)
    keys: set[str] = set()
    with _open(split) as f:
        if fmt == "jsonl":
            for _ in range(sample_rows):  # readline: Beam's CompressedFile is not iterable
                line = f.readline()
                if not line:
                    break
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):  # counted as rejected later
                    continue
                if isinstance(obj, dict):
                    keys.update(obj)
        else:
            from tfx_bsl.coders import example_coder

            decoder = example_coder.ExamplesToRecordBatchDecoder()
            for payload in tfrecord_reader.first_records(f, path, sample_rows):
                try:  # one record at a time: a bad record is counted later, not here
                    keys.update(decoder.DecodeBatch([payload]).schema.names)
                except RuntimeError:
                    continue
    return sorted(keys)


#: Formats whose rows name their own keys: a column absent from a row is a missing value.
SPARSE_FORMATS = ("jsonl", "tfrecord")
#: Files :func:`check_columns` samples for the sparse formats.
CHECK_SAMPLE_FILES = 8
_LOG = logging.getLogger("beam_prep.readers")


def check_columns(paths: Sequence[str], fmt: str, required: Mapping[str, str], *,
                  csv_delimiter: str = ",") -> list[str]:
    """Fails before the pipeline starts if a column named in the spec cannot be there.

    * CSV, Parquet: every file has one header / schema; the first file that is not empty is
      inspected (for Parquet also the types of the required columns) and an absent column
      is an :class:`InputError`.
    * JSONL, TFRecord: every row names its own keys and an absent key is a *missing* value,
      which the analysis counts. No column can be proven absent from a sample, so these
      formats never fail here: the first rows of up to :data:`CHECK_SAMPLE_FILES` files are
      sampled and a column seen in none of them is logged as a warning (it may be a typo
      in the spec, or a sparse key).

    Args:
        paths: Input files.
        fmt: Input format.
        required: Column → name of the feature that reads it (for the message).
        csv_delimiter: CSV field delimiter.

    Returns:
        The required columns not seen (always empty for CSV and Parquet).

    Raises:
        InputError: No input file; a CSV/Parquet column is absent; a file cannot be opened.

    Example:
        >>> check_columns(["a.jsonl", "b.jsonl"], "jsonl", {"rare": "f"})  # doctest: +SKIP
        ['rare']
    """
    if not paths:
        raise InputError("No input files.")
    if fmt in SPARSE_FORMATS:
        seen: set[str] = set()
        for path in paths[:CHECK_SAMPLE_FILES]:
            seen |= set(_columns_of(path, fmt, csv_delimiter))
            if all(c in seen for c in required):
                return []
        unseen = [c for c in required if c not in seen]
        details = _listed(unseen, required)
        _LOG.warning("column(s) %s appear in none of the first rows of the first %d %s "
                     "file(s); absent keys are counted as missing values. If that is not "
                     "intended, fix the feature's `column` in the spec.", details,
                     min(len(paths), CHECK_SAMPLE_FILES), fmt)
        return unseen
    for path in paths:  # empty files (e.g. empty Spark part files) show no column
        present = set(_columns_of(path, fmt, csv_delimiter))
        if present:
            break
    else:
        return []  # every file is empty: nothing to check, the analysis sees 0 rows
    missing = [c for c in required if c not in present]
    if missing:
        details = _listed(missing, required)
        raise InputError(
            f"Column(s) {details} not found in {path}. Columns present: "
            f"{sorted(present)[:50]}. Fix the feature's `column` (or the column its `expr` "
            "or `labels` names) in the spec, or the input."
        )
    if fmt == "parquet":
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            schema = formats.open_parquet(f, path).schema_arrow
        _check_types(path, pa.schema([schema.field(c) for c in required]))
    return []


def _listed(columns: list[str], required: Mapping[str, str], most: int = 20) -> str:
    """``'c' (feature 'f')`` for the first ``most`` columns (a spec may name thousands)."""
    return ", ".join(f"{c!r} (feature {required[c]!r})" for c in columns[:most]) + (
        f" and {len(columns) - most:,} more" if len(columns) > most else "")


def _columns_of(path: str, fmt: str, csv_delimiter: str) -> list[str]:
    """:func:`available_columns`, with a file that cannot be opened (permission, deleted
    object) as one InputError line naming it."""
    try:
        return available_columns(path, fmt, csv_delimiter=csv_delimiter)
    except InputError:
        raise
    except storage_errors() as e:  # BeamIOError, PermissionError, GCS HTTP errors
        raise InputError(f"Cannot read input file {path}: {one_line(e)}. Check that it "
                         "exists and that these credentials may read it.") from e

