"""The command line of ``beam-prep analyze`` (Beam-free, so that ``--help`` starts fast).

:mod:`beam_prep.pipelines.analyze` runs the job with this parser; ``beam-prep analyze --help``
imports only this module.

Example:
    >>> build_parser().parse_args(["--spec", "s.yaml", "--input", "d.csv", "--output", "o"]).spec
    's.yaml'
"""

from __future__ import annotations

from beam_prep.pipelines.job_parser import JobParser
from beam_prep.pipelines.job_report import add_report_flag

from beam_prep.run_summary import add_summary_flag

# The input formats of beam_prep.io.inputs.readers.FORMATS, written out here because importing the
# readers loads Apache Beam (tests/cli/test_cli_startup.py checks the two agree).
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet", "tfrecord")


def build_parser() -> JobParser:
    """The job's own flags (Beam's are passed through)."""
    p = JobParser(
        prog="beam-prep analyze",
        description=(
            "Analyze a dataset with Apache Beam and write an artifact directory: "
            "vocab/<feature>.txt files that keras.layers.StringLookup/IntegerLookup/"
            "TextVectorization read, counts sidecars, and manifest.json (written last) with "
            "mean/variance/min/max/quantile boundaries. Any flag not listed here is passed "
            "to Beam (e.g. --runner=DataflowRunner, --direct_running_mode=multi_processing "
            "--direct_num_workers=2)."),
        epilog="Example: beam-prep analyze --spec spec.yaml --input 'data/*.csv' "
               "--output artifacts/",
    )
    p.add_argument("--spec", required=True, help="Feature spec YAML (see README: Feature spec).")
    p.add_argument("--input", required=True, action="append",
                   help="Input file glob on any Beam filesystem (local, gs://). Repeatable.")
    p.add_argument("--output", required=True, help="Artifact directory to create.")
    p.add_argument("--input_format", choices=FORMATS, default=None,
                   help="Input format; default: from the file extension "
                        "(.csv, .jsonl/.json, .parquet, .tfrecord[.gz]).")
    p.add_argument("--overwrite", action="store_true",
                   help="Replace a finished artifact directory (one holding manifest.json); "
                        "only manifest.json, vocab/, rejected/ and _tmp/ are replaced, after "
                        "the new output is complete. A non-empty folder without a manifest "
                        "is always refused.")
    p.add_argument("--force_unlock", action="store_true",
                   help="Break the <output>/_LOCK of a run that died (refused while the "
                        "holder process is alive on this host).")
    p.add_argument("--max_bad_fraction", type=float, default=0.01,
                   help="Fail when more than this fraction of rows cannot be read "
                        "(default 0.01). Bad rows always go to <output>/rejected/.")
    p.add_argument("--skip_corrupt_tail", action="store_true",
                   help="TFRecord: when the rest of a file cannot be framed (corrupt length "
                        "prefix, truncated file or gzip stream), skip it as one rejected row "
                        "(counted against --max_bad_fraction, listed in the manifest's "
                        "input.skipped_tails) instead of failing.")
    p.add_argument("--batch_size", type=int, default=65536,
                   help="Rows per Arrow batch (default 65536). Parquet is read a whole row "
                        "group per batch when the group is larger (up to 1,048,576 rows).")
    p.add_argument("--vocab_partitions", type=int, default=None,
                   help="Hash partitions per vocabulary: parallelism of the count merge and "
                        "the memory of one partition. Default: chosen from the total input "
                        "size, one per 16 MiB, between 16 and 1024. Artifacts are the same "
                        "bytes for every count.")
    p.add_argument("--parquet_rows_per_split", type=int, default=1 << 20,
                   help="Rows per Parquet read split (row groups are never cut; "
                        "default 1048576).")
    p.add_argument("--input_split_bytes", type=int, default=64 << 20,
                   help="Uncompressed CSV/JSONL files larger than this are read in parallel as "
                        "record-aligned byte ranges of about this size (default 67108864; 0 = "
                        "one file, one work item). Gzip files, TFRecord files and CSV files "
                        "with a newline inside a quoted field are read whole.")
    p.add_argument("--csv_delimiter", default=",", help="CSV field delimiter (default ',').")
    p.add_argument("--cache_dir", default=None,
                   help="Analysis cache folder (local or gs://): each input split's counts, "
                        "moments and sketches are stored there, keyed by the file's content "
                        "identity and the spec fields that change them; the next run reads "
                        "only the splits not cached (e.g. the new day of a rolling window). "
                        "Artifacts are byte-identical to a run without it. Prune with "
                        "`beam-prep cache prune` (docs/artifacts.md: Analysis cache).")
    p.add_argument("--spill_rows", type=int, default=8192,
                   help="A split's vocabulary table of at least this many rows is passed "
                        "between steps as Arrow files under <output>/_tmp (removed at the "
                        "end) instead of through the shuffle (default 8192: on the local "
                        "runners this halves memory and time at 20M rows; on a runner with "
                        "a shuffle service and a slow object store, raise it).")
    p.add_argument("--split_threads", type=int, default=2,
                   help="Threads per split: the features of a batch are processed in "
                        "parallel (Arrow and numpy release the GIL). Results do not depend "
                        "on it. Default 2; 1 turns the pool off (e.g. when every core "
                        "already runs a worker process).")
    add_report_flag(p)
    p.add_argument("--quiet", action="store_true",
                   help="Do not show progress or print the summary.")
    add_summary_flag(p)
    return p
