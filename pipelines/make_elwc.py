"""Beam job: ranking logs (LETOR/LibSVM, LightGBM, CSV, JSONL, Parquet) → ELWC TFRecords.

Every option not listed in ``--help`` is passed to Beam (``--runner``,
``--direct_running_mode``, ``--direct_num_workers``, Dataflow flags, ...). The default runner is
Beam's FnApiRunner (in-process; ``--direct_running_mode=multi_processing
--direct_num_workers=N`` for N worker processes), pinned by its dotted path as in
``pipelines/analyze.py`` so a machine where Prism can be downloaded gives the same files as one
where it cannot.

Example:
    $ beam-prep make-elwc --input 'logs/*.txt' --input_format letor --output elwc/ \\
        --max_list_size 100 --splits train:0.8,validation:0.1,test:0.1 --num_shards 4
    $ python -m beam_prep.pipelines.make_elwc --input rank.train --input_format lightgbm \\
        --output out/ \\
        --direct_running_mode=multi_processing --direct_num_workers=2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
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
from beam_prep.pipelines.job_logging import (
    hide_tracebacks_of_our_errors,
    quiet_beam_worker_notices,
)
from beam_prep.pipelines.job_report import write_job_report
from beam_prep.pipelines.make_elwc_args import build_parser

from beam_prep.errors import InputError, SpecError
from beam_prep.io import filesystem
from beam_prep.io.commit.output import OutputRun
from beam_prep.io.commit.output_finalize import FinalizeOutput
from beam_prep.progress import ProgressMonitor
from beam_prep.ranking.data.artifact_encode import ArtifactEncoder
from beam_prep.ranking.data.options import (
    ElwcOptions,
    parse_splits,
)
from beam_prep.ranking.data.sharding import resolve_num_shards
from beam_prep.ranking.data.sources import plan_pieces
from beam_prep.ranking.data.transforms import (
    ELWC_OUTPUT,
    STATS_FILENAME,
    ConvertToELWC,
    WriteELWC,
    list_input_files,
)
from beam_prep.ranking.data.value_rules import format_code_counts
from beam_prep.run_summary import SummaryRecorder


def _csv(text: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())




def _feature_names(path: str | None) -> tuple[tuple[int, str], ...]:
    if not path:
        return ()
    out = []
    for n, line in enumerate(filesystem.read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[0].isdigit():
            raise SpecError(f"--feature_names_file line {n} must be '<id> <name>'. "
                            f"Received: {line!r}")
        out.append((int(parts[0]), parts[1]))
    return tuple(out)


def options_from_args(args: argparse.Namespace) -> ElwcOptions:
    """The :class:`ElwcOptions` described by parsed command-line arguments."""
    return ElwcOptions(
        input_format=args.input_format, label_name=args.label_name, label_dtype=args.label_dtype,
        feature_name_format=args.feature_name_format,
        feature_names=_feature_names(args.feature_names_file), num_features=args.num_features,
        missing_value=args.missing_value, max_list_size=args.max_list_size,
        list_policy=args.list_policy, min_list_size=args.min_list_size,
        drop_no_positive=args.drop_no_positive, seed=args.seed, splits=parse_splits(args.splits),
        split_seed=args.split_seed, num_shards=args.num_shards, compression=args.compression,
        query_id_feature=args.query_id_feature, query_id_column=args.query_id_column,
        label_column=args.label_column, context_columns=_csv(args.context_columns),
        example_columns=None if args.example_columns is None else _csv(args.example_columns),
        max_bad_fraction=args.max_bad_fraction, artifacts=args.artifacts or None)


def run(argv: Sequence[str] | None = None) -> beam.runners.runner.PipelineResult:
    """Builds and runs the job; waits for it; raises InputError if too many lines were bad."""
    args, beam_args = parse_job_args(build_parser(), argv)
    require_shared_paths(beam_args, {"--input": args.input, "--output": args.output,
                                     "--artifacts": args.artifacts})
    opts = options_from_args(args)
    if opts.artifacts:  # checksums verified and layers checked once, before any work
        ArtifactEncoder(opts.artifacts, verify=True)
    files = list_input_files(args.input, opts)
    _refuse_empty_inputs(args.input, [path for _, path, _ in files])
    opts = resolve_num_shards(opts, args.input, files)
    options = job_pipeline_options(beam_args)
    # Lock the folder, refuse foreign content, write into <output>/_staging-<run>/; the job's
    # last step moves the finished files into place (stats.json last) and releases the lock,
    # so a run nobody waits for (a template) finishes too; see beam_prep.io.commit.output_finalize.
    # A run that fails on bad input is not moved: the previous output stays whole, and the
    # failed run's stats.json and rejected/ stay in its staging folder, which the error names.
    template = template_location(beam_args)
    with OutputRun(args.output, ELWC_OUTPUT, overwrite=args.overwrite,
                   force_unlock=args.force_unlock) as out:
        pipeline = beam.Pipeline(options=options)
        stats = pipeline | "ConvertToELWC" >> ConvertToELWC(
            files, opts, split_bytes=args.input_split_bytes) \
            | "WriteELWC" >> WriteELWC(out.staging, opts)
        _ = stats | "FinalizeOutput" >> FinalizeOutput(out.finalizer(
            report=STATS_FILENAME, failure_level=logging.ERROR if template else logging.INFO))
        result = pipeline.run()
        if template:  # the job runs later, without this process
            out.hand_over()
            return result
        result.wait_until_finish()
        if is_dry_run(beam_args):  # translation only: nothing ran, nothing to move
            return result
        stats_path = filesystem.join(out.staging, STATS_FILENAME)
        if filesystem.exists(stats_path):  # still staged: FinalizeOutput did not commit it
            report = json.loads(filesystem.read_text(stats_path))
            if report.get("status") != "ok":
                raise InputError(f"{report.get('error') or 'make-elwc failed'} The failed "
                                 f"run's stats.json and rejected lines are in {out.staging}; "
                                 f"{args.output} was left as it was.")
        if not out.commit():  # a no-op after FinalizeOutput
            raise InputError(f"make-elwc wrote no complete output; {args.output} was left "
                             "as it was.")
    return result


def _refuse_empty_inputs(patterns: Sequence[str], paths: Sequence[str]) -> None:
    """InputError before the pipeline when every input file is local and 0 bytes long."""
    if paths and all("://" not in p and os.path.getsize(p) == 0 for p in paths):
        raise InputError(f"No lines to read from {list(patterns)}: the input files are empty "
                         f"({len(paths)} file(s) of 0 bytes). Check --input.")


def summary(output: str) -> str:
    """Human-readable summary of a finished run, from its stats.json."""
    s = json.loads(filesystem.read_text(filesystem.join(output, STATS_FILENAME)))
    ev = s.get("events", {})
    inp = s["input"]
    lines = [
        f"make-elwc: {s['lists']} lists, {s['documents']} documents from {s['queries']} "
        f"queries ({inp.get('files', 0)} files, {inp.get('lines', 0)} lines).",
        "  splits: " + ", ".join(f"{k}={v['lists']} lists/{v['documents']} docs"
                                 for k, v in s["splits"].items()),
        f"  queries split: {ev.get('queries_split', 0)}, truncated: "
        f"{ev.get('queries_truncated', 0)}, sampled: {ev.get('queries_sampled', 0)}; lists "
        f"dropped too small: {ev.get('lists_dropped_too_small', 0)}, no positive: "
        f"{ev.get('lists_dropped_no_positive', 0)}",
        f"  rejected lines: {inp.get('lines_rejected', 0)}"
        + (f" ({format_code_counts(inp.get('rejected_by_reason', {}))}; see "
           f"{filesystem.join(output, 'rejected')}/)" if inp.get("lines_rejected") else
           " (no rejected/ files written)"),
    ]
    for split, names in s["output_files"].items():
        lines.append(f"  {split}: " + ", ".join(filesystem.join(output, n) for n in names))
    lines.append(f"  {filesystem.join(output, 'stats.json')}, "
                 f"{filesystem.join(output, 'feature_spec.json')}")
    return "\n".join(lines)


def _count_pieces(args: argparse.Namespace) -> int | None:
    """Input pieces the job will parse (the progress total); None when they cannot be listed."""
    try:
        opts = options_from_args(args)
        return sum(len(plan_pieces(path, opts, args.input_split_bytes))
                   for _, path, _ in list_input_files(args.input, opts))
    except Exception:  # noqa: BLE001 - the total is cosmetic; run() reports real problems
        return None


def _record_success(rec: SummaryRecorder, output: str, report: str | None = None) -> None:
    """Counts and outputs of a finished run, from its stats.json."""
    s = json.loads(filesystem.read_text(filesystem.join(output, STATS_FILENAME)))
    inp, ev = s["input"], s.get("events", {})
    counts: dict[str, int | str] = {
        "lists": s["lists"], "documents": s["documents"], "queries": s["queries"],
        "input_files": inp.get("files", 0), "input_lines": inp.get("lines", 0),
        "lines_rejected": inp.get("lines_rejected", 0)}
    by_reason = inp.get("rejected_by_reason", {})
    if by_reason:  # "label_negative 2, value_out_of_range 1"; the dict is in details
        counts["rejected_by_reason"] = format_code_counts(by_reason)
    for split, v in s["splits"].items():
        counts[f"{split}_lists"] = v["lists"]
        counts[f"{split}_documents"] = v["documents"]
    for event in ("queries_split", "queries_truncated", "queries_sampled",
                  "lists_dropped_too_small", "lists_dropped_no_positive"):
        counts[event] = ev.get(event, 0)
    outputs: dict[str, str] = {}
    for split, names in s["output_files"].items():
        paths = [filesystem.join(output, n) for n in names]
        outputs[split] = (", ".join(paths) if len(paths) <= 2
                          else f"{paths[0]} ... {paths[-1]} ({len(paths)} files)")
    outputs["stats"] = filesystem.join(output, STATS_FILENAME)
    outputs["feature_spec"] = filesystem.join(output, "feature_spec.json")
    if inp.get("lines_rejected", 0):  # no line rejected: no rejected/ shard was written
        outputs["rejected"] = filesystem.join(output, "rejected") + "/"
    if report:
        outputs["report"] = report
    details: dict = {"output_files": {k: [filesystem.join(output, n) for n in v]
                                      for k, v in s["output_files"].items()},
                     "rejected_by_reason": by_reason}
    spec = json.loads(filesystem.read_text(filesystem.join(output, "feature_spec.json")))
    encoded = spec.get("encoded") if isinstance(spec, dict) else None
    if isinstance(encoded, dict):  # --artifacts: which features hold ids / values
        names = [f.get("name") for f in encoded.get("features", []) if isinstance(f, dict)]
        counts["encoded_features"] = len(names)
        details["encoded"] = {"artifacts_fingerprint": encoded.get("artifacts_fingerprint"),
                              "features": names}
    rec.succeed(counts=counts, outputs=outputs, details=details)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``beam-prep make-elwc``); returns the exit code.

    Shows progress (input pieces parsed / total, lines/s, ETA; see :mod:`beam_prep.progress`)
    on stderr unless ``--quiet``, then the run summary; ``--summary_json`` in every case.
    """
    args, beam_args = parse_job_args(build_parser(), argv)
    hide_tracebacks_of_our_errors()
    quiet_beam_worker_notices()
    dry_run = is_dry_run(beam_args)
    show = not args.quiet and not dry_run
    with SummaryRecorder("make-elwc", json_path=args.summary_json, quiet=args.quiet) as rec:
        with ProgressMonitor("beam-prep make-elwc", unit="pieces", rows_name="lines",
                             total=_count_pieces(args) if show else None, enabled=show):
            run(argv)
        if dry_run:
            rec.dry_run()
            return 0
        if template_location(beam_args):  # the job runs later; its last step commits
            rec.succeed(outputs={"template": template_location(beam_args) or ""},
                        details={"state": "template written, the job not run here",
                                 "output": args.output})
            return 0
        report = None if args.no_report else write_job_report("make-elwc", args.output)
        _record_success(rec, args.output, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
