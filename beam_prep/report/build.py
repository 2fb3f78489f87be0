"""Which page to render for a directory, and writing it.

A directory with ``manifest.json`` is an analysis artifact directory; one with
``stats.json`` (and no manifest) is an ELWC output directory. Anything else is an
``ArtifactError`` naming the path and what was looked for.

Example:
    >>> write_report("artifacts/")           # doctest: +SKIP
    'artifacts/report.html'
"""

from __future__ import annotations

from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit.output_target import check_not_owned

REPORT_FILE = "report.html"


def _check_reportable(path: str) -> None:
    from beam_prep.io.contract.artifacts import MANIFEST
    from beam_prep.report.elwc import STATS_FILE

    fs.check_reachable(path)
    if not (fs.exists(fs.join(path, MANIFEST)) or fs.exists(fs.join(path, STATS_FILE))):
        raise ArtifactError(
            f"Nothing to report in {path!r}: it has neither {MANIFEST} (written by `beam-prep "
            f"analyze`) nor {STATS_FILE} (written by `beam-prep make-elwc`). Received: "
            f"path={path!r}. Fix: pass the --output directory of one of those jobs, after it "
            "finished.")


def render_report(path: str) -> str:
    """The HTML page for an artifact or ELWC directory (local or ``gs://``).

    Args:
        path: The directory written by ``beam-prep analyze`` or ``beam-prep make-elwc``.

    Returns:
        The complete, self-contained HTML document.

    Raises:
        ArtifactError: The directory holds neither ``manifest.json`` nor ``stats.json``.
    """
    from beam_prep.io.contract.artifacts import MANIFEST, Artifacts

    _check_reportable(path)
    if fs.exists(fs.join(path, MANIFEST)):
        from beam_prep.report.analysis import render_analysis

        return render_analysis(Artifacts(path))
    from beam_prep.report.elwc import render_elwc

    return render_elwc(path)


def write_report(path: str, output: str | None = None) -> str:
    """Renders the report of ``path`` and writes it; returns the written file's path.

    The default ``<path>/report.html`` is rendered and written while holding the folder's
    output lock (``_LOCK``, :mod:`beam_prep.io.commit.output_lock`), so a job writing the folder at
    the same time is never half read, and a running one makes this an error naming it. The
    file is written atomically (a temporary file beside it, then a rename: no partial page
    after a failure) and never through a symlink: a ``report.html`` that is a symlink is
    refused, its target left untouched (:func:`beam_prep.io.filesystem.write_bytes`).

    Args:
        path: The artifact or ELWC directory.
        output: Where to write the page; default ``<path>/report.html``.

    Raises:
        ArtifactError: Nothing to report, the folder is locked by a run, or the target is a
            symlink (or another non-regular file).
    """
    if output is not None:
        check_not_owned(output, path, command="report")
        page = render_report(path).encode("utf-8")
        try:
            fs.write_bytes(output, page)
        except ArtifactError:
            raise
        except OSError as e:
            raise _write_error(output, e) from e
        return output
    import uuid

    from beam_prep.io.commit.output_lock import LOCK_NAME, acquire_lock, read_lock, release_lock

    _check_reportable(path)  # before the lock, which would create a missing folder
    target = fs.join(path, REPORT_FILE)
    fs.refuse_symlink(target)  # fail before rendering; write_bytes checks again
    run_id = "report-" + uuid.uuid4().hex[:12]
    try:
        acquire_lock(path, run_id, flag="beam-prep report")
    except ArtifactError:
        holder = read_lock(path)
        if holder is None:
            raise
        raise ArtifactError(
            f"{path!r} is locked by {holder.describe()}: a job is writing it, so its report "
            f"would describe a half-written folder. Received: path={path!r}. Fix: wait for "
            f"that run to finish; if it died, re-run the job with --force_unlock, or remove "
            f"{fs.join(path, LOCK_NAME)} yourself.") from None
    except OSError as e:  # a read-only folder
        raise _write_error(target, e) from e
    try:
        fs.write_bytes(target, render_report(path).encode("utf-8"))
    except ArtifactError:
        raise
    except OSError as e:  # disk full, file too large: the old page stays whole
        raise _write_error(target, e) from e
    finally:
        release_lock(path, run_id)
    return target


def _write_error(target: str, e: OSError) -> ArtifactError:
    return ArtifactError(
        f"Cannot write {target}: {e.strerror or e} ({type(e).__name__}); the previous page, if "
        "any, is unchanged. Fix: free space or fix permissions, or pass --output FILE "
        "somewhere this user can write.")
