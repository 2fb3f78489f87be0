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

REPORT_FILE = "report.html"


def render_report(path: str) -> str:
    """The HTML page for an artifact or ELWC directory (local or ``gs://``).

    Args:
        path: The directory written by ``beam-prep analyze`` or ``beam-prep make-elwc``.

    Returns:
        The complete, self-contained HTML document.

    Raises:
        ArtifactError: The directory holds neither ``manifest.json`` nor ``stats.json``.
    """
    from beam_prep.io.artifacts import MANIFEST, Artifacts

    if fs.exists(fs.join(path, MANIFEST)):
        from beam_prep.report.analysis import render_analysis

        return render_analysis(Artifacts(path))
    from beam_prep.report.elwc import STATS_FILE, render_elwc

    if fs.exists(fs.join(path, STATS_FILE)):
        return render_elwc(path)
    raise ArtifactError(
        f"Nothing to report in {path!r}: it has neither {MANIFEST} (written by `beam-prep "
        f"analyze`) nor {STATS_FILE} (written by `beam-prep make-elwc`). Received: "
        f"path={path!r}. Fix: pass the --output directory of one of those jobs, after it "
        "finished.")


def write_report(path: str, output: str | None = None) -> str:
    """Renders the report of ``path`` and writes it; returns the written file's path.

    Args:
        path: The artifact or ELWC directory.
        output: Where to write the page; default ``<path>/report.html``.
    """
    target = output or fs.join(path, REPORT_FILE)
    fs.write_bytes(target, render_report(path).encode("utf-8"))
    return target
