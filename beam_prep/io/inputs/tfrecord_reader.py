"""TFRecord files of ``tf.Example`` → raw Arrow batches, in large chunks.

A file is framed a chunk at a time by :func:`beam_prep.io.inputs.tfrecord_stream.iter_chunks`
(every length CRC checked, payload CRCs too by default), and its records are decoded a
batch at a time by :class:`~beam_prep.io.inputs.example_decoder.ExampleDecoder` straight from the
chunk (no Python object per record). Records the fast decoder leaves aside go to tfx-bsl's
decoder; a record neither can read, or whose payload CRC does not match, is rejected with
its record number. Batches follow the file's record order; the batch boundaries depend
only on the file and ``batch_size``.

When the rest of a file cannot be framed (a corrupt length prefix, a truncated file or
gzip stream), :class:`~beam_prep.errors.InputError` names the file and byte offset, unless
``skip_corrupt_tail`` is set: then the remainder is one rejected row with reason
``corrupt_tail`` (see :class:`~beam_prep.io.inputs.tfrecord_stream.CorruptTail`).

Example:
    >>> import io
    >>> list(iter_tfrecord(io.BytesIO(b""), ["a"], batch_size=10, source="empty"))
    []
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.errors import InputError
from beam_prep.io.inputs import formats
from beam_prep.io.inputs.example_decoder import ExampleDecoder
from beam_prep.io.inputs.formats import REASON_RECORD, RawBatch, RejectedRow
from beam_prep.io.inputs.tfrecord_stream import CHUNK_BYTES, iter_chunks


def _type_conflict(name: str, source: str, what: str) -> InputError:
    return InputError(
        f"Feature {name!r} in {source} holds {what}. A tf.Example feature must keep one "
        "list type (bytes_list, float_list or int64_list) in every record of a file; "
        "rewrite the records with one type.")


class _Reference:
    """tfx-bsl's decoder for the records the fast path leaves aside."""

    def __init__(self, columns: Sequence[str], source: str) -> None:
        from tfx_bsl.coders import example_coder

        self._decoder = example_coder.ExamplesToRecordBatchDecoder()
        self._columns = list(columns)
        self._source = source

    def decode(self, payloads: list[bytes], numbers: list[int]) -> RawBatch:
        rejected: list[RejectedRow] = []
        good, good_numbers = payloads, numbers
        try:
            rb = self._decoder.DecodeBatch(good) if good else None
        except RuntimeError:
            good, good_numbers = [], []
            for n, p in zip(numbers, payloads):
                try:
                    self._decoder.DecodeBatch([p])
                except RuntimeError as e:
                    rejected.append(RejectedRow(self._source, n, REASON_RECORD,
                                                f"not a tf.Example: {e}"[:200], ""))
                    continue
                good.append(p)
                good_numbers.append(n)
            try:
                rb = self._decoder.DecodeBatch(good) if good else None
            except RuntimeError:  # every record is fine alone: types disagree
                return self._one_by_one(good, good_numbers, rejected)
        batch = (formats.select(rb, self._columns) if rb is not None
                 else pa.RecordBatch.from_arrays([pa.nulls(0) for _ in self._columns],
                                                 names=self._columns))
        return RawBatch(batch, good_numbers[0] if good_numbers else 0,
                        pa.array(good_numbers, pa.int64()), rejected)

    def _one_by_one(self, payloads: list[bytes], numbers: list[int],
                    rejected: list[RejectedRow]) -> RawBatch:
        """Records that tfx-bsl refuses together but reads alone: a feature holds two list
        types. One of the requested columns is an InputError naming it; an unrequested
        feature is not (the native decoder ignores it too), so results do not depend on
        which records fell back."""
        types = _TypeCheck(self._source)
        parts = []
        for n, p in zip(numbers, payloads):
            rb = formats.select(self._decoder.DecodeBatch([p]), self._columns)
            parts.append(types.check(RawBatch(rb, n, pa.array([n], pa.int64()), [])).batch)
        arrays = []
        for j in range(len(self._columns)):
            column = [b.column(j) for b in parts]
            kind = next((a.type for a in column if not pa.types.is_null(a.type)), pa.null())
            arrays.append(pa.concat_arrays([a if a.type == kind else pa.nulls(len(a), kind)
                                            for a in column]))
        batch = pa.RecordBatch.from_arrays(arrays, names=self._columns)
        return RawBatch(batch, numbers[0], pa.array(numbers, pa.int64()), rejected)


def _as_list(arr: pa.Array) -> pa.Array:
    """A flat column (null = absent) as the list column tfx-bsl would give."""
    if pa.types.is_null(arr.type) or pa.types.is_large_list(arr.type):
        return arr
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    offsets = np.zeros(len(arr) + 1, dtype=np.int64)
    np.cumsum(valid, out=offsets[1:])
    return pa.LargeListArray.from_arrays(pa.array(offsets), arr.drop_null(),
                                         mask=None if valid.all() else pa.array(~valid))


def _flat_if_scalar(arr: pa.Array) -> pa.Array:
    """A list column whose present rows all hold one value, as a flat column.

    The same rule as the native decoder's ``flat_scalars``, so a batch has the same layout
    whichever decoder read it.
    """
    if not pa.types.is_large_list(arr.type) or arr.null_count == len(arr):
        return arr
    if not pc.all(pc.equal(pc.list_value_length(arr), 1)).as_py():
        return arr
    return pc.list_element(arr, 0)


def _value_type(arr: pa.Array) -> pa.DataType | None:
    if pa.types.is_null(arr.type):
        return None
    return arr.type.value_type if pa.types.is_large_list(arr.type) else arr.type


class _TypeCheck:
    """One list type per feature within a file, as tfx-bsl demands within a batch."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._first: dict[str, tuple[pa.DataType, int]] = {}

    def check(self, batch: RawBatch) -> RawBatch:
        for name, arr in zip(batch.batch.schema.names, batch.batch.columns):
            kind = _value_type(arr)
            if kind is None or arr.null_count == len(arr):
                continue
            first = self._first.get(name)
            if first is not None and first[0] == kind:
                continue  # the common case: no record number needed
            row = int(np.argmax(np.asarray(arr.is_valid())))
            number = int(batch.row_numbers[row].as_py())
            if first is None:
                self._first[name] = (kind, number)
            else:
                raise _type_conflict(name, self._source,
                                     f"{first[0]} values in record {first[1]} and {kind} "
                                     f"values in record {number}")
        return batch


def _merge(columns: Sequence[str], native: pa.RecordBatch, native_numbers: np.ndarray,
           ref: RawBatch, source: str) -> RawBatch:
    """Decoded and fallback rows of one batch, back in file order."""
    numbers = np.concatenate([native_numbers,
                              np.asarray(ref.row_numbers, dtype=np.int64)])
    arrays = []
    for name in columns:
        a = _as_list(native.column(name))
        b = ref.batch.column(name)
        if pa.types.is_null(a.type) and not pa.types.is_null(b.type):
            a = pa.nulls(len(a), b.type)
        elif pa.types.is_null(b.type) and not pa.types.is_null(a.type):
            b = pa.nulls(len(b), a.type)
        if a.type != b.type:
            raise _type_conflict(name, source,
                                 f"{_value_type(a)} values in some records and "
                                 f"{_value_type(b)} values in others (records "
                                 f"{int(numbers.min())}..{int(numbers.max())})")
        arrays.append(pa.concat_arrays([a, b]))
    order = pa.array(np.argsort(numbers, kind="stable"))
    merged = pa.RecordBatch.from_arrays(arrays, names=list(columns)).take(order)
    numbers = numbers[np.asarray(order)]
    return RawBatch(_scalars(merged), int(numbers[0]), pa.array(numbers), ref.rejected)


def _scalars(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([_flat_if_scalar(c) for c in batch.columns],
                                      names=batch.schema.names)


def iter_tfrecord(f: IO[bytes], columns: Sequence[str], *, batch_size: int, source: str,
                  chunk_bytes: int = CHUNK_BYTES, check_data_crc: bool = True,
                  skip_corrupt_tail: bool = False) -> Iterator[RawBatch]:
    """Reads ``tf.Example`` records as raw batches of the requested columns.

    Rows follow the file's record order, and a batch's rows and layout are the same
    whichever decoder read its records (native or tfx-bsl), so results do not depend on
    whether the C part is built. A feature whose records all hold one value comes back
    as a flat column (null = absent), otherwise as a list column.

    Args:
        f: Open file (decompressed, or from :func:`~beam_prep.io.inputs.tfrecord_stream.open_file`,
            which also reports a truncated gzip stream).
        columns: Feature names; absent features come back as all-null columns.
        batch_size: Records per decode call (a chunk's last batch may be smaller).
        source: File path, for rejected rows and errors.
        chunk_bytes: Read size.
        check_data_crc: Verify every payload CRC (a mismatch rejects that record).
        skip_corrupt_tail: When the rest of the file cannot be framed, reject it as one
            row (reason ``corrupt_tail``) instead of raising.

    Yields:
        :class:`~beam_prep.io.inputs.formats.RawBatch` with 1-based record numbers.

    Raises:
        InputError: A feature holds two list types within the file, or the rest of the
            file cannot be framed and ``skip_corrupt_tail`` is off.
    """
    columns = list(columns)
    decoder = ExampleDecoder(columns, flat_scalars=True)
    reference: _Reference | None = None
    types = _TypeCheck(source)
    empty = pa.RecordBatch.from_arrays([pa.nulls(0) for _ in columns], names=columns)
    for buf, starts, lengths, all_numbers, crc_rejected, tail in iter_chunks(
            f, source, chunk_bytes=chunk_bytes, check_data=check_data_crc):
        if crc_rejected:
            yield RawBatch(empty, crc_rejected[0].row, pa.array([], pa.int64()), crc_rejected)
        for i in range(0, len(starts), batch_size):
            s, ln = starts[i:i + batch_size], lengths[i:i + batch_size]
            numbers = all_numbers[i:i + batch_size]
            out = decoder.decode(buf, s, ln)
            if not len(out.fallback):
                yield types.check(RawBatch(out.batch, int(numbers[0]), pa.array(numbers), []))
                continue
            reference = reference or _Reference(columns, source)
            ref = reference.decode([bytes(buf[s[k]:s[k] + ln[k]]) for k in out.fallback],
                                   numbers[out.fallback].tolist())
            if not len(out.decoded):
                batch = _scalars(ref.batch)
                yield types.check(RawBatch(batch, ref.first_row, ref.row_numbers,
                                           ref.rejected))
                continue
            yield types.check(_merge(columns, out.batch, numbers[out.decoded], ref, source))
        if tail is not None:
            if not skip_corrupt_tail:
                raise tail.error()
            yield RawBatch(empty, tail.record, pa.array([], pa.int64()), [tail.rejected()])


def first_records(f: IO[bytes], source: str, limit: int) -> list[bytes]:
    """The payloads of up to ``limit`` leading records (for schema inspection).

    Records after a corrupt part are not looked for. A file unreadable from its first
    record gives ``[]``, not an error: it is a corrupt tail starting at byte offset 0, and
    the read decides what that means (:func:`iter_tfrecord` raises, or with
    ``skip_corrupt_tail`` rejects the whole file as one row), like a tail later in a file.
    """
    for chunk in iter_chunks(f, source, chunk_bytes=1 << 22):
        return [bytes(chunk.view[s:s + n]) for s, n in zip(chunk.starts[:limit].tolist(),
                                                            chunk.lengths[:limit].tolist())]
    return []
