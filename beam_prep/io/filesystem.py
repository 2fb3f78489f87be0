"""Small helpers over Beam's FileSystems so that every path may be local or ``gs://``.

Example:
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> write_bytes(join(d, "a.txt"), b"hi")
    >>> read_text(join(d, "a.txt"))
    'hi'
"""

from __future__ import annotations

import hashlib
import os

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

_CHUNK = 1 << 22


def join(base: str, *parts: str) -> str:
    """Joins path components with the separator of ``base``'s filesystem."""
    return FileSystems.join(base, *parts)


def exists(path: str) -> bool:
    """True if the file or directory exists."""
    return FileSystems.exists(path)


def read_bytes(path: str) -> bytes:
    """Whole file as bytes (no decompression)."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def read_text(path: str) -> str:
    """Whole file decoded as UTF-8."""
    return read_bytes(path).decode("utf-8")


def write_bytes(path: str, data: bytes) -> None:
    """Creates (or replaces) ``path`` with ``data``; parent directories are created."""
    makedirs(FileSystems.split(path)[0])
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)


def sha256_of(path: str) -> tuple[str, int]:
    """Returns (hex sha256, size in bytes) of a file, streaming it."""
    h = hashlib.sha256()
    size = 0
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob (empty list if none)."""
    result = FileSystems.match([pattern])[0]
    return sorted(m.path for m in result.metadata_list)


def _is_local(path: str) -> bool:
    return "://" not in path


def makedirs(path: str) -> None:
    """Creates a directory (no-op on object stores, where directories are implicit)."""
    if _is_local(path):
        os.makedirs(path, exist_ok=True)
