"""Opening compressed text inputs (CSV, JSONL, LETOR) so that a cut or corrupt stream fails.

Beam's decompressing reader (``FileSystems.open`` with ``CompressionTypes.AUTO``) returns a
gzip or bzip2 stream that ends early as if it had ended cleanly: the rows after the cut
would be lost without a word and the run would succeed on part of the file. Files ending in
``.gz``, ``.bz2``, ``.xz`` or ``.lzma`` are therefore decompressed here with the standard
library, whose readers notice a missing end-of-stream marker; the error names the file and
the fix. Other files (uncompressed, ``.zst``, ``.deflate``) are opened by Beam as before.

Example:
    >>> import gzip, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "cut.csv.gz")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(gzip.compress(b"a,b\\n" + b"1,2\\n" * 100)[:-9])
    >>> try:
    ...     with open_input(path) as f:
    ...         _ = f.read()
    ... except InputError as e:
    ...     print(str(e).split(": ")[1])
    the compressed stream ends early (the file is truncated). Its rows would be read only in part
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from typing import IO, Any

from beam_prep.errors import InputError

#: File name endings decompressed (and checked) here, with their readers.
CHECKED = {".gz": gzip.GzipFile, ".bz2": bz2.BZ2File, ".xz": lzma.LZMAFile,
           ".lzma": lzma.LZMAFile}


def _problem(e: BaseException) -> str | None:
    """What a decompression error means, or None for an error that is not about the data."""
    if isinstance(e, EOFError):
        return "the compressed stream ends early (the file is truncated)"
    if isinstance(e, (zlib.error, lzma.LZMAError, gzip.BadGzipFile)):
        return f"the compressed stream is corrupt ({e})"
    if isinstance(e, OSError) and e.errno is None and not isinstance(e, FileNotFoundError):
        return f"the compressed stream is corrupt ({e})"  # bz2: "Invalid data stream"
    return None


class CheckedStream:
    """A decompressing reader whose data errors are :class:`InputError` lines naming the file.

    Delegates to the standard library reader (seekable, iterable by lines); the raw file is
    closed with it.
    """

    def __init__(self, inner: Any, raw: IO[bytes], path: str) -> None:
        self._inner, self._raw, self._path = inner, raw, path

    def _guard(self, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except (EOFError, OSError, zlib.error, lzma.LZMAError) as e:
            problem = _problem(e)
            if problem is None:
                raise
            raise InputError(
                f"Cannot read the compressed input file {self._path}: {problem}. Its rows "
                "would be read only in part: re-create the file (e.g. copy it again), or "
                "remove it from --input.") from e

    def read(self, n: int = -1) -> bytes:
        return self._guard(self._inner.read, n)

    def read1(self, n: int = -1) -> bytes:
        return self._guard(self._inner.read1, n)

    def readinto(self, view: Any) -> int:
        return self._guard(self._inner.readinto, view)

    def readline(self, limit: int = -1) -> bytes:
        return self._guard(self._inner.readline, limit)

    def __iter__(self) -> CheckedStream:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._guard(self._inner.seek, offset, whence)

    def tell(self) -> int:
        return self._inner.tell()

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()

    def __enter__(self) -> CheckedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_input(path: str) -> IO[bytes]:
    """Opens an input file on any Beam filesystem, decompressed by its name's ending.

    ``.gz`` / ``.bz2`` / ``.xz`` / ``.lzma`` give a :class:`CheckedStream` (a truncated or
    corrupt stream raises :class:`InputError`); anything else is Beam's
    ``CompressionTypes.AUTO`` reader.
    """
    from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415 (Beam: lazy)
    from apache_beam.io.filesystems import FileSystems  # noqa: PLC0415

    for ending, reader in CHECKED.items():
        if path.lower().endswith(ending):
            raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
            return CheckedStream(reader(fileobj=raw, mode="rb")  # type: ignore[call-arg]
                                 if reader is gzip.GzipFile else reader(raw, mode="rb"),
                                 raw, path)  # type: ignore[return-value]
    return FileSystems.open(path, compression_type=CompressionTypes.AUTO)
