"""The command line of ``beam-prep transform`` (Beam-free, so that ``--help`` starts fast).

:mod:`beam_prep.pipelines.transform` runs the job with this parser; ``beam-prep transform
--help`` imports only this module.

Example:
    >>> build_parser().parse_args(["--artifacts", "a", "--input", "d.csv",
    ...                            "--output", "o"]).output_format
    'tfrecord'
"""

from __future__ import annotations

from beam_prep.pipelines.analyze_args import FORMATS
from beam_prep.pipelines.job_parser import JobParser

from beam_prep.run_summary import add_summary_flag

#: beam_prep.transform.job.OUTPUT_FORMATS, written out here (importing the job loads Beam).
OUTPUT_FORMATS: tuple[str, ...] = ("tfrecord", "parquet")


def build_parser() -> JobParser:
    """The job's own flags (Beam's are passed through)."""
    p = JobParser(
        prog="beam-prep transform",
        description=(
            "Materialize a dataset with the encoded features (TF Transform's "
            "TransformDataset): every row goes through exactly what the generated Keras "
            "layers of --artifacts compute (lookups with OOV slots and masks, text "
            "vectorization incl. n-grams and tf-idf, normalization, min-max, buckets, "
            "hashing, crosses, one-hot/multi-hot/count, list features, derived features, "
            "missing-value fill), computed with Arrow and numpy inside Apache Beam. Writes "
            "<output>/data/part-SSSSS-of-NNNNN.tfrecord (tf.train.Example, one shard per "
            "input split; int outputs as int64_list, float outputs as float_list) or "
            ".parquet, rejected rows under <output>/rejected/, and transform.json (written "
            "last: counts, output keys/dtypes/widths, shard checksums). Output bytes are "
            "the same on every runner. Any flag not listed here is passed to Beam "
            "(e.g. --runner=DataflowRunner, --direct_running_mode=multi_processing "
            "--direct_num_workers=2)."),
        epilog="Example: beam-prep transform --artifacts artifacts/ --input 'data/*.csv' "
               "--output encoded/",
    )
    p.add_argument("--artifacts", required=True,
                   help="Artifact directory written by `beam-prep analyze`.")
    p.add_argument("--input", required=True, action="append",
                   help="Input file glob on any Beam filesystem (local, gs://). Repeatable.")
    p.add_argument("--output", required=True, help="Output folder to create.")
    p.add_argument("--input_format", choices=FORMATS, default=None,
                   help="Input format; default: from the file extension.")
    p.add_argument("--output_format", choices=OUTPUT_FORMATS, default="tfrecord",
                   help="tfrecord (tf.train.Example, default) or parquet (one column per "
                        "encoded output: a scalar for width 1, else a list).")
    p.add_argument("--overwrite", action="store_true",
                   help="Replace a finished transform output (one holding transform.json); "
                        "only transform.json, data/ and rejected/ are replaced.")
    p.add_argument("--force_unlock", action="store_true",
                   help="Break the <output>/_LOCK of a run that died.")
    p.add_argument("--max_bad_fraction", type=float, default=0.01,
                   help="Fail when more than this fraction of rows cannot be read or encoded "
                        "(default 0.01). Bad rows always go to <output>/rejected/.")
    p.add_argument("--batch_size", type=int, default=65536,
                   help="Rows per Arrow batch (default 65536).")
    p.add_argument("--parquet_rows_per_split", type=int, default=1 << 20,
                   help="Rows per Parquet read split (default 1048576); one shard per split.")
    p.add_argument("--input_split_bytes", type=int, default=64 << 20,
                   help="Uncompressed CSV/JSONL files larger than this are read as "
                        "record-aligned byte ranges of about this size, one shard each "
                        "(default 67108864; 0 = one shard per file).")
    p.add_argument("--csv_delimiter", default=",", help="CSV field delimiter (default ',').")
    p.add_argument("--skip_corrupt_tail", action="store_true",
                   help="TFRecord input: skip the unframeable rest of a file as one rejected "
                        "row instead of failing.")
    p.add_argument("--out_of_fold", action="store_true",
                   help="Target-encoded features (`target_encoding:` in the spec): each row's "
                        "<name>_target_encoding uses only the other folds' statistics (its "
                        "fold from its fold_column), so training rows never see their own "
                        "label. Default: the serving value the generated layers compute.")
    p.add_argument("--quiet", action="store_true",
                   help="Do not show progress or print the summary.")
    add_summary_flag(p)
    return p
