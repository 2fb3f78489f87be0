"""`beam-prep transform`: encode a dataset with an artifact directory's layers, materialized.

TF Transform's ``TransformDataset`` without TensorFlow: the library transform
:class:`beam_prep.transform.job.TransformDataset` does the work; this module parses flags
(every flag it does not know goes to Beam), takes the output folder (lock, staging, manifest
last: :mod:`beam_prep.io.commit.output`) and prints progress and a summary.

Example:
    $ beam-prep transform --artifacts artifacts/ --input 'data/*.parquet' --output encoded/
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

import apache_beam as beam
from beam_prep.pipelines.flags import (
    is_dry_run,
    job_pipeline_options,
    parse_job_args,
    require_shared_paths,
    template_location,
)
from beam_prep.pipelines.input_splits import count_job_splits, job_splits
from beam_prep.pipelines.job_logging import (
    hide_tracebacks_of_our_errors,
    quiet_beam_worker_notices,
)
from beam_prep.pipelines.transform_args import build_parser

from beam_prep.analyzers.pipeline import FAILED_REPORT, raise_if_failed
from beam_prep.errors import BeamPrepError, InputError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit.output import OutputRun
from beam_prep.io.commit.output_finalize import FinalizeOutput
from beam_prep.io.inputs.readers import (
    check_columns,
    expand_patterns,
    infer_common_format,
)
from beam_prep.progress import ProgressMonitor
from beam_prep.run_summary import SummaryRecorder
from beam_prep.transform.job import (
    MANIFEST,
    TRANSFORM_OUTPUT,
    TransformDataset,
    manifest_info,
)
from beam_prep.transform.layers import BatchEncoder


def _validate(args: argparse.Namespace) -> None:
    if not 0 <= args.max_bad_fraction <= 1:
        raise InputError(f"--max_bad_fraction must be in [0, 1]. Received: "
                         f"{args.max_bad_fraction}")
    for flag in ("batch_size", "parquet_rows_per_split"):
        if getattr(args, flag) < 1:
            raise InputError(f"--{flag} must be a positive integer. Received: "
                             f"{getattr(args, flag)}")
    if args.input_split_bytes < 0:
        raise InputError(f"--input_split_bytes must be 0 (no split) or positive. Received: "
                         f"{args.input_split_bytes}")


def run(argv: Sequence[str] | None = None) -> beam.runners.runner.PipelineResult:
    """Runs the transform job and waits for it; returns the PipelineResult.

    Raises:
        InputError, ArtifactError, SpecError: Bad flags, input, artifacts or output folder
            (before the pipeline starts when they can be detected then), or too many
            rejected rows (after it, nothing moved into place).
    """
    args, beam_args = parse_job_args(build_parser(), argv)
    _validate(args)
    require_shared_paths(beam_args, {"--input": args.input, "--output": args.output,
                                     "--artifacts": args.artifacts})
    # checks the artifacts and their checksums
    encoder = BatchEncoder(args.artifacts, out_of_fold=args.out_of_fold)
    if args.out_of_fold and not any(fp.target for fp in encoder.plan.features):
        raise InputError("--out_of_fold applies to target-encoded features, and "
                         f"{args.artifacts} has none. Received: --out_of_fold. Fix: drop "
                         "--out_of_fold, or add `target_encoding:` to a feature of the spec.")
    files = expand_patterns(args.input)
    fmt = args.input_format or infer_common_format(files)
    check_columns(files, fmt, encoder.owners, csv_delimiter=args.csv_delimiter)
    splits = job_splits(files, fmt, args)
    options = job_pipeline_options(beam_args)
    template = template_location(beam_args)
    with OutputRun(args.output, TRANSFORM_OUTPUT, overwrite=args.overwrite,
                   force_unlock=args.force_unlock) as out:
        pipeline = beam.Pipeline(options=options)
        info = manifest_info(encoder, args.output_format, args.input, fmt, args.artifacts)
        if args.out_of_fold:  # only then: other transform.json files keep their bytes
            info["out_of_fold"] = True
        manifest = pipeline | "Transform" >> TransformDataset(
            args.artifacts, splits, out.staging, info, fmt=args.output_format,
            batch_size=args.batch_size, max_bad_fraction=args.max_bad_fraction,
            csv_delimiter=args.csv_delimiter, skip_corrupt_tail=args.skip_corrupt_tail,
            out_of_fold=args.out_of_fold)
        _ = manifest | "FinalizeOutput" >> FinalizeOutput(out.finalizer(
            report=FAILED_REPORT, failure_level=logging.ERROR if template else logging.INFO))
        result = pipeline.run()
        if template:
            out.hand_over()
            return result
        result.wait_until_finish()
        if not is_dry_run(beam_args):
            raise_if_failed(out.staging, args.output)
            out.commit()
    return result


def _our_error(e: Exception) -> str | None:
    """The message of our error inside an exception Beam wrapped around it (else None)."""
    for marker in ("InputError: ", "SpecError: ", "ArtifactError: "):
        if marker in str(e):
            return str(e).split(marker, 1)[1].split("\n")[0]
    return None


def summarize(manifest: dict) -> str:
    """What the run summary block does not say: the shards, the outputs, rejects by reason.

    The row counts are in the run summary (:mod:`beam_prep.run_summary`), printed once.
    """
    c = manifest["counts"]
    lines = [f"  {len(manifest['files'])} {manifest['output_format']} shard(s), "
             f"{sum(f['bytes'] for f in manifest['files']):,} bytes; "
             f"{len(manifest['outputs'])} encoded outputs"]
    if c["rows_rejected"]:
        lines.append(f"  rejected by reason: {json.dumps(c['rejected_by_reason'])}")
    for o in manifest["outputs"]:
        shape = "ragged" if o["ragged"] else f"width {o['width']}"
        lines.append(f"  {o['key']:<24} {o['dtype']:<8} {shape}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry: runs the job with progress, prints the summary; returns the exit code."""
    args, beam_args = parse_job_args(build_parser(), argv)
    hide_tracebacks_of_our_errors()
    quiet_beam_worker_notices()
    dry_run = is_dry_run(beam_args)
    show = not args.quiet and not dry_run
    with SummaryRecorder("transform", json_path=args.summary_json, quiet=args.quiet) as rec:
        total = count_job_splits(args) if show else None
        with ProgressMonitor("beam-prep transform", unit="splits", total=total,
                             enabled=show):
            try:
                result = run(argv)
            except BeamPrepError:
                raise
            except Exception as e:  # Beam wraps errors raised in DoFns: surface ours.
                detail = _our_error(e)
                if detail is None:
                    raise
                print(f"beam-prep transform: error: {detail}", file=sys.stderr)
                rec.fail(detail, error_type=type(e).__name__)
                return 1
        if dry_run or template_location(beam_args):
            rec.dry_run(details={"note": "nothing was written by this process"})
            return 0
        path = fs.join(args.output, MANIFEST)
        manifest = json.loads(fs.read_text(path))
        c = manifest["counts"]
        rec.succeed(counts={"rows_read": c["rows_read"], "rows_written": c["rows_written"],
                            "rows_rejected": c["rows_rejected"],
                            "shards": len(manifest["files"])},
                    outputs={"output": args.output, "manifest": path},
                    details={"rejected_by_reason": c["rejected_by_reason"],
                             "state": str(result.state)})
    if not args.quiet:
        print(summarize(manifest))
    return 0


if __name__ == "__main__":
    logging.getLogger().setLevel(logging.WARNING)
    sys.exit(main())
