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
import stat
import uuid
from typing import Any, BinaryIO

from beam_prep.errors import ArtifactError

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


def local_stat(path: str) -> os.stat_result | None:
    """``os.stat`` of a local path (None when missing); None for object stores (no request).

    Readers call it before opening a file: opening a FIFO blocks until a writer appears, and
    a size known in advance lets them refuse a file before reading it.
    """
    if not _is_local(path):
        return None
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def check_regular(path: str, *, max_bytes: int | None = None, what: str = "file") -> None:
    """Refuses a local ``path`` that is not a regular file (FIFO, device, folder) or is larger
    than ``max_bytes``, before anything opens it; no-op for object stores.

    Raises:
        ArtifactError: Naming the path, what it is, and the fix.

    Example:
        >>> check_regular("/dev/null", what="stats file")
        Traceback (most recent call last):
        ...
        beam_prep.errors.ArtifactError: /dev/null is a character device, not a regular file...
    """
    st = local_stat(path)
    if st is None:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ArtifactError(
            f"{path} is {_kind(st.st_mode)}, not a regular file (the {what} is read whole, "
            "and a FIFO or device would block or never end). Received: path="
            f"{path!r}. Fix: replace it with the file the job wrote.")
    if max_bytes is not None and st.st_size > max_bytes:
        raise ArtifactError(
            f"{path} is {st.st_size:,} bytes, more than a {what} can be ({max_bytes:,}). "
            f"Received: path={path!r}. Fix: replace it with the file the job wrote.")


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
    """Creates (or replaces) ``path`` with ``data``; parent directories are created.

    Local files are written atomically and never through a symlink: the bytes go to a new
    temporary file beside ``path`` (``O_EXCL | O_NOFOLLOW``), which then replaces ``path``
    (``os.replace``), so a reader sees the old file or the whole new one, and a failure
    mid-write leaves no partial file. A ``path`` that is a symlink is refused (its target is
    never touched); so is any other non-regular file except a character device (``/dev/null``,
    ``/dev/stdout``), which is written in place. Object stores have no symlinks, and an object
    appears only once its upload completes.

    Raises:
        ArtifactError: ``path`` is a symlink or a directory, FIFO or socket.
    """
    if not _is_local(path):
        from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415
        with _beam().create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.write(data)
        return
    folder = os.path.dirname(path) or "."
    makedirs(folder)
    mode = refuse_symlink(path)
    if mode is not None and stat.S_ISCHR(mode):
        with open(path, "wb") as f:
            f.write(data)
        return
    if mode is not None and not stat.S_ISREG(mode):
        raise ArtifactError(
            f"{path} is not a regular file ({_kind(mode)}); beam_prep writes only regular "
            f"files. Received: path={path!r}. Fix: remove it or choose another path.")
    temp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{uuid.uuid4().hex[:12]}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except BaseException:
        if os.path.lexists(temp):
            os.remove(temp)
        raise


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def refuse_symlink(path: str, *, root: str | None = None) -> int | None:
    """Refuses to write at a local ``path`` that is a symlink (or lies below one inside ``root``).

    Uses ``os.lstat`` (the link itself, never its target). With ``root``, every folder between
    ``root`` (exclusive) and ``path`` is checked too, so a write or move into
    ``root/vocab/x`` is refused when ``root/vocab`` is a symlink. Object-store paths have no
    symlinks: nothing is checked and nothing is asked of the store.

    Returns:
        ``path``'s ``st_mode`` (of the entry itself), or None when it does not exist (and
        always None on object stores).

    Raises:
        ArtifactError: ``path`` or one of those folders is a symlink; the message names it.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp(); os.symlink("/etc", join(d, "vocab"))
        >>> refuse_symlink(join(d, "vocab", "a.txt"), root=d)
        Traceback (most recent call last):
        ...
        beam_prep.errors.ArtifactError: ...
    """
    if not _is_local(path):
        return None
    checked = [path]
    if root is not None:
        rel = os.path.relpath(path, root)
        parts = rel.split(os.sep)[:-1]
        if rel != os.curdir and not rel.startswith(os.pardir):
            checked += [os.path.join(root, *parts[:i]) for i in range(len(parts), 0, -1)]
    mode = None
    for i, p in enumerate(checked):
        try:
            m = os.lstat(p).st_mode
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            continue
        if stat.S_ISLNK(m):
            raise ArtifactError(
                f"{p} is a symlink (to {os.readlink(p)!r}); beam_prep never writes through a "
                f"symlink. Received: path={path!r}. Fix: remove the link (or replace it with "
                "a real folder or file), or choose another output path.")
        if i == 0:
            mode = m
    return mode


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


class HashingWriter:
    """A write-only binary file that keeps the sha256 and size of what is written through it.

    The writing counterpart of :func:`sha256_of`: every writer of an artifact, cache or output
    file whose manifest records ``sha256`` and ``bytes`` hashes the bytes as it writes them,
    here, instead of reading the file back. It is also a file object for pyarrow's writers
    (``write``, ``tell``, ``flush``, ``close``, ``closed``).

    Args:
        target: The binary file the bytes go to.
        owns_target: :meth:`close` closes ``target`` too (as :meth:`create` sets it).

    Example:
        >>> import io
        >>> w = HashingWriter(io.BytesIO())
        >>> w.write(b"ab"), w.write(memoryview(b"c")), w.tell()
        (2, 1, 3)
        >>> w.close() == (hashlib.sha256(b"abc").hexdigest(), 3)
        True
        >>> with HashingWriter(io.BytesIO()) as w:
        ...     _ = w.write(b"")
        >>> w.closed, w.size, w.hexdigest() == hashlib.sha256().hexdigest()
        (True, 0, True)
    """

    def __init__(self, target: BinaryIO, *, owns_target: bool = False) -> None:
        self._target = target
        self._owns = owns_target
        self._sha = hashlib.sha256()
        self.size = 0
        self.closed = False

    @classmethod
    def create(cls, path: str) -> HashingWriter:
        """Creates (or replaces) ``path`` through Beam's FileSystems (no compression, parent
        folders made), to be written through the returned writer."""
        from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415
        makedirs(_beam().split(path)[0])
        target = _beam().create(path, compression_type=CompressionTypes.UNCOMPRESSED)
        return cls(target, owns_target=True)

    def write(self, data: Any) -> int:
        """Writes ``data`` (any bytes-like object); returns its size in bytes."""
        view = memoryview(data).cast("B")
        if view.nbytes:
            self._target.write(data if isinstance(data, bytes) else view.tobytes())
            self._sha.update(view)
            self.size += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        """Bytes written so far."""
        return self.size

    def flush(self) -> None:
        """Nothing to do: the target is flushed when it is closed."""

    def hexdigest(self) -> str:
        """Hex sha256 of the bytes written so far."""
        return self._sha.hexdigest()

    def close(self) -> tuple[str, int]:
        """Marks the writer closed (closing the target when it owns it; again is a no-op);
        returns (hex sha256, size in bytes) of all that was written."""
        if not self.closed:
            self.closed = True
            if self._owns:
                self._target.close()
        return self.hexdigest(), self.size

    def __enter__(self) -> HashingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob (empty list if none).

    A bare local glob (``day*.csv``, no folder) is matched as ``./day*.csv``: Beam's local
    filesystem lists the glob's folder, and a bare one has none (it matched nothing).
    """
    return sorted(match_sizes(pattern))


def match_sizes(pattern: str) -> dict[str, int]:
    """Path -> size in bytes of every file matching a glob, paths spelled as :func:`match`
    spells them (a bare local glob included)."""
    bare = _is_local(pattern) and not os.path.dirname(pattern) and any(
        c in pattern for c in "*?[")
    result = _beam().match([f".{os.sep}{pattern}" if bare else pattern])[0]
    out = {}
    for m in result.metadata_list:
        path = m.path[2:] if bare and m.path.startswith(f".{os.sep}") else m.path
        out[path] = m.size_in_bytes
    return out


def is_local_file(path: str) -> bool:
    """True for a local path that is a regular file (e.g. an --output that should be a folder)."""
    return _is_local(path) and os.path.isfile(path)


def is_local_folder(path: str) -> bool:
    """True for a local path that is a folder (an input glob naming a folder, not files)."""
    return _is_local(path) and os.path.isdir(path)


GCS_PROBE_SECONDS = 5.0
"""Connect timeout of the one reachability probe of the GCS endpoint (see check_reachable)."""
_REACHABLE: dict[tuple[str, int], str | None] = {}


def _gcs_endpoint() -> tuple[str, int]:
    """Host and port the GCS client talks to: ``STORAGE_EMULATOR_HOST`` or Google's."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    emulator = os.environ.get("STORAGE_EMULATOR_HOST", "").strip()
    if emulator:
        parts = urlsplit(emulator if "://" in emulator else "http://" + emulator)
        default = 443 if parts.scheme == "https" else 80
        return parts.hostname or "localhost", parts.port or default
    return "storage.googleapis.com", 443


def check_reachable(path: str) -> None:
    """Fails fast, in one line, when the object store of a ``gs://`` path cannot be reached.

    Beam's GCS client retries a refused connection for 120 s and then raises a ``RetryError``
    (after up to 30 s of credential probing): a reader (``diff``, ``generate``, ``report``)
    first opens one TCP connection to the GCS endpoint with a :data:`GCS_PROBE_SECONDS`
    timeout, once per endpoint and process. Local paths, other schemes and machines behind
    an HTTP(S) proxy (where a direct connection proves nothing) are not probed.

    Raises:
        ArtifactError: The endpoint refused or did not answer; names the path, the endpoint
            and the fix.

    Example:
        >>> check_reachable("artifacts/")  # local: nothing to do
    """
    if not path.startswith("gs://"):
        return
    if any(os.environ.get(v) for v in ("https_proxy", "HTTPS_PROXY", "http_proxy",
                                       "HTTP_PROXY", "all_proxy", "ALL_PROXY")):
        return
    import socket  # noqa: PLC0415

    endpoint = _gcs_endpoint()
    if endpoint not in _REACHABLE:
        try:
            with socket.create_connection(endpoint, timeout=GCS_PROBE_SECONDS):
                _REACHABLE[endpoint] = None
        except OSError as e:
            _REACHABLE[endpoint] = f"{e.strerror or e or type(e).__name__}"
    why = _REACHABLE[endpoint]
    if why is not None:
        host, port = endpoint
        raise ArtifactError(
            f"Cannot reach Google Cloud Storage for {path}: {host}:{port} did not accept a "
            f"connection ({why}; timeout {GCS_PROBE_SECONDS:g} s). Fix: check the network, "
            "proxy or firewall (and STORAGE_EMULATOR_HOST if set), or use a local copy.")


def _is_local(path: str) -> bool:
    return "://" not in path


def makedirs(path: str) -> None:
    """Creates a directory (no-op on object stores, where directories are implicit)."""
    if _is_local(path):
        os.makedirs(path, exist_ok=True)
