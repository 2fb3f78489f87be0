"""``beam-prep report DIR [--output FILE]``: writes the HTML report and prints its path.

Arguments are parsed before anything heavy is imported, so ``--help`` never imports
TensorFlow (nor Beam, beyond what ``import beam_prep`` itself loads).

Example:
    $ beam-prep report artifacts/
    artifacts/report.html
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``beam-prep report``."""
    p = argparse.ArgumentParser(
        prog="beam-prep report",
        description="Write one self-contained HTML page (inline CSS and SVG, no script, no "
                    "network resource) describing an analysis artifact directory or an "
                    "ELWC output directory.")
    p.add_argument("directory", metavar="ARTIFACTS_OR_ELWC_DIR",
                   help="output directory of `beam-prep analyze` or `beam-prep make-elwc` "
                        "(local or gs://)")
    p.add_argument("--output", metavar="FILE", default=None,
                   help="where to write the page (default: <dir>/report.html)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    from beam_prep.report.build import write_report

    print(write_report(args.directory, args.output))
    return 0
