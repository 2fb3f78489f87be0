"""Minimal TFRecord writer over Beam FileSystems (deterministic bytes, optional GZIP).

Record framing: ``uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)``
(little endian), the format ``tf.data.TFRecordDataset`` reads. GZIP goes through Beam's
compressed file, whose header carries no timestamp, so the same records give the same bytes.

Example:
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
    >>> write_tfrecords(p, [b"a", b"bc"])
    2
    >>> os.path.getsize(p)
    35
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

try:
    import google_crc32c

    def _crc32c(data: bytes) -> int:
        return google_crc32c.value(data)
except ImportError:  # pragma: no cover - crcmod ships with apache-beam
    import crcmod.predefined

    _CRC = crcmod.predefined.mkPredefinedCrcFun("crc-32c")

    def _crc32c(data: bytes) -> int:
        return _CRC(data)

_MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC32C."""
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One framed TFRecord."""
    length = _U64.pack(len(record))
    return b"".join((length, _U32.pack(masked_crc32c(length)), record,
                     _U32.pack(masked_crc32c(record))))


def write_tfrecords(path: str, records: Iterable[bytes], *, gzip: bool = False) -> int:
    """Writes (replaces) a TFRecord file; returns the number of records."""
    ctype = CompressionTypes.GZIP if gzip else CompressionTypes.UNCOMPRESSED
    n = 0
    with FileSystems.create(path, compression_type=ctype) as f:
        for r in records:  # frame() without joining: no copy of large records
            length = _U64.pack(len(r))
            f.write(length)
            f.write(_U32.pack(masked_crc32c(length)))
            f.write(r)
            f.write(_U32.pack(masked_crc32c(r)))
            n += 1
    return n
