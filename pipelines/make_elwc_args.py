"""The command line of ``beam-prep make-elwc`` (Beam-free, so that ``--help`` starts fast).

:mod:`beam_prep.pipelines.make_elwc` runs the job with this parser; ``beam-prep make-elwc
--help`` imports only this module.

Example:
    >>> build_parser().parse_args(["--input", "r.txt", "--output", "o"]).input_format
    'letor'
"""

from __future__ import annotations

from beam_prep.pipelines.job_parser import JobParser
from beam_prep.pipelines.job_report import add_report_flag

from beam_prep.ranking.data.options import COMPRESSIONS, INPUT_FORMATS, LIST_POLICIES
from beam_prep.run_summary import add_summary_flag

# beam_prep.ranking.data.transforms.DEFAULT_SPLIT_BYTES, written out here because importing the
# transforms loads Apache Beam (tests/cli/test_cli_startup.py checks the two agree).
DEFAULT_SPLIT_BYTES = 4 << 20


def build_parser() -> JobParser:
    """The job's own flags (Beam's are passed through)."""
    p = JobParser(
        prog="beam-prep make-elwc",
        description="Convert ranking logs into sharded TFRecord files of serialized "
                    "tensorflow.serving.ExampleListWithContext, plus stats.json, "
                    "feature_spec.json and rejected/rejected-*.jsonl. Unknown flags go to Beam "
                    "(e.g. --runner, --direct_running_mode=multi_processing, "
                    "--direct_num_workers=2).")
    g = p.add_argument_group("input")
    g.add_argument("--input", action="append", required=True,
                   help="Glob of input files on any Beam filesystem; repeat for several globs.")
    g.add_argument("--input_format", choices=INPUT_FORMATS, default="letor",
                   help="letor: 'label qid:Q id:value ... # comment' lines. lightgbm: same "
                        "without qid:, group sizes in '<file>.query' beside each file. csv, "
                        "jsonl, parquet: one document per row. Default: letor.")
    g.add_argument("--query_id_column", default="qid",
                   help="Tabular inputs: column holding the query id. Default: qid.")
    g.add_argument("--label_column", default="label",
                   help="Tabular inputs: column holding the label. Default: label.")
    g.add_argument("--context_columns", default="",
                   help="Tabular inputs: comma-separated query-level columns written as context "
                        "features (value of the query's first row). Default: none.")
    g.add_argument("--example_columns", default=None,
                   help="Tabular inputs: comma-separated document-level columns written as "
                        "example features. Default: every other column.")
    g.add_argument("--input_split_bytes", type=int, default=DEFAULT_SPLIT_BYTES,
                   help="LETOR: uncompressed files are parsed in pieces of at most this many "
                        "bytes, cut at line starts, so several workers share a large file (0: "
                        f"whole files). The output does not depend on it. Default: "
                        f"{DEFAULT_SPLIT_BYTES}.")
    g.add_argument("--max_bad_fraction", type=float, default=0.01,
                   help="Fail (write no shard) when rejected lines / lines exceeds this. "
                        "Default: 0.01.")
    f = p.add_argument_group("features and labels")
    f.add_argument("--label_name", default="relevance",
                   help="Feature key of the label in every example. Default: relevance.")
    f.add_argument("--label_dtype", choices=("float", "int64"), default="float",
                   help="Store labels as float or int64. Default: float.")
    f.add_argument("--feature_name_format", default="f{id}",
                   help="LETOR: name of feature id N, a pattern with {id}. Default: f{id}.")
    f.add_argument("--feature_names_file", default=None,
                   help="LETOR: file of '<id> <name>' lines overriding --feature_name_format.")
    f.add_argument("--num_features", type=int, default=None,
                   help="LETOR: write ids 1..N (lines with other ids are rejected). Default: "
                        "every id seen in the input. Set it when converting train and test "
                        "separately so both get the same features.")
    f.add_argument("--missing_value", type=float, default=0.0,
                   help="LETOR: value written for absent ids and declared as the feature "
                        "default. Default: 0.0.")
    f.add_argument("--query_id_feature", default=None,
                   help="Also write the query id as a string context feature of this name. "
                        "Default: not written.")
    f.add_argument("--artifacts", default=None,
                   help="Artifact directory written by `beam-prep analyze`: the features its "
                        "layers cover (same name; not derived or crossed) are written encoded "
                        "as the generated Keras layers output them (int64 ids, float "
                        "normalised values), so training hosts do no lookups; "
                        "feature_spec.json records the artifacts' fingerprint and the raw "
                        "features. Rows a lookup with num_oov_indices: 0 cannot encode are "
                        "rejected. Default: raw features.")
    ls = p.add_argument_group("lists")
    ls.add_argument("--max_list_size", type=int, default=None,
                    help="Longest list written. Default: no limit.")
    ls.add_argument("--list_policy", choices=LIST_POLICIES, default="split",
                    help="Longer lists: split into balanced consecutive parts (no document "
                         "lost), truncate (keep the first documents) or sample (seeded, kept in "
                         "input order). Default: split.")
    ls.add_argument("--min_list_size", type=int, default=1,
                    help="Drop lists shorter than this (after splitting). Default: 1.")
    ls.add_argument("--drop_no_positive", action="store_true",
                    help="Drop lists whose labels are all <= 0. Default: keep them.")
    ls.add_argument("--seed", type=int, default=0,
                    help="Seed of --list_policy=sample. Default: 0.")
    o = p.add_argument_group("output")
    o.add_argument("--output", required=True, help="Output directory (any Beam filesystem).")
    o.add_argument("--splits", default="train",
                   help="'train' (everything) or 'name:fraction,...', e.g. "
                        "train:0.8,validation:0.1,test:0.1; queries are assigned by a hash of "
                        "their id. Default: train.")
    o.add_argument("--split_seed", default="beam_prep",
                   help="Salt of the split hash. Default: beam_prep.")
    o.add_argument("--num_shards", type=int, default=None,
                   help="TFRecord files per split (and rejected-line files); a shard is built "
                        "in memory by one worker. Default: one per 128 MiB of input "
                        "(gzip/zstd files counted 5x, bz2/xz 9x), between 1 and 1024.")
    o.add_argument("--compression", choices=COMPRESSIONS, default="none",
                   help="none or gzip (files end in .tfrecord.gz). Default: none.")
    o.add_argument("--overwrite", action="store_true",
                   help="Replace a finished make-elwc output (a folder holding stats.json and "
                        "feature_spec.json, or the stats.json and rejected/ of a failed run): "
                        "only our shards, stats.json, feature_spec.json and rejected/ are "
                        "replaced, after the new output is complete. Any other non-empty "
                        "folder is always refused. Default: refuse.")
    o.add_argument("--force_unlock", action="store_true",
                   help="Break the <output>/_LOCK of a run that died (refused while the "
                        "holder process is alive on this host).")
    add_report_flag(o)
    o.add_argument("--quiet", action="store_true",
                   help="Do not show progress or print the summary.")
    add_summary_flag(o)
    return p
