"""`beam-prep analyze`: read a dataset, compute vocabularies and statistics, write artifacts.

Our flags are parsed here; every other flag goes to Beam unchanged (``--runner``,
``--direct_running_mode``, ``--project``, ``--temp_location`` …).

Default runner: Beam's in-process FnApiRunner (what the DirectRunner falls back to), named
explicitly so the local run does not depend on downloading the Prism binary. Pass
``--runner=DirectRunner`` to get Beam's own choice, or ``--runner=DataflowRunner`` etc.

Example:
    $ beam-prep analyze --spec spec.yaml --input 'data/*.csv' --output artifacts/
    $ beam-prep analyze --spec spec.yaml --input 'gs://b/data/*.parquet' \\
        --output gs://b/artifacts --runner=DataflowRunner --project=p --region=r \\
        --temp_location=gs://b/tmp --setup_file=./setup.py
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import apache_beam as beam
from beam_prep.pipelines.analyze_args import build_parser
from beam_prep.pipelines.flags import (
    is_dry_run,
    job_pipeline_options,
    parse_job_args,
    require_shared_paths,
    template_location,
)
from beam_prep.pipelines.input_splits import count_job_splits
from beam_prep.pipelines.job_logging import (
    hide_tracebacks_of_our_errors,
    quiet_beam_worker_notices,
)
from beam_prep.pipelines.job_report import write_job_report

from beam_prep.analyzers.cache import fn as cache_fn
from beam_prep.analyzers.data_warnings import data_warnings
from beam_prep.analyzers.pipeline import (
    ARTIFACT_OUTPUT,
    FAILED_REPORT,
    AnalyzeToArtifacts,
    raise_if_failed,
    summarize,
)
from beam_prep.analyzers.split_fn import column_owners, required_columns
from beam_prep.errors import BeamPrepError, InputError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit.output import OutputRun
from beam_prep.io.commit.output_finalize import FinalizeOutput
from beam_prep.io.contract import artifacts as layout
from beam_prep.io.contract.run_record import RUN_FILE, write_run_record
from beam_prep.io.inputs.readers import (
    check_columns,
    expand_patterns,
    infer_common_format,
)
from beam_prep.progress import ProgressMonitor
from beam_prep.run_summary import SummaryRecorder
from beam_prep.spec import Spec


def _validate_args(args: argparse.Namespace) -> None:
    if args.cache_dir:
        cache_fn.check_cache_dir(args.cache_dir, args.output)
    if args.input_split_bytes < 0:
        raise InputError(f"--input_split_bytes must be 0 (no split) or positive. Received: "
                         f"{args.input_split_bytes}")
    if not 0 <= args.max_bad_fraction <= 1:
        raise InputError(f"--max_bad_fraction must be in [0, 1]. Received: "
                         f"{args.max_bad_fraction}")
    for flag in ("batch_size", "vocab_partitions", "parquet_rows_per_split", "spill_rows",
                 "split_threads"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            raise InputError(f"--{flag} must be a positive integer. Received: "
                             f"{getattr(args, flag)}")


def run(argv: Sequence[str] | None = None, *,
        cache_run_id: str | None = None) -> beam.runners.runner.PipelineResult:
    """Runs the analysis job and waits for it; returns the PipelineResult.

    Args:
        argv: The command line (job flags and Beam pipeline options).
        cache_run_id: Names this run's record in ``--cache_dir`` (hits, misses, keys
            used); a new id when None.

    Raises:
        SpecError, InputError, ArtifactError: Bad spec, input or output directory; all
            raised before the pipeline starts when they can be detected then.
    """
    args, beam_args = parse_job_args(build_parser(), argv)
    _validate_args(args)
    require_shared_paths(beam_args, {"--input": args.input, "--output": args.output,
                                     "--cache_dir": args.cache_dir})
    spec = Spec.load(args.spec)
    files = expand_patterns(args.input)
    fmt = args.input_format or infer_common_format(files)
    columns = required_columns(spec)
    owners = column_owners(spec)  # a derived feature reads its expression's columns
    check_columns(files, fmt, {c: owners[c] for c in columns}, csv_delimiter=args.csv_delimiter)

    cache_run = (cache_run_id or cache_fn.new_run_id()) if args.cache_dir else None
    options = job_pipeline_options(beam_args)
    # Lock the folder, refuse foreign content, write into <output>/_staging-<run>/; the job's
    # last step moves the finished artifacts into place (manifest last) and releases the lock,
    # so a run nobody waits for (a template) finishes too; see beam_prep.io.commit.output_finalize.
    template = template_location(beam_args)
    with OutputRun(args.output, ARTIFACT_OUTPUT, overwrite=args.overwrite,
                   force_unlock=args.force_unlock) as out:
        pipeline = beam.Pipeline(options=options)
        manifest = pipeline | "Analyze" >> AnalyzeToArtifacts(
            spec, files, fmt, out.staging, patterns=args.input, batch_size=args.batch_size,
            num_partitions=args.vocab_partitions, max_bad_fraction=args.max_bad_fraction,
            parquet_rows_per_split=args.parquet_rows_per_split,
            csv_delimiter=args.csv_delimiter, spill_rows=args.spill_rows,
            split_threads=args.split_threads, skip_corrupt_tail=args.skip_corrupt_tail,
            input_split_bytes=args.input_split_bytes, cache_dir=args.cache_dir,
            cache_run_id=cache_run)
        _ = manifest | "FinalizeOutput" >> FinalizeOutput(out.finalizer(
            report=FAILED_REPORT, failure_level=logging.ERROR if template else logging.INFO))
        result = pipeline.run()
        if template:  # the job runs later, without this process
            out.hand_over()
            return result
        result.wait_until_finish()
        if not is_dry_run(beam_args):  # a translation-only run wrote nothing to move
            raise_if_failed(out.staging, args.output)  # too many rejects: nothing moved
            out.commit()  # a no-op: FinalizeOutput committed
        if cache_run and not is_dry_run(beam_args) and not args.quiet:
            print(cache_use_line(cache_fn.cache_use(result, args.cache_dir, cache_run),
                                 args.cache_dir), file=sys.stderr)
    return result


def cache_use_line(use: dict, cache_dir: str) -> str:
    """The one line on the cache a run used: true counts, and what was not written.

    Example:
        >>> cache_use_line({"hits": 1, "misses": 2, "not_stored": 0, "written": True}, "c")
        'analysis cache: 1 split(s) from c, 2 analysed and stored'
        >>> print(cache_use_line({"hits": 0, "misses": 3, "not_stored": 3, "written": False},
        ...                      "c"))  # doctest: +NORMALIZE_WHITESPACE
        analysis cache: 0 split(s) from c, 3 analysed (3 not stored: c cannot be written);
        the run record was not written, so `beam-prep cache prune` keeps no entry for this run
    """
    stored = use["misses"] - use["not_stored"]
    text = f"analysis cache: {use['hits']} split(s) from {cache_dir}, {use['misses']} analysed"
    if use["not_stored"]:
        text += (f" ({use['not_stored']} not stored: {cache_dir} cannot be written)"
                 if not stored else f", {stored} stored, {use['not_stored']} not stored")
    else:
        text += " and stored"
    if not use["written"]:
        text += ("; the run record was not written, so `beam-prep cache prune` keeps no "
                 "entry for this run")
    return text


def _surface_beam_error(e: Exception) -> str | None:
    """The message of our error inside an exception Beam wrapped around it (else None)."""
    message = str(e)
    for marker in ("InputError: ", "SpecError: ", "ArtifactError: "):
        if marker in message:
            return message.split(marker, 1)[1].split("\n")[0]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry: runs the job with progress, prints the run summary; returns the exit code.

    Progress (splits done / total, rows/s, ETA) goes to stderr, see :mod:`beam_prep.progress`;
    ``--quiet`` silences it and the summary. ``--summary_json`` is written in every case.
    """
    args, beam_args = parse_job_args(build_parser(), argv)
    hide_tracebacks_of_our_errors()
    quiet_beam_worker_notices()
    dry_run = is_dry_run(beam_args)
    show = not args.quiet and not dry_run
    with SummaryRecorder("analyze", json_path=args.summary_json, quiet=args.quiet) as rec:
        total = count_job_splits(args) if show else None
        cache_run = cache_fn.new_run_id() if args.cache_dir else None
        detail = None
        with ProgressMonitor("beam-prep analyze", unit="splits", total=total,
                             enabled=show) as monitor:
            try:
                result = run(argv, cache_run_id=cache_run)
            except BeamPrepError:
                raise
            except Exception as e:  # Beam wraps errors raised in DoFns: surface ours clearly.
                detail = _surface_beam_error(e)
                if detail is None:
                    raise
                rec.fail(detail, error_type=type(e).__name__)
        if detail is not None:  # after the progress line: the error is the last word
            print(f"beam-prep analyze: error: {detail}", file=sys.stderr)
            return 1
        if dry_run:
            rec.dry_run(details={"note": "the pipeline was translated for the runner and not "
                                         "executed; nothing was written"})
            return 0
        if template_location(beam_args):  # the job runs later; its last step commits
            rec.succeed(outputs={"template": template_location(beam_args) or ""},
                        details={"state": "template written, the job not run here",
                                 "artifacts": args.output})
            return 0
        manifest_path = fs.join(args.output, layout.MANIFEST)
        if not fs.exists(manifest_path):
            error = (f"pipeline finished in state {result.state} but wrote no manifest; "
                     f"{args.output} is incomplete.")
            print(f"beam-prep analyze: {error}", file=sys.stderr)
            rec.fail(error, error_type="ArtifactError")
            return 1
        manifest = layout.Artifacts(args.output).manifest
        inp = manifest["input"]
        counts = {"rows_read": inp["rows_read"], "rows_rejected": inp["rows_rejected"],
                  "features": len(manifest["features"])}
        if monitor.snapshot().done:  # workers on a remote runner record nothing locally
            counts["splits"] = monitor.snapshot().done
        outputs = {"artifacts": args.output, "manifest": manifest_path}
        if cache_run:
            use = cache_fn.cache_use(result, args.cache_dir, cache_run)
            counts["cache_hits"], counts["cache_misses"] = use["hits"], use["misses"]
            if use["not_stored"]:
                counts["cache_entries_not_stored"] = use["not_stored"]
            if use["written"]:
                outputs["cache_run"] = cache_fn.run_record_path(args.cache_dir, cache_run)
            else:  # said in the text summary and in --summary_json
                counts["cache_run"] = "not written (the cache folder cannot be written)"
        try:  # run metadata beside the artifacts (the manifest stays deterministic)
            write_run_record(args.output, job="analyze", seconds=rec.seconds)
            outputs["run_record"] = fs.join(args.output, RUN_FILE)
        except Exception as e:  # noqa: BLE001 - the artifacts are safe; the record is informative
            print(f"beam-prep analyze: warning: {RUN_FILE} was not written ({e})",
                  file=sys.stderr)
        report = None if args.no_report else write_job_report("analyze", args.output)
        if report:
            outputs["report"] = report
        rec.succeed(
            counts=counts,
            outputs=outputs,
            details={"rejected_by_reason": inp.get("rejected_by_reason", {}),
                     "state": str(result.state)})
    if not args.quiet:
        print(summarize(manifest, counts=False))  # the counts are in the run summary
    for line in data_warnings(manifest):  # --quiet hides progress, never these
        print(f"beam-prep analyze: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    logging.getLogger().setLevel(logging.WARNING)
    sys.exit(main())
