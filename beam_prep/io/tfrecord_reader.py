"""TFRecord files of ``tf.Example`` → raw Arrow batches, in large chunks.

A file is read in chunks of :data:`CHUNK_BYTES`; the record framing of a chunk is walked
in one call, and its records are decoded a batch at a time by
:class:`~beam_prep.io.example_decoder.ExampleDecoder` straight from the chunk (no Python
object per record). Records the fast decoder leaves aside go to tfx-bsl's decoder; a
record neither can read is rejected with its record number. Batches follow the file's
record order; the batch boundaries depend only on the file and ``batch_size``.

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

from beam_prep.errors import InputError
from beam_prep.io import formats
from beam_prep.io.example_decoder import ExampleDecoder, frame
from beam_prep.io.formats import REASON_RECORD, RawBatch, RejectedRow

CHUNK_BYTES = 1 << 25
MAX_RECORD_BYTES = (1 << 31) - 1


def _fill(f: IO[bytes], buf: bytearray, start: int) -> int:
    """Reads into ``buf[start:]`` until it is full or the file ends; returns bytes read."""
    view = memoryview(buf)
    got = start
    readinto = getattr(f, "readinto", None)
    while got < len(buf):
        if readinto is not None:
            n = readinto(view[got:])
        else:
            data = f.read(len(buf) - got)
            n = len(data)
            view[got:got + n] = data
        if not n:
            break
        got += n
    return got - start


def iter_chunks(f: IO[bytes], source: str, *, chunk_bytes: int = CHUNK_BYTES
                ) -> Iterator[tuple[memoryview, np.ndarray, np.ndarray, int,
                                    RejectedRow | None]]:
    """Yields (chunk, record starts, record lengths, records before the chunk, rejection).

    Whole records only; a record that straddles two reads is carried into the next
    chunk. One buffer is reused for every chunk (a fresh 32 MiB buffer per read cost
    more in page faults than the decoding), so a chunk is valid only until the next one
    is requested. A truncated tail, or a length prefix no record can have, ends the file
    with a rejection for that record (the framing cannot resynchronise after it).
    """
    buf = bytearray(chunk_bytes)
    carry = 0
    before = 0
    while True:
        got = _fill(f, buf, carry)
        filled = carry + got
        view = memoryview(buf)[:filled]
        starts, lengths, used, pending = frame(view)
        if len(starts):
            yield view, starts, lengths, before, None
            before += len(starts)
        carry = filled - used
        problem = None
        if pending > MAX_RECORD_BYTES:
            problem = f"record length {pending} in the length prefix: corrupt framing"
        elif not got and carry:
            problem = ("truncated record header" if carry < 12 else
                       f"truncated record: {carry - 16} of {pending} payload bytes")
        if problem is not None:
            yield view[:0], starts[:0], lengths[:0], before, RejectedRow(
                source, before + 1, REASON_RECORD, problem, "")
            return
        if not got and not carry:
            return
        if pending + 16 > len(buf):  # a record larger than the buffer: a larger buffer
            grown = bytearray(pending + 16)
            grown[:carry] = buf[used:filled]
            buf = grown
        else:
            buf[:carry] = buf[used:filled]


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
            except RuntimeError as e:  # every record is fine alone: types disagree
                raise self._type_conflict(good, good_numbers, e) from e
        batch = (formats._select(rb, self._columns) if rb is not None
                 else pa.RecordBatch.from_arrays([pa.nulls(0) for _ in self._columns],
                                                 names=self._columns))
        return RawBatch(batch, good_numbers[0] if good_numbers else 0,
                        pa.array(good_numbers, pa.int64()), rejected)


    def _type_conflict(self, payloads: list[bytes], numbers: list[int],
                       error: Exception) -> InputError:
        """Names the feature that holds two value types (int64/float/bytes lists)."""
        seen: dict[str, tuple[str, int]] = {}
        for n, p in zip(numbers, payloads):
            schema = self._decoder.DecodeBatch([p]).schema
            for field in schema:
                if pa.types.is_null(field.type):
                    continue
                kind = str(field.type.value_type)
                first = seen.setdefault(field.name, (kind, n))
                if first[0] != kind:
                    return InputError(
                        f"Feature {field.name!r} in {self._source} holds {first[0]} values "
                        f"in record {first[1]} and {kind} values in record {n}. A tf.Example "
                        "feature must keep one list type (bytes_list, float_list or "
                        "int64_list) in every record; rewrite the records with one type.")
        return InputError(f"tfx-bsl could not decode records {numbers[0]}..{numbers[-1]} of "
                          f"{self._source} together: {error}")


def iter_tfrecord(f: IO[bytes], columns: Sequence[str], *, batch_size: int, source: str,
                  chunk_bytes: int = CHUNK_BYTES) -> Iterator[RawBatch]:
    """Reads ``tf.Example`` records as raw batches of the requested columns.

    Args:
        f: Open file (already decompressed).
        columns: Feature names; absent features come back as all-null columns.
        batch_size: Records per decode call (a chunk's last batch may be smaller).
        source: File path, for rejected rows.
        chunk_bytes: Read size.

    Yields:
        :class:`~beam_prep.io.formats.RawBatch` with 1-based record numbers.
    """
    decoder = ExampleDecoder(columns, flat_scalars=True)
    reference: _Reference | None = None
    for buf, starts, lengths, before, problem in iter_chunks(f, source,
                                                            chunk_bytes=chunk_bytes):
        for i in range(0, len(starts), batch_size):
            s, ln = starts[i:i + batch_size], lengths[i:i + batch_size]
            numbers = before + i + 1 + np.arange(len(s), dtype=np.int64)
            out = decoder.decode(buf, s, ln)
            if len(out.decoded):
                yield RawBatch(out.batch, int(numbers[out.decoded[0]]),
                               pa.array(numbers[out.decoded]), [])
            if len(out.fallback):
                reference = reference or _Reference(columns, source)
                yield reference.decode(
                    [bytes(buf[s[k]:s[k] + ln[k]]) for k in out.fallback],
                    numbers[out.fallback].tolist())
        if problem is not None:
            yield RawBatch(pa.RecordBatch.from_arrays([pa.nulls(0) for _ in columns],
                                                      names=list(columns)),
                           problem.row, pa.array([], pa.int64()), [problem])


def first_records(f: IO[bytes], source: str, limit: int) -> list[bytes]:
    """The payloads of up to ``limit`` leading records (for schema inspection)."""
    for buf, starts, lengths, _, _ in iter_chunks(f, source, chunk_bytes=1 << 22):
        return [bytes(buf[s:s + n])
                for s, n in zip(starts[:limit].tolist(), lengths[:limit].tolist())]
    return []
