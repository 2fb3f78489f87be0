"""``beam-prep diff OLD NEW``: drift between two artifact directories.

Exit codes: 0 = compared (flags or not, without ``--fail_on_drift``); 1 = error (bad
directory, different specs without ``--allow_spec_change``; printed by ``beam-prep``);
2 = bad command line; 3 = ``--fail_on_drift`` and at least one flag raised.

Example:
    $ beam-prep diff artifacts/2024-05-01 artifacts/2024-05-02 --fail_on_drift --max_jsd 0.1
    $ beam-prep diff old/ new/ --json > drift.json
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

from beam_prep.config.cli_flags import parse_suggesting
from beam_prep.diff.thresholds import INT_FIELDS, DiffThresholds

DRIFT_EXIT_CODE = 3

_HELP = {
    "max_jsd": "Jensen-Shannon divergence (base 2) of a vocabulary's token distribution",
    "max_oov_share": "share of NEW's values whose token is OOV under OLD's vocabulary (also: "
                     "per_key keys and target-encoding tokens added, or removed, by rows)",
    "max_size_change": "relative vocabulary (or per_key key count) size change |new-old|/old",
    "max_top_k_index_changed": "share of OLD's top-K tokens whose index changed",
    "max_mean_shift": "numeric mean shift (also: a per_key key's mean), in OLD standard "
                      "deviations",
    "max_std_shift": "numeric standard deviation shift, in OLD standard deviations (also: "
                     "a per_key key's std, in its own OLD std)",
    "max_boundary_shift": "largest quantile boundary shift, in OLD standard deviations (also: "
                          "a per_key key's min/max or bucket boundaries, in its OLD range)",
    "max_rate_change": "absolute change of the missing, NaN or infinite rate",
    "max_target_shift": "target encoding global mean shift, in OLD's estimated label std",
    "max_token_shift": "a frequent token's target encoding shift, in OLD's estimated label "
                       "std",
    "max_shifted_share": "share of frequent per_key keys' / target-encoding tokens' OLD rows "
                         "whose mean, std, range or boundaries / encoding shifted",
    "min_shift_rows": "rows a key or token needs on both sides to count as frequent",
    "top_k": "OLD's first tokens looked at by the top-K index stability",
    "top_n": "added / dropped tokens listed per feature",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``beam-prep diff``."""
    p = argparse.ArgumentParser(
        prog="beam-prep diff",
        description="Compare two artifact directories of `beam-prep analyze` feature by "
                    "feature (vocabularies from the count sidecars, numeric statistics from "
                    "the manifests) and flag drift beyond thresholds.")
    p.add_argument("old", metavar="OLD", help="reference artifact directory (local or gs://)")
    p.add_argument("new", metavar="NEW", help="artifact directory to check against OLD")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--fail_on_drift", action="store_true",
                   help=f"exit with code {DRIFT_EXIT_CODE} when any flag is raised")
    p.add_argument("--allow_spec_change", action="store_true",
                   help="compare even when the specs differ (shared features only)")
    p.add_argument("--verify", action="store_true",
                   help="re-hash every file against its manifest before comparing (the files "
                        "the diff reads are checked while read in any case)")
    defaults = DiffThresholds()
    for f in dataclasses.fields(DiffThresholds):
        kind = int if f.name in INT_FIELDS else float
        p.add_argument(f"--{f.name}", type=kind, default=getattr(defaults, f.name),
                       metavar="N" if kind is int else "X",
                       help=f"{_HELP[f.name]} (default: %(default)s)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code."""
    args = parse_suggesting(build_parser(), argv)
    from beam_prep.diff.compare import diff_artifacts
    from beam_prep.diff.render import render_json, render_table

    thresholds = DiffThresholds(**{f.name: getattr(args, f.name)
                                   for f in dataclasses.fields(DiffThresholds)})
    report = diff_artifacts(args.old, args.new, thresholds=thresholds,
                            allow_spec_change=args.allow_spec_change, verify=args.verify)
    print(render_json(report) if args.json else render_table(report), end="")
    return DRIFT_EXIT_CODE if args.fail_on_drift and report.flags else 0
