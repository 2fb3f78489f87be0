"""The TFRecord format: CRC-32C, record framing written and walked, one definition each.

A TFRecord file is a sequence of records, each ``uint64 length``, ``uint32
masked_crc32c(length)``, ``payload``, ``uint32 masked_crc32c(payload)`` (little-endian), the
format ``tf.data.TFRecordDataset`` reads. This module holds both sides of it:

* :func:`crc32c` and :func:`masked_crc32c`: the checksum, computed by the optional native
  module ``beam_prep.io._tfexample`` (``_crc32c.c``: SSE4.2 or slice-by-8) when it is built,
  else by the ``google-crc32c`` package; the same values either way (tested).
* :func:`frame_record` and :func:`write_tfrecords`: the writer (deterministic bytes; GZIP goes
  through Beam's compressed file, whose header carries no timestamp).
* :func:`frame`: the reader, which walks the framing of a buffer and checks every CRC (native
  when built, else :func:`_frame_python`).

The native C code keeps its own copy of the masking (``bp_crc32c_masked`` in ``_crc32c.h``),
shared by the reader in ``_tfexample.c`` and the batch writer in ``transform/_hashes.c``.

Example:
    >>> hex(crc32c(b"123456789"))  # the standard CRC-32C check value
    '0xe3069283'
    >>> f = frame(frame_record(b"abc") + frame_record(b""))
    >>> f.starts.tolist(), f.lengths.tolist(), f.used, f.corrupt, f.bad_data.tolist()
    ([12, 31], [3, 0], 35, False, [])
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

try:  # the C part is optional: an install without a compiler still works
    from beam_prep.io import _tfexample as _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None

#: Added to the rotated CRC by TFRecord's masking.
MASK_DELTA = 0xA282EAD8
#: Bytes before a payload (length and its CRC) and around it (plus the payload's CRC).
HEADER_BYTES = 12
OVERHEAD_BYTES = 16

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_HEADER = struct.Struct("<QI")


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``: native when built, else the google-crc32c package."""
    if _native is not None:
        return _native.crc32c(data)
    import google_crc32c

    return google_crc32c.value(bytes(data))


def masked_crc32c(data: bytes | memoryview) -> int:
    """TFRecord's masked CRC-32C of ``data`` (the value stored after a length or payload).

    Example:
        >>> hex(masked_crc32c(b""))
        '0xa282ead8'
    """
    c = crc32c(data)
    return ((c >> 15 | c << 17) + MASK_DELTA) & 0xFFFFFFFF


def record_header(length: int) -> bytes:
    """The 12 bytes before a payload of ``length`` bytes: the length and its masked CRC."""
    packed = _LENGTH.pack(length)
    return packed + _CRC.pack(masked_crc32c(packed))


def record_footer(payload: bytes | memoryview) -> bytes:
    """The 4 bytes after ``payload``: its masked CRC."""
    return _CRC.pack(masked_crc32c(payload))


def frame_record(payload: bytes) -> bytes:
    """One framed TFRecord: header, payload, footer."""
    return b"".join((record_header(len(payload)), payload, record_footer(payload)))


def write_tfrecords(path: str, records: Iterable[bytes], *, gzip: bool = False) -> int:
    """Writes (replaces) a TFRecord file on any Beam filesystem; returns the number of records.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
        >>> write_tfrecords(p, [b"a", b"bc"])
        2
        >>> os.path.getsize(p)
        35
    """
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    ctype = CompressionTypes.GZIP if gzip else CompressionTypes.UNCOMPRESSED
    n = 0
    with FileSystems.create(path, compression_type=ctype) as f:
        for r in records:  # header, payload, footer without joining: no copy of large records
            f.write(record_header(len(r)))
            f.write(r)
            f.write(record_footer(r))
            n += 1
    return n


class Framing(NamedTuple):
    """Result of :func:`frame`.

    Attributes:
        starts: Payload start of every whole record (int64).
        lengths: Payload length of every whole record (int64).
        used: Bytes taken by the whole records (where the next header starts).
        pending: Length of the next record when its header is sound but the record does
            not fit in the buffer; -1 when fewer than 12 bytes remain or ``corrupt``.
        corrupt: The header at ``used`` fails its length CRC: nothing after it can be
            framed.
        bad_data: Indices (into ``starts``) of records whose payload CRC does not match
            (empty when data CRCs are not checked).
    """

    starts: np.ndarray
    lengths: np.ndarray
    used: int
    pending: int
    corrupt: bool
    bad_data: np.ndarray


def frame(buf: bytes | memoryview, *, check_data: bool = True) -> Framing:
    """Walks the TFRecord framing in ``buf`` (see the module docstring).

    Every length CRC is verified: a header that fails it stops the walk (``corrupt``),
    since no record boundary after it can be trusted. With ``check_data``, payload CRCs
    are verified too; a record that fails only that is still framed and listed in
    ``bad_data``.

    Example:
        >>> f = frame(frame_record(b"abc"))
        >>> f.starts.tolist(), f.lengths.tolist(), f.used, f.corrupt, f.bad_data.tolist()
        ([12], [3], 19, False, [])
    """
    if _native is not None:
        s, ln, used, pending, corrupt, bad = _native.frame(buf, check_data)
        return Framing(np.frombuffer(s, dtype=np.int64), np.frombuffer(ln, dtype=np.int64),
                       used, pending, corrupt, np.frombuffer(bad, dtype=np.int64))
    return _frame_python(memoryview(buf).cast("B"), check_data)


def _frame_python(buf: memoryview, check_data: bool) -> Framing:
    """:func:`frame` without the native module (:func:`masked_crc32c` then uses
    google-crc32c)."""
    starts, lengths, bad = [], [], []
    pos, total, pending, corrupt = 0, len(buf), -1, False
    while total - pos >= HEADER_BYTES:
        length, length_crc = _HEADER.unpack_from(buf, pos)
        if masked_crc32c(buf[pos:pos + _LENGTH.size]) != length_crc:
            corrupt = True
            break
        if total - pos < OVERHEAD_BYTES or length > total - pos - OVERHEAD_BYTES:
            pending = length
            break
        start = pos + HEADER_BYTES
        if check_data and masked_crc32c(buf[start:start + length]) != _CRC.unpack_from(
                buf, start + length)[0]:
            bad.append(len(starts))
        starts.append(start)
        lengths.append(length)
        pos += OVERHEAD_BYTES + length
    return Framing(np.array(starts, dtype=np.int64), np.array(lengths, dtype=np.int64), pos,
                   pending, corrupt, np.array(bad, dtype=np.int64))
