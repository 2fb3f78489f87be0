"""One output policy for every job: refuse foreign folders, lock, stage, replace, clean up.

A job's output folder is handled in the same way by ``analyze`` and ``make-elwc``:

1. **Lock.** ``<out>/_LOCK`` names the run that holds the folder (run id, host, pid, start
   time; see :mod:`beam_prep.io.commit.output_lock`). A second run refuses, naming the holder;
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
4. **Finalisation in the pipeline.** :meth:`OutputRun.finalizer` gives a small picklable
   :class:`Finalizer` that does steps 3 and 1's release on a worker, as the job's last step
   (:class:`beam_prep.io.commit.output_finalize.FinalizeOutput`), so an output is committed and
   unlocked even when no driver waits for the job (a Flex Template launcher, a
   ``--template_location`` run). A commit first writes a journal (``_COMMIT.json`` in the
   staging folder) naming the new files, so a retried or interrupted commit finishes the same
   moves and never deletes a file it already moved; run twice, it is a no-op. The driver's
   :meth:`OutputRun.commit` is then a no-op too; a launcher that does not wait calls
   :meth:`OutputRun.hand_over` so that leaving the context keeps the lock and the staging
   folder for the pipeline.

On object stores a "folder" is only a key prefix: every folder operation (listing, emptiness,
deletion; :mod:`beam_prep.io.commit.folders`) lists the prefix ``<out>/**``.

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
import json
import logging
import re
import uuid
from typing import Literal

from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit.folders import (  # noqa: F401 (re-exported)
    delete_files,
    delete_tree,
    is_empty,
    is_object_store,
    list_entries,
    list_files,
    move_files,
)
from beam_prep.io.commit.output_lock import (  # noqa: F401 (re-exported)
    LOCK_NAME,
    LockHolder,
    acquire_lock,
    read_lock,
    release_host_guard,
    release_lock,
)

STAGING_PREFIX = "_staging-"
COMMIT_JOURNAL = "_COMMIT.json"
"""Written into the staging folder when a commit starts: the relative paths it moves."""
FinalizeOutcome = Literal["committed", "failed", "refused", "nothing_staged"]
_LOG = logging.getLogger(__name__)


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

    A local folder holding a symlink anywhere below it is refused, whatever else it holds
    (the link is named): a move or write into it could land outside the folder. A folder
    holding only a symlink is not empty.

    Raises:
        ArtifactError: The folder holds a finished output and ``overwrite`` is False, it
            holds anything else (listed in the message), or a symlink.
    """
    content = [p for p in list_entries(folder) if not is_bookkeeping(p)]
    if not content:
        return False
    if not is_object_store(folder):  # object stores have no symlinks: nothing more to ask
        for rel in content:
            fs.refuse_symlink(fs.join(folder, rel.rstrip("/")))
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


def _read_journal(staging: str) -> list[str] | None:
    """The files named by the staging folder's commit journal; None if unreadable."""
    try:
        files = json.loads(fs.read_text(fs.join(staging, COMMIT_JOURNAL)))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # written partially: no file was moved yet, so start over
    return [str(f) for f in files]


def failed_run_note(job: str, run_id: str, folder: str, staging: str) -> str:
    """One line on what a failed run left and what the next run into ``folder`` does.

    A run that failed before its commit left ``folder`` unchanged: the next run removes its
    staging folder. A run that failed during its commit (the journal is staged: e.g. the
    disk filled up while moving files) left the commit part-way: the next run finishes it
    first (:meth:`OutputRun._finish_interrupted_commits`).
    """
    try:
        committing = fs.exists(fs.join(staging, COMMIT_JOURNAL))
    except OSError:
        committing = False
    if committing:
        return (f"{job} run {run_id} failed while moving its finished output into "
                f"{folder}: the commit stopped part-way (its journal is in {staging}); the "
                f"next run into {folder} finishes this commit first, then works as usual")
    return (f"{job} run {run_id} failed before its commit: {folder} is unchanged; its "
            f"partial output in {staging} is removed by the next run into {folder}")


def commit_staging(folder: str, staging: str, policy: OutputPolicy) -> bool:
    """Moves a staged output into ``folder``; safe to repeat after a crash at any point.

    The first call writes :data:`COMMIT_JOURNAL` (the staged files), then deletes the old
    ``last`` file and the old owned files the new output does not replace, moves the new
    files and the new ``last`` file at the end, and removes the staging folder. A repeated
    call reads the journal, so it keeps the files already moved and moves only the rest; once
    the staging folder is gone it does nothing. Files the job does not own are never touched.

    Returns:
        True if the staged output was complete (now in place, or already), False if it was
        incomplete: then nothing is moved and the staging folder is deleted.
    """
    listed = list_files(staging)
    if not listed:
        return True  # already committed (a repeated call)
    present = [p for p in listed if p != COMMIT_JOURNAL]
    new = _read_journal(staging) if COMMIT_JOURNAL in listed else None
    if new is None:
        if not policy.finished(present):
            _LOG.warning("%s wrote no complete %s output; nothing was moved into %s",
                         staging, policy.job, folder)
            delete_tree(staging)
            return False
        new = present
        fs.write_bytes(fs.join(staging, COMMIT_JOURNAL),
                       json.dumps({"files": new}, sort_keys=True).encode("utf-8"))
    last = policy.last
    if last in present or last not in new:  # else every file was moved by an earlier call
        keep = set(new)
        old = [p for p in list_files(folder) if not is_bookkeeping(p) and policy.owns(p)]
        if last in old:  # the old output stops being a finished one first
            delete_files(folder, [last])
        delete_files(folder, [p for p in old if p not in keep and p != last])
        move_files(staging, folder, [p for p in present if p != last])
        move_files(staging, folder, [last] if last in present else [])
    delete_tree(staging)
    return True


@dataclasses.dataclass(frozen=True)
class Finalizer:
    """The end of one run, done where the job's last step runs (a worker, or the driver).

    Picklable (plain fields): the jobs hand it to
    :class:`beam_prep.io.commit.output_finalize.FinalizeOutput`. :meth:`finalize` commits a complete
    staged output and releases the lock; an incomplete one (a failed input check) stays in
    staging for its report and rejected rows, the folder is left as it was, the lock is
    released and the reason logged: nothing raises, since a runner would retry a raising step.

    Attributes:
        folder: The output folder.
        policy: What the job writes.
        run_id: Id of the run (its lock holder and staging folder name).
        overwrite: The run's ``--overwrite``; the folder is checked again before the commit.
        report: Relative path of the staged JSON file whose ``"error"`` explains a failed run
            (e.g. ``"_failed.json"``), used in the log message.
        failure_level: Log level of a failed run's message: ``logging.ERROR`` when no driver
            waits for the job; the jobs pass ``logging.INFO`` when the driver raises the error
            itself, so that the command line shows it once.

    Example:
        >>> import tempfile
        >>> policy = OutputPolicy(job="demo", signatures=(("done.txt",),),
        ...                       owned=("done.txt",), last="done.txt")
        >>> out = tempfile.mkdtemp()
        >>> with OutputRun(out, policy) as run:
        ...     fs.write_bytes(fs.join(run.staging, "done.txt"), b"ok")
        ...     fin = run.finalizer()
        ...     fin.finalize(), fin.finalize(), read_lock(out)
        ('committed', 'nothing_staged', None)
    """

    folder: str
    policy: OutputPolicy
    run_id: str
    overwrite: bool = False
    report: str | None = None
    failure_level: int = logging.ERROR

    @property
    def staging(self) -> str:
        """The run's staging folder."""
        return fs.join(self.folder, STAGING_PREFIX + self.run_id)

    def finalize(self) -> FinalizeOutcome:
        """Commits or keeps the staged output, releases the lock; returns what happened.

        ``"committed"``: the output is in place. ``"failed"``: the run wrote no complete
        output, which stays in staging. ``"refused"``: the lock is no longer this run's (broken
        with ``--force_unlock``, or a classic template launched a second time) or the folder
        changed into one the run may not replace: nothing moved, the staging folder stays.
        ``"nothing_staged"``: an earlier call already finished (a retried step), or the run
        staged nothing.
        """
        listed = list_files(self.staging)
        job, run = self.policy.job, self.run_id
        if not listed:
            _LOG.info("%s run %s: nothing staged in %s (already committed, or nothing "
                      "written)", job, run, self.staging)
            release_lock(self.folder, self.run_id)
            return "nothing_staged"
        if COMMIT_JOURNAL not in listed:  # not started yet: check as a new run would
            if not self.policy.finished(listed):
                _LOG.log(self.failure_level, "%s run %s failed: %s %s was left as it was; this "
                         "run's report and rejected rows stay in %s until the next run.",
                         job, run, self._reason(listed), self.folder, self.staging)
                release_lock(self.folder, self.run_id)
                return "failed"
            holder = read_lock(self.folder)
            if holder is None or holder.run_id != self.run_id:
                _LOG.error("%s run %s finished but no longer holds the lock of %s (%s); its "
                           "output was not moved and stays in %s.", job, run, self.folder,
                           holder.describe() if holder else "unlocked", self.staging)
                return "refused"
            try:
                check_folder(self.folder, self.policy, overwrite=self.overwrite)
            except ArtifactError as e:
                _LOG.error("%s run %s: output not moved, it stays in %s: %s", job, run,
                           self.staging, e)
                release_lock(self.folder, self.run_id)
                return "refused"
        commit_staging(self.folder, self.staging, self.policy)
        release_lock(self.folder, self.run_id)
        return "committed"

    def _reason(self, listed: list[str]) -> str:
        if self.report and self.report in listed:
            try:
                error = json.loads(fs.read_text(fs.join(self.staging, self.report))).get("error")
            except (OSError, ValueError, AttributeError):
                error = None
            if error:
                return str(error)
        return f"it wrote no complete output (no {self.policy.last})."


class OutputRun:
    """Context manager owning one job's output folder for one run.

    Entering takes the lock, checks the folder (see :func:`check_folder`) and removes stale
    staging folders of earlier runs; :attr:`staging` is where the pipeline writes;
    :meth:`commit` (or the pipeline's last step, see :meth:`finalizer`) moves the staged output
    into place; leaving releases the lock, unless :meth:`hand_over` passed it to the pipeline.

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
        self._handed_over = False

    def __enter__(self) -> OutputRun:
        try:
            acquire_lock(self.folder, self.run_id, force_unlock=self.force_unlock,
                         flag=self.policy.flag)
        except ArtifactError:  # locked by another run: an OSError too, but no permission issue
            raise
        except OSError as e:  # unwritable, read-only, or a path through a file
            if fs.is_local_file(self.folder):
                raise ArtifactError(
                    f"{self.policy.flag} {self.folder!r} is a file, not a folder. Fix: pass "
                    f"a folder path (it is created), or move the file away.") from None
            raise ArtifactError(
                f"Output folder {self.folder!r} cannot be written: {e.strerror or e} "
                f"({type(e).__name__}). Fix: pass an --output folder this user can create "
                "and write (check its parents and permissions).") from e
        self._locked = True
        try:
            self._finish_interrupted_commits()
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
        if exc_type is None and self._handed_over:
            _LOG.info("%s run %s: the job's last step moves its output from %s into place "
                      "and releases the lock", self.policy.job, self.run_id, self.staging)
            release_host_guard(self.folder, self.run_id)
            self._locked = False
            return
        if exc_type is not None and not is_empty(self.staging):
            _LOG.warning("%s", failed_run_note(self.policy.job, self.run_id, self.folder,
                                               self.staging))
        else:  # failed with nothing staged, or ended without commit (e.g. a dry run)
            delete_tree(self.staging)
        self._release()

    def _finish_interrupted_commits(self) -> None:
        """Rolls forward a commit an earlier run started (its journal is still staged).

        Such a run died while moving a complete output (e.g. its job was cancelled during the
        last step): some new files are in place, its ``last`` file is not. Finishing the moves
        turns the folder back into a finished output, which ``overwrite`` then governs.
        """
        tops = {rel.split("/", 1)[0] for rel in list_files(self.folder)}
        for top in sorted(t for t in tops if t.startswith(STAGING_PREFIX)):
            staged = fs.join(self.folder, top)
            if fs.exists(fs.join(staged, COMMIT_JOURNAL)):
                _LOG.warning("finishing the interrupted commit of %s into %s", staged,
                             self.folder)
                commit_staging(self.folder, staged, self.policy)

    def _release(self) -> None:
        if self._locked:
            release_lock(self.folder, self.run_id)
            self._locked = False

    def finalizer(self, *, report: str | None = None,
                  failure_level: int = logging.ERROR) -> Finalizer:
        """The picklable end of this run, for the pipeline's last step (see :class:`Finalizer`)."""
        return Finalizer(self.folder, self.policy, self.run_id, overwrite=self.overwrite,
                         report=report, failure_level=failure_level)

    def hand_over(self) -> None:
        """Leaves the lock and the staging folder to the pipeline's finalizer.

        For a launcher that exits once the job is submitted (a ``--template_location`` run):
        leaving the context then neither deletes the staging folder nor releases ``_LOCK``.
        An exception inside the context still cleans up as usual (the job was not submitted).
        """
        self._handed_over = True

    def commit(self) -> bool:
        """Moves the staged output into the folder; False (nothing moved) if it is incomplete.

        What :meth:`Finalizer.finalize` does (see :func:`commit_staging` for the order of the
        moves), lock release included; a no-op returning True when the pipeline's finalizer
        already committed (the staging folder is gone and the lock no longer this run's).
        """
        if is_empty(self.staging):
            holder = read_lock(self.folder)
            if holder is None or holder.run_id != self.run_id:
                return True  # committed by the pipeline's FinalizeOutput step
        return self.finalizer().finalize() == "committed"
