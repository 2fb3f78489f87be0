"""`beam-prep generate`: render the Keras 3 preprocessing module of an artifact directory.

Example:
    $ beam-prep generate --artifacts artifacts/ --output my_model/preprocessing.py
    $ beam-prep generate --artifacts artifacts/ --output pp.py \\
          --default_artifacts gs://bucket/run-1/artifacts
    $ beam-prep generate --artifacts artifacts/ --output pp.py --overwrite   # replace pp.py
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from beam_prep.config.cli_flags import add_flag, parse_suggesting
from beam_prep.run_summary import SummaryRecorder, add_summary_flag


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``beam-prep generate``."""
    parser = argparse.ArgumentParser(
        prog="beam-prep generate",
        description="Render a standalone Keras 3 preprocessing module (imports only keras "
                    "and tensorflow) from a beam_prep artifact directory.",
    )
    parser.add_argument("--artifacts", required=True,
                        help="Artifact directory written by `beam-prep analyze` (local or gs://).")
    parser.add_argument("--output", required=True, help="Path of the Python module to write.")
    add_flag(parser, "--default_artifacts", dest="default_artifacts", default=None,
             help="Artifact location the module uses when none is passed "
                  "(default: --artifacts, made absolute if local).")
    parser.add_argument("--overwrite", action="store_true", default=False,
                        help="Replace an existing --output (hand edits included). Without it, "
                             "an existing --output is refused, as the jobs refuse a finished "
                             "output.")
    add_flag(parser, "--no_overwrite", dest="overwrite", action="store_false",
             help="Fail if --output exists (now the default; kept for old scripts).")
    parser.add_argument("--quiet", action="store_true", help="Do not print the summary.")
    add_summary_flag(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command; returns the exit code (errors raise BeamPrepError).

    Example:
        >>> main(["--artifacts", "artifacts/", "--output", "pp.py"])   # doctest: +SKIP
        0
    """
    args = parse_suggesting(build_parser(), argv)
    # Imported after parsing: the renderer reads artifacts through Beam's FileSystems, which
    # `--help` does not need.
    from beam_prep.codegen.render import generate
    from beam_prep.io import filesystem as fs
    from beam_prep.io.contract.artifacts import Artifacts
    from beam_prep.quiet_tf import native_stderr_filtered

    with SummaryRecorder("generate", json_path=args.summary_json, quiet=args.quiet) as rec:
        # Derived features render through beam_prep.expr.tf, which imports TensorFlow: its
        # start-up notices are dropped as in `train` (real warnings still pass).
        with native_stderr_filtered():
            path = generate(args.artifacts, args.output,
                            default_artifacts_dir=args.default_artifacts,
                            overwrite=args.overwrite)
        features = Artifacts(args.artifacts).feature_names
        rec.succeed(counts={"features": len(features), "bytes": len(fs.read_bytes(path))},
                    outputs={"module": path}, details={"artifacts": args.artifacts})
    return 0
