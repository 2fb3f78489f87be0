"""``beam-prep cache prune``: housekeeping of an analysis cache (``analyze --cache_dir``).

Beam-free at import, so ``--help`` is instant; the work imports Beam FileSystems (gs://).

Example:
    $ beam-prep cache prune --cache_dir gs://bucket/analysis-cache --keep_runs 7
    $ beam-prep cache prune --cache_dir cache/ --keep_runs 1 --dry_run
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from beam_prep.config.cli_flags import parse_suggesting


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``beam-prep cache``."""
    p = argparse.ArgumentParser(
        prog="beam-prep cache",
        description="Manage the analysis cache of `beam-prep analyze --cache_dir` "
                    "(docs/artifacts.md: Analysis cache).")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    prune = sub.add_parser(
        "prune", prog="beam-prep cache prune",
        help="delete the entries not used by the last N analysis runs",
        description="Keep the cache entries used by the newest --keep_runs runs (every run "
                    "records the entries it used under <cache_dir>/runs/), delete the other "
                    "entries and the older run records. Do not run it while an analysis "
                    "using the same cache is running.")
    prune.add_argument("--cache_dir", required=True,
                       help="The cache folder (local or gs://), as given to analyze.")
    prune.add_argument("--keep_runs", type=int, required=True,
                       help="Run records to keep, newest first (e.g. 1 for a daily job "
                            "that only rolls its window; more to keep older windows warm).")
    prune.add_argument("--dry_run", action="store_true",
                       help="Print what would be deleted; delete nothing.")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``beam-prep cache``; returns the exit code."""
    args = parse_suggesting(build_parser(), argv)
    from beam_prep.analyzers.cache.prune import prune

    report = prune(args.cache_dir, keep_runs=args.keep_runs, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{args.cache_dir}: kept {report.entries_kept} entries used by the last "
          f"{len(report.runs_kept)} run(s); {verb} {report.entries_removed} entries and "
          f"{len(report.runs_removed)} older run record(s).")
    return 0
