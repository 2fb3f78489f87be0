"""The exclusive lock of an output folder: ``<out>/_LOCK`` naming the run that holds it.

The lock file holds ``{"run_id", "host", "pid", "started"}``. On local disks it is created
atomically (``O_CREAT | O_EXCL``). Beam FileSystems offer no create-if-absent on object stores,
so there the run first takes a host-local lock file (``O_EXCL`` in the temp directory, keyed by
the folder's URL), which makes runs launched from one host exclude each other exactly; then it
writes ``_LOCK`` and reads it back, comparing run ids. Between hosts, two runs that both find no
lock at the same instant may both proceed: the lock is correct for runs launched from one host.
``force_unlock`` breaks a stale lock, never one whose holder process is alive on this host.
Used through :class:`beam_prep.io.commit.output.OutputRun`.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> me = acquire_lock(folder, "run1")
    >>> read_lock(folder).run_id
    'run1'
    >>> release_lock(folder, "run1"); read_lock(folder) is None
    True
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import logging
import os
import socket
import tempfile
from typing import Any

from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs

LOCK_NAME = "_LOCK"
_LOG = logging.getLogger(__name__)


def _is_object_store(path: str) -> bool:
    return "://" in path


def _remove(path: str) -> None:
    if _is_object_store(path):
        from apache_beam.io.filesystems import FileSystems  # noqa: PLC0415 (lazy, ~2 s)

        FileSystems.delete([path])
    elif os.path.lexists(path):
        os.remove(path)


@dataclasses.dataclass(frozen=True)
class LockHolder:
    """The run that holds an output folder.

    Attributes:
        run_id: Random id of the run.
        host: Host name of the machine that launched it.
        pid: Its process id on that host.
        started: UTC start time, ISO 8601.
    """

    run_id: str
    host: str
    pid: int
    started: str

    @classmethod
    def for_this_process(cls, run_id: str) -> LockHolder:
        """A holder describing the current process."""
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return cls(run_id, socket.gethostname(), os.getpid(), now)

    def to_json(self) -> bytes:
        """The lock file's content."""
        return (json.dumps(dataclasses.asdict(self), sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> LockHolder:
        """Parses a lock file; an unreadable one gives a holder of unknown identity."""
        try:
            d: dict[str, Any] = json.loads(data.decode("utf-8"))
            return cls(str(d["run_id"]), str(d["host"]), int(d["pid"]), str(d["started"]))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return cls("<unreadable>", "<unknown>", -1, "<unknown>")

    def describe(self) -> str:
        """``run <id> (host <h>, pid <p>, started <t>)`` for messages."""
        return (f"run {self.run_id} (host {self.host}, pid {self.pid}, "
                f"started {self.started})")

    def alive_here(self) -> bool:
        """True if the holder runs on this host and its process still exists."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _host_guard_path(folder: str) -> str:
    key = hashlib.sha256((folder.rstrip("/") + "/").encode("utf-8")).hexdigest()[:32]
    return os.path.join(tempfile.gettempdir(), "beam_prep_locks", key + ".lock")


def _create_exclusive(path: str, data: bytes) -> bool:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return True


def _read_holder(path: str) -> LockHolder | None:
    if _is_object_store(path):
        if not fs.exists(path):
            return None
    elif not os.path.exists(path):
        return None
    try:
        return LockHolder.from_json(fs.read_bytes(path))
    except OSError:
        return None


def read_lock(folder: str) -> LockHolder | None:
    """The holder of ``folder``'s lock, or None when it is not locked."""
    return _read_holder(fs.join(folder, LOCK_NAME))


def _locked_error(folder: str, holder: LockHolder, flag: str) -> ArtifactError:
    return ArtifactError(
        f"{flag} {folder!r} is locked by {holder.describe()}. Wait for that run to finish, "
        f"or, if it is dead, pass --force_unlock to break its lock.")


def _break(path: str, folder: str, holder: LockHolder, flag: str) -> None:
    if holder.alive_here():
        raise ArtifactError(
            f"--force_unlock refused: {flag} {folder!r} is locked by {holder.describe()}, "
            "which is still running on this host. Stop it first, or choose another "
            f"{flag}.")
    _LOG.warning("breaking the lock of %s held by %s", folder, holder.describe())
    _remove(path)


def _take(path: str, folder: str, me: LockHolder, force_unlock: bool, flag: str) -> None:
    """Creates the local lock file ``path`` exclusively (one retry after breaking it)."""
    for attempt in range(2):
        if _create_exclusive(path, me.to_json()):
            return
        holder = _read_holder(path) or LockHolder("<being written>", "<unknown>", -1, "?")
        if not force_unlock or attempt:
            raise _locked_error(folder, holder, flag)
        _break(path, folder, holder, flag)


def acquire_lock(folder: str, run_id: str, *, force_unlock: bool = False,
                 flag: str = "--output") -> LockHolder:
    """Takes the exclusive lock of ``folder`` for ``run_id``; returns our holder record.

    Raises:
        ArtifactError: Another run holds the lock (naming it), or ``force_unlock`` was asked
            for a holder that is alive on this host.
    """
    me = LockHolder.for_this_process(run_id)
    if not _is_object_store(folder):
        os.makedirs(folder, exist_ok=True)
        _take(os.path.join(folder, LOCK_NAME), folder, me, force_unlock, flag)
        return me
    guard = _host_guard_path(folder)
    _take(guard, folder, me, force_unlock, flag)
    try:
        path = fs.join(folder, LOCK_NAME)
        holder = _read_holder(path)
        if holder is not None:
            if not force_unlock:
                raise _locked_error(folder, holder, flag)
            _break(path, folder, holder, flag)
        fs.write_bytes(path, me.to_json())
        holder = _read_holder(path)
        if holder is None or holder.run_id != run_id:
            raise _locked_error(folder, holder or me, flag)
    except BaseException:
        os.remove(guard)
        raise
    return me


def release_lock(folder: str, run_id: str) -> None:
    """Releases ``folder``'s lock if ``run_id`` holds it (a broken lock is left alone).

    Safe to call again, and from another process or machine than the one that took the lock
    (a pipeline's finalizer on a worker): only the run id is compared.
    """
    path = fs.join(folder, LOCK_NAME)
    holder = _read_holder(path)
    if holder is not None and holder.run_id == run_id:
        _remove(path)
    release_host_guard(folder, run_id)


def release_host_guard(folder: str, run_id: str) -> None:
    """Object stores: removes this host's guard file of ``folder`` if ``run_id`` holds it.

    The guard only orders the runs launched from one host while they take ``_LOCK``; a run that
    hands its ``_LOCK`` over to the pipeline (see
    :meth:`beam_prep.io.commit.output.OutputRun.hand_over`) drops the guard when its
    launcher exits, so a later launch from this host finds ``_LOCK`` itself. No-op on local
    folders and when another run holds the guard.
    """
    if _is_object_store(folder):
        guard = _host_guard_path(folder)
        g = _read_holder(guard)
        if g is not None and g.run_id == run_id:
            os.remove(guard)
