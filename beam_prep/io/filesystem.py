"""Small helpers over Beam's FileSystems so that every path may be local or ``gs://``.

Local paths take the standard library's route and never import Beam, so commands that only
read or write local files (``report``, ``diff``, ``generate``) start without Beam's ~2 s
import; any path with a scheme (``gs://``, ``s3://``, ...) goes through Beam's FileSystems.

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
from typing import Any, BinaryIO

_CHUNK = 1 << 22


def _beam() -> Any:
    from apache_beam.io.filesystems import FileSystems  # noqa: PLC0415 (lazy: ~2 s import)
    return FileSystems


def open_read(path: str) -> BinaryIO:
    """Opens a file for streaming reads in binary mode (no decompression).

    Example:
        >>> with open_read(__file__) as f:
        ...     len(f.read(3))
        3
    """
    if _is_local(path):
        return open(path, "rb")  # noqa: SIM115 (returned to a with-block)
    from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415
    return _beam().open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def join(base: str, *parts: str) -> str:
    """Joins path components with the separator of ``base``'s filesystem."""
    if _is_local(base):
        return os.path.join(base, *parts)
    return _beam().join(base, *parts)


def exists(path: str) -> bool:
    """True if the file or directory exists."""
    if _is_local(path):
        return os.path.exists(path)
    return _beam().exists(path)


def read_bytes(path: str) -> bytes:
    """Whole file as bytes (no decompression)."""
    with open_read(path) as f:
        return f.read()


def read_text(path: str) -> str:
    """Whole file decoded as UTF-8."""
    return read_bytes(path).decode("utf-8")


def write_bytes(path: str, data: bytes) -> None:
    """Creates (or replaces) ``path`` with ``data``; parent directories are created."""
    if _is_local(path):
        makedirs(os.path.dirname(path) or ".")
        with open(path, "wb") as f:
            f.write(data)
        return
    from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415
    with _beam().create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)


def sha256_of(path: str) -> tuple[str, int]:
    """Returns (hex sha256, size in bytes) of a file, streaming it."""
    h = hashlib.sha256()
    size = 0
    with open_read(path) as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob (empty list if none).

    A bare local glob (``day*.csv``, no folder) is matched as ``./day*.csv``: Beam's local
    filesystem lists the glob's folder, and a bare one has none (it matched nothing).
    """
    bare = _is_local(pattern) and not os.path.dirname(pattern) and any(
        c in pattern for c in "*?[")
    result = _beam().match([f".{os.sep}{pattern}" if bare else pattern])[0]
    paths = (m.path for m in result.metadata_list)
    if bare:
        paths = (p[2:] if p.startswith(f".{os.sep}") else p for p in paths)
    return sorted(paths)


def is_local_file(path: str) -> bool:
    """True for a local path that is a regular file (e.g. an --output that should be a folder)."""
    return _is_local(path) and os.path.isfile(path)


def is_local_folder(path: str) -> bool:
    """True for a local path that is a folder (an input glob naming a folder, not files)."""
    return _is_local(path) and os.path.isdir(path)


def _is_local(path: str) -> bool:
    return "://" not in path


def makedirs(path: str) -> None:
    """Creates a directory (no-op on object stores, where directories are implicit)."""
    if _is_local(path):
        os.makedirs(path, exist_ok=True)
