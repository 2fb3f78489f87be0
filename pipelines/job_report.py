"""The HTML report a job writes beside its output (``--no_report`` skips it).

The page is rendered from the finished output folder by :mod:`beam_prep.report`; a report that
cannot be written never fails the job (its data is already safe): a warning names the reason and
the command that retries it.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); add_report_flag(p)
    >>> p.parse_args(["--no_report"]).no_report
    True
"""

from __future__ import annotations

import sys
from typing import Any

REPORT_FILE = "report.html"  # beam_prep.report.build.REPORT_FILE; the output policies own it


def add_report_flag(parser: Any) -> None:
    """Adds ``--no_report`` to a job's parser (an ``argparse`` parser or argument group)."""
    parser.add_argument("--no_report", action="store_true",
                        help=f"Do not write {REPORT_FILE} (an HTML page with charts of the "
                             "output; `beam-prep report DIR` writes it later).")


def write_job_report(job: str, output: str) -> str | None:
    """Writes ``<output>/report.html``; returns its path, or None (with a warning) on failure."""
    from beam_prep.report import write_report

    try:
        return write_report(output)
    except Exception as e:  # noqa: BLE001 - the output is safe; a report is never worth failing it
        print(f"beam-prep {job}: warning: the HTML report was not written ({e}); run "
              f"`beam-prep report {output}` to retry.", file=sys.stderr)
        return None
