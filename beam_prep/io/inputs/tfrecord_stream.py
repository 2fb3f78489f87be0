"""TFRecord framing of a file, a chunk at a time, with every CRC checked.

A TFRecord is ``uint64 length``, ``uint32 masked_crc32c(length)``, ``payload``,
``uint32 masked_crc32c(payload)`` (little-endian). :func:`iter_chunks` reads a file in
large chunks and frames each in one call of :func:`~beam_prep.io.tfrecord_framing.frame`:

* a record whose payload CRC does not match is rejected alone (its length was checked,
  so the records after it are still found);
* a header whose length CRC does not match, a length no record can have, a file that
  ends inside a record, or a gzip stream that is truncated or corrupt mean that nothing
  after that byte can be framed: the chunk carries a :class:`CorruptTail` naming the
  file, the byte offset and how many bytes are lost.

Gzip files (``.gz``) are opened by :func:`open_file`, which decompresses them itself:
Beam's decompressing reader returns a truncated gzip stream as if it had ended cleanly.
Offsets in a gzip file are offsets in the decompressed stream.

Example:
    >>> import io
    >>> [c.tail.problem for c in iter_chunks(io.BytesIO(b"\\x05" * 20), "x.tfrecord")]
    ['the length prefix fails its CRC (corrupt framing)']
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import zlib
from collections.abc import Iterator
from typing import IO, NamedTuple

import numpy as np

from beam_prep.errors import InputError
from beam_prep.io.inputs.formats import REASON_RECORD, RejectedRow
from beam_prep.io.tfrecord_framing import frame

CHUNK_BYTES = 1 << 25
MAX_RECORD_BYTES = (1 << 31) - 1
REASON_CORRUPT_TAIL = "corrupt_tail"
SKIP_FLAG = "--skip_corrupt_tail"


@dataclasses.dataclass(frozen=True)
class CorruptTail:
    """The unreadable remainder of a file.

    Attributes:
        source: File path.
        offset: Byte offset where framing stopped (in the decompressed stream for gzip).
        skipped_bytes: Bytes from ``offset`` to the end of the (decompressed) stream.
        record: 1-based number the first lost record would have had.
        problem: What is wrong at ``offset``.
    """

    source: str
    offset: int
    skipped_bytes: int
    record: int
    problem: str

    def error(self) -> InputError:
        """The error raised when skipping is not allowed."""
        return InputError(
            f"Corrupt TFRecord file {self.source}: {self.problem} at byte offset "
            f"{self.offset} (record {self.record}); the remaining {self.skipped_bytes} bytes "
            f"cannot be read. Repair or re-create the file, or pass {SKIP_FLAG} to skip such "
            "remainders (each counts as one rejected row against --max_bad_fraction).")

    def rejected(self) -> RejectedRow:
        """The rejected row that stands for the skipped remainder."""
        return RejectedRow(
            self.source, self.record, REASON_CORRUPT_TAIL,
            f"{self.problem} at byte offset {self.offset}: skipped the remaining "
            f"{self.skipped_bytes} bytes", json.dumps(self.as_dict(), sort_keys=True))

    def as_dict(self) -> dict:
        """``{"file", "offset", "bytes"}``: the manifest's record of a skipped remainder."""
        return {"file": self.source, "offset": self.offset, "bytes": self.skipped_bytes}


def skipped_tail(row: RejectedRow) -> dict | None:
    """The ``{"file", "offset", "bytes"}`` of a row made by :meth:`CorruptTail.rejected`,
    None for any other rejected row."""
    return json.loads(row.record) if row.reason == REASON_CORRUPT_TAIL else None


class GzipStream:
    """Decompresses a gzip file (one or more members) and notes truncation or corruption.

    ``read``/``readinto`` return ``b""``/0 at the end of the stream; ``problem`` is then
    None after a complete last member, or says what cut the stream short.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self.problem: str | None = None

    def _guard(self, call, empty):
        if self.problem is not None:
            return empty
        try:
            return call()
        except EOFError:
            self.problem = "the gzip stream is truncated (it ends inside a member)"
        except (OSError, zlib.error) as e:
            self.problem = f"the gzip stream is corrupt ({e})"
        return empty

    # One decompression step per call (read1): a call that fails loses nothing it read.
    def read(self, n: int = -1) -> bytes:
        return self._guard(lambda: self._gz.read1(n), b"")

    def readinto(self, view) -> int:
        return self._guard(lambda: self._gz.readinto1(view), 0)

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self._gz.close()
        self._raw.close()

    def __enter__(self) -> GzipStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_file(path: str) -> IO[bytes]:
    """Opens a TFRecord file on any Beam filesystem; ``.gz`` through :class:`GzipStream`."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    if path.lower().endswith(".gz"):
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        return GzipStream(raw)  # type: ignore[return-value]
    return FileSystems.open(path, compression_type=CompressionTypes.AUTO)


class Chunk(NamedTuple):
    """Whole records of one read, plus what was rejected or lost in it.

    Attributes:
        view: The chunk's bytes (valid only until the next chunk is requested).
        starts: Payload starts of the good records (into ``view``).
        lengths: Their payload lengths.
        numbers: Their 1-based record numbers in the file.
        rejected: Records whose payload CRC does not match.
        tail: Set on the last chunk when the rest of the file cannot be framed.
    """

    view: memoryview
    starts: np.ndarray
    lengths: np.ndarray
    numbers: np.ndarray
    rejected: list[RejectedRow]
    tail: CorruptTail | None


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


def _remaining(f: IO[bytes]) -> int:
    """Bytes left in ``f`` (read and dropped when it cannot seek)."""
    seekable = getattr(f, "seekable", None)
    if seekable is not None and seekable():
        here = f.tell()
        return f.seek(0, 2) - here
    left = 0
    while True:
        data = f.read(1 << 22)
        if not data:
            return left
        left += len(data)


def _tail_problem(f: IO[bytes], got: int, carry: int, corrupt: bool,
                  pending: int) -> str | None:
    if corrupt:
        return "the length prefix fails its CRC (corrupt framing)"
    if pending > MAX_RECORD_BYTES:
        return f"a length prefix of {pending} bytes (over 2 GiB)"
    if got:
        return None
    gz_problem = f.problem if isinstance(f, GzipStream) else None
    if gz_problem is not None:
        return gz_problem
    if carry:
        return ("the file ends inside a record header" if carry < 12 or pending < 0 else
                f"the file ends inside a record ({max(carry - 12, 0)} of {pending} "
                "payload bytes)")
    return None


def iter_chunks(f: IO[bytes], source: str, *, chunk_bytes: int = CHUNK_BYTES,
                check_data: bool = True) -> Iterator[Chunk]:
    """Frames a file chunk by chunk (see the module docstring for what is checked).

    One buffer is reused for every chunk (a fresh 32 MiB buffer per read cost more in
    page faults than the decoding); a record that straddles two reads is carried into
    the next chunk, and a record larger than the buffer gets a larger buffer.

    Args:
        f: Open file (decompressed, or a :class:`GzipStream`).
        source: File path, for rejected rows and errors.
        chunk_bytes: Read size.
        check_data: Verify payload CRCs (length CRCs are always verified).
    """
    buf = bytearray(chunk_bytes)
    carry = 0
    before = 0  # records framed in earlier chunks
    offset = 0  # stream offset of buf[0]
    while True:
        got = _fill(f, buf, carry)
        filled = carry + got
        view = memoryview(buf)[:filled]
        starts, lengths, used, pending, corrupt, bad = frame(view, check_data=check_data)
        numbers = before + 1 + np.arange(len(starts), dtype=np.int64)
        before += len(starts)
        rejected = [RejectedRow(source, int(numbers[i]), REASON_RECORD,
                                f"the payload fails its CRC (record at byte offset "
                                f"{offset + int(starts[i]) - 12})", "") for i in bad]
        if len(bad):
            keep = np.ones(len(starts), dtype=bool)
            keep[bad] = False
            starts, lengths, numbers = starts[keep], lengths[keep], numbers[keep]
        carry = filled - used
        problem = _tail_problem(f, got, carry, corrupt, pending)
        tail = None
        if problem is not None:
            tail = CorruptTail(source, offset + used, carry + _remaining(f), before + 1,
                               problem)
        if len(starts) or rejected or tail is not None:
            yield Chunk(view, starts, lengths, numbers, rejected, tail)
        if tail is not None or (not got and not carry):
            return
        offset += used
        if pending + 16 > len(buf):  # a record larger than the buffer: a larger buffer
            grown = bytearray(pending + 16)
            grown[:carry] = buf[used:filled]
            buf = grown
        else:
            buf[:carry] = buf[used:filled]
