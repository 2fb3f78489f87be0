"""The input splits of a dataset-reading job (`analyze`, `transform`), one rule for both.

A job reads every file matched by ``--input`` in splits: runs of row groups of about
``--parquet_rows_per_split`` rows for Parquet, record-aligned byte ranges of about
``--input_split_bytes`` for large uncompressed CSV/JSONL, else whole files. The same list is the
job's work and its progress total, so the two cannot disagree (a total that ignored
``--input_split_bytes`` once showed "15/1 splits").
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from beam_prep.io.inputs.readers import Split, expand_patterns, infer_common_format, list_splits


def job_splits(files: Sequence[str], fmt: str, args: argparse.Namespace) -> list[Split]:
    """Every split of ``files``, in file order, as the job's flags cut them.

    Args:
        files: The expanded input files.
        fmt: Their format (``csv``, ``jsonl``, ``parquet``, ``tfrecord``).
        args: The job's parsed flags (``parquet_rows_per_split``, ``input_split_bytes``).
    """
    return [s for f in files for s in list_splits(
        f, fmt, parquet_rows_per_split=args.parquet_rows_per_split,
        split_bytes=args.input_split_bytes)]


def count_job_splits(args: argparse.Namespace) -> int | None:
    """The progress total of a job over ``args.input``; None when the splits cannot be listed
    (the job itself then reports why, in one line)."""
    try:
        files = expand_patterns(args.input)
        return len(job_splits(files, args.input_format or infer_common_format(files), args))
    except Exception:  # noqa: BLE001 - the total is cosmetic; the job reports real problems
        return None
