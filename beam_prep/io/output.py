"""One output policy for every job: refuse foreign folders, lock, stage, replace, clean up.

A job's output folder is handled in the same way by ``analyze`` and ``make-elwc``:

1. **Lock.** ``<out>/_LOCK`` names the run that holds the folder (run id, host, pid, start
   time; see :mod:`beam_prep.io.output_lock`). A second run refuses, naming the holder;
   ``--force_unlock`` breaks the lock of a dead run. Released at the end, success or failure.
2. **Ownership.** A folder may be written only if it is empty (ignoring our ``_LOCK`` and
   ``_staging-*`` entries) or holds a finished output of the same job (one of the policy's
   ``signatures``, e.g. ``manifest.json``), and then only with ``overwrite``. Any other folder
   is refused with a listing of what it holds: nothing the job did not write is ever deleted.
3. **Staging.** The pipeline writes into ``<out>/_staging-<run_id>/``. :meth:`OutputRun.commit`
   then deletes the old ``last`` file (the manifest) first, deletes the old files the job owns
   (``owned`` globs) that the new output does not replace, moves the new files into place and
   the new ``last`` file at the very end, and removes the staging folder. A failed run leaves
   the old output untouched and its staging folder (which error messages may point at) in
   place; the next run removes it.

On object stores a "folder" is only a key prefix: ``FileSystems.exists("gs://b/out")`` is
False even when ``gs://b/out/manifest.json`` exists. Every folder operation here (listing,
emptiness, deletion) therefore lists the prefix ``<out>/**`` instead of asking for the folder.

Example:
    >>> import tempfile
    >>> policy = OutputPolicy(job="demo", signatures=(("done.txt",),),
    ...                       owned=("done.txt", "data/**"), last="done.txt")
    >>> out = tempfile.mkdtemp()
    >>> with OutputRun(out, policy) as run:
    ...     fs.write_bytes(fs.join(run.staging, "data", "a.txt"), b"a")
    ...     fs.write_bytes(fs.join(run.staging, "done.txt"), b"ok")
    ...     run.commit()
    True
    >>> list_files(out)
    ['data/a.txt', 'done.txt']
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import uuid

from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs
from beam_prep.io.output_lock import (  # noqa: F401 (re-exported)
    LOCK_NAME,
    LockHolder,
    acquire_lock,
    read_lock,
    release_lock,
)

STAGING_PREFIX = "_staging-"
_DELETE_BATCH = 100
_LOG = logging.getLogger(__name__)


def is_object_store(path: str) -> bool:
    """True for ``scheme://`` paths (gs://, s3:// ...), where folders are key prefixes."""
    return "://" in path


def _prefix(folder: str) -> str:
    return folder.rstrip("/") + "/"


def list_files(folder: str) -> list[str]:
    """Sorted paths, relative to ``folder`` and ``/``-separated, of every file below it.

    Object stores: every object whose key starts with ``<folder>/``. A missing folder gives
    an empty list.
    """
    if is_object_store(folder):
        prefix = _prefix(folder)
        found = FileSystems.match([prefix + "**"])[0].metadata_list
        return sorted(m.path[len(prefix):] for m in found if m.path.startswith(prefix))
    out = []
    for root, _, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        for name in files:
            out.append(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
    return sorted(out)


def list_entries(folder: str) -> list[str]:
    """Like :func:`list_files`, plus local empty subfolders (as ``name/``)."""
    entries = list_files(folder)
    if not is_object_store(folder) and os.path.isdir(folder):
        for root, dirs, files in os.walk(folder):
            if root != folder and not dirs and not files:
                entries.append(os.path.relpath(root, folder).replace(os.sep, "/") + "/")
    return sorted(entries)


def is_empty(folder: str) -> bool:
    """True if ``folder`` is missing or holds nothing (on object stores: no key below it)."""
    if is_object_store(folder):
        return not list_files(folder)
    return not os.path.isdir(folder) or not os.listdir(folder)


def delete_files(folder: str, relpaths: list[str]) -> None:
    """Deletes the given files below ``folder`` (missing ones are ignored)."""
    paths = [fs.join(folder, p) for p in relpaths]
    if not is_object_store(folder):
        for p in paths:
            if os.path.lexists(p):
                os.remove(p)
        return
    for i in range(0, len(paths), _DELETE_BATCH):
        FileSystems.delete(paths[i:i + _DELETE_BATCH])


def delete_tree(folder: str) -> None:
    """Deletes ``folder`` and everything below it; object stores: every key of its prefix."""
    if is_object_store(folder):
        delete_files(folder, list_files(folder))
    elif os.path.isdir(folder):
        shutil.rmtree(folder)


def move_files(src_folder: str, dst_folder: str, relpaths: list[str]) -> None:
    """Moves files, replacing existing ones (local: atomic renames; object stores: batched
    copy+delete)."""
    if is_object_store(src_folder):
        for i in range(0, len(relpaths), _DELETE_BATCH):
            part = relpaths[i:i + _DELETE_BATCH]
            FileSystems.rename([fs.join(src_folder, p) for p in part],
                               [fs.join(dst_folder, p) for p in part])
        return
    for rel in relpaths:
        dst = fs.join(dst_folder, rel)
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        os.replace(fs.join(src_folder, rel), dst)


def is_bookkeeping(relpath: str) -> bool:
    """True for our own lock and staging entries, which never count as folder content."""
    top = relpath.split("/", 1)[0]
    return top == LOCK_NAME or top.startswith(STAGING_PREFIX)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for token in re.split(r"(\*\*|\*|\?)", pattern):
        parts.append({"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(token, re.escape(token)))
    return re.compile("".join(parts))


@dataclasses.dataclass(frozen=True)
class OutputPolicy:
    """What a job writes and how its finished output is recognised.

    Attributes:
        job: Job name used in messages, e.g. ``"analyze"``.
        signatures: Sets of relative paths; a folder holding every path of one set holds a
            finished output of this job and may be replaced (with ``overwrite``).
        owned: Globs (``*`` within a name, ``**`` across folders) of the relative paths the job
            writes. Only files matching them are ever deleted when an output is replaced.
        last: Relative path written last on commit and deleted first on replace, so a folder
            without it is never mistaken for a complete output.
        flag: The command-line flag naming the folder, for messages.
    """

    job: str
    signatures: tuple[tuple[str, ...], ...]
    owned: tuple[str, ...]
    last: str
    flag: str = "--output"

    def __post_init__(self) -> None:
        if not self.signatures or not all(self.signatures):
            raise ArtifactError(f"`signatures` must hold at least one non-empty set of paths. "
                                f"Received: signatures={self.signatures!r} (job {self.job!r})")
        if not self.owns(self.last):
            raise ArtifactError(f"`last` must match one of the `owned` globs {self.owned!r}. "
                                f"Received: last={self.last!r} (job {self.job!r})")

    def owns(self, relpath: str) -> bool:
        """True if the job writes ``relpath`` (it matches one of :attr:`owned`)."""
        return any(_glob_regex(p).fullmatch(relpath) for p in self.owned)

    def finished(self, relpaths: list[str] | set[str]) -> bool:
        """True if the listed files hold one complete signature."""
        present = set(relpaths)
        return any(set(sig) <= present for sig in self.signatures)


def check_folder(folder: str, policy: OutputPolicy, *, overwrite: bool) -> bool:
    """Refuses a folder the job may not write; returns True if it holds a finished output.

    Raises:
        ArtifactError: The folder holds a finished output and ``overwrite`` is False, or it
            holds anything else (listed in the message).
    """
    content = [p for p in list_entries(folder) if not is_bookkeeping(p)]
    if not content:
        return False
    if policy.finished(content):
        if not overwrite:
            raise ArtifactError(
                f"{policy.flag} {folder!r} is not empty: it holds a finished {policy.job} "
                f"output ({policy.last}). Pass --overwrite to replace it, or choose another "
                f"{policy.flag}.")
        return True
    shown = ", ".join(content[:5]) + (f" (+{len(content) - 5} more)" if len(content) > 5 else "")
    need = " or ".join(" + ".join(sig) for sig in policy.signatures)
    raise ArtifactError(
        f"{policy.flag} {folder!r} is not empty and holds no finished {policy.job} output "
        f"(no {need}): it holds {shown}. beam_prep only replaces its own output, even with "
        f"--overwrite. Choose an empty or new {policy.flag}, or empty this folder yourself.")


class OutputRun:
    """Context manager owning one job's output folder for one run.

    Entering takes the lock, checks the folder (see :func:`check_folder`) and removes stale
    staging folders of earlier runs; :attr:`staging` is where the pipeline writes;
    :meth:`commit` moves the staged output into place; leaving releases the lock.

    Args:
        folder: The output folder (local path or object-store URL).
        policy: What the job writes.
        overwrite: Allow replacing a finished output of the same job.
        force_unlock: Break a stale lock (never one held by a live process on this host).
        run_id: Id of this run (default: random).
    """

    def __init__(self, folder: str, policy: OutputPolicy, *, overwrite: bool = False,
                 force_unlock: bool = False, run_id: str | None = None) -> None:
        self.folder = folder.rstrip("/") if folder.rstrip("/") else folder
        self.policy = policy
        self.overwrite = overwrite
        self.force_unlock = force_unlock
        self.run_id = run_id or uuid.uuid4().hex[:16]
        self.staging = fs.join(self.folder, STAGING_PREFIX + self.run_id)
        self._locked = False

    def __enter__(self) -> OutputRun:
        acquire_lock(self.folder, self.run_id, force_unlock=self.force_unlock,
                     flag=self.policy.flag)
        self._locked = True
        try:
            check_folder(self.folder, self.policy, overwrite=self.overwrite)
            for rel in list_entries(self.folder):
                top = rel.split("/", 1)[0]
                if top.startswith(STAGING_PREFIX):
                    delete_tree(fs.join(self.folder, top))
            fs.makedirs(self.staging)
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and not is_empty(self.staging):
            _LOG.warning("%s run %s failed; its partial output stays in %s (removed by the "
                         "next run)", self.policy.job, self.run_id, self.staging)
        else:  # failed with nothing staged, or ended without commit (e.g. a dry run)
            delete_tree(self.staging)
        self._release()

    def _release(self) -> None:
        if self._locked:
            release_lock(self.folder, self.run_id)
            self._locked = False

    def commit(self) -> bool:
        """Moves the staged output into the folder; False (nothing moved) if it is incomplete.

        Order: delete the old ``last`` file, then the old owned files the new output does not
        replace; move the new files, the new ``last`` file at the end; remove the staging
        folder. Files the job does not own are never touched.
        """
        staged = list_files(self.staging)
        if not self.policy.finished(staged):
            _LOG.warning("%s run %s wrote no complete output; nothing was moved into %s",
                         self.policy.job, self.run_id, self.folder)
            delete_tree(self.staging)
            return False
        old = [p for p in list_files(self.folder)
               if not is_bookkeeping(p) and self.policy.owns(p)]
        last = self.policy.last
        if last in old:
            delete_files(self.folder, [last])
        delete_files(self.folder, [p for p in old if p not in staged and p != last])
        move_files(self.staging, self.folder, [p for p in staged if p != last])
        move_files(self.staging, self.folder, [last] if last in staged else [])
        delete_tree(self.staging)
        return True
