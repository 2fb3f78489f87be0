"""The transform (materialize) job as Beam transforms: splits in, encoded shards out.

Graph (every step labelled)::

    Splits ─ TransformSplits ─┬─ main ─ SumCounts ───────────────────────────┐
      (index, split)          └─ rejected ─ WriteRejected (as analyze) ───────┤
                                                      WriteTransformManifest ◄┘

``TransformSplits`` reads one split in Arrow batches (:mod:`beam_prep.io.inputs.readers`),
encodes each batch with :class:`~beam_prep.transform.layers.BatchEncoder` and appends it to
the split's own shard ``data/part-SSSSS-of-NNNNN.tfrecord`` (or ``.parquet``), numbered by the
split's place in the sorted split list: file names and bytes depend only on the input, the
artifacts and the flags, never on the runner or the worker count. Rows that cannot be read,
and rows a lookup without OOV slots cannot encode (``out_of_vocabulary``), are counted and
set aside as the analysis does (``rejected/``). ``transform.json`` is written last (or
``_failed.json`` when too many rows were rejected; see
:func:`beam_prep.analyzers.pipeline.raise_if_failed`).

Example:
    >>> with beam.Pipeline() as p:                                  # doctest: +SKIP
    ...     _ = p | TransformDataset("artifacts/", splits, "out/_staging-x")
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import apache_beam as beam
import numpy as np
import pyarrow as pa

from beam_prep import progress
from beam_prep.analyzers import spill
from beam_prep.analyzers.pipeline import FAILED_REPORT, wrote_failed_report
from beam_prep.analyzers.rejected import SHARD_GLOB, WriteRejected
from beam_prep.io import filesystem as fs
from beam_prep.io.commit import output
from beam_prep.io.contract import artifacts as layout
from beam_prep.io.inputs.formats import RejectedRow
from beam_prep.io.inputs.readers import Split, read_split
from beam_prep.io.inputs.scalar_rows import scalar_rows
from beam_prep.transform import hashing
from beam_prep.transform.examples import serialize_examples
from beam_prep.transform.layers import BatchEncoder, Encoded, OutOfVocabulary
from beam_prep.transform.values import list_columns

OutputFormat = Literal["tfrecord", "parquet"]
OUTPUT_FORMATS: tuple[str, ...] = ("tfrecord", "parquet")
MANIFEST = "transform.json"
DATA_DIR = "data"
REJECTED = "rejected"
FORMAT_VERSION = 1
_LOG = logging.getLogger("beam_prep.transform")


def shard_relpath(index: int, total: int, fmt: str) -> str:
    """``data/part-SSSSS-of-NNNNN.<ext>`` of split ``index`` of ``total``.

    Example:
        >>> shard_relpath(3, 12, "tfrecord")
        'data/part-00003-of-00012.tfrecord'
    """
    return f"{DATA_DIR}/part-{index:05d}-of-{total:05d}.{fmt}"


def parquet_table(outputs: Sequence[tuple[str, Encoded]], n: int) -> pa.Table:
    """Encoded outputs as Arrow columns: width 1 -> a scalar, else a list per row."""
    columns = {}
    for key, enc in outputs:
        typ = pa.float32() if enc.dtype == "float32" else pa.int64()
        if enc.row_splits is not None:
            columns[key] = pa.LargeListArray.from_arrays(
                pa.array(enc.row_splits, pa.int64()), pa.array(enc.values, typ))
        elif enc.values.shape[1] == 1:
            columns[key] = pa.array(enc.values[:, 0], typ)
        else:
            width = enc.values.shape[1]
            columns[key] = pa.LargeListArray.from_arrays(
                pa.array(np.arange(n + 1, dtype=np.int64) * width, pa.int64()),
                pa.array(enc.values.reshape(-1), typ))
    return pa.table(columns)


class _Shard:
    """One split's output file, written batch by batch; sha256 and size kept."""

    def __init__(self, path: str, fmt: str) -> None:
        self._out = fs.HashingWriter.create(path)
        self._fmt = fmt
        self._parquet: Any = None

    def write(self, outputs: Sequence[tuple[str, Encoded]], n: int) -> None:
        if self._fmt == "tfrecord":
            data, offsets = serialize_examples(outputs, n)
            self._out.write(hashing.frame_records(data, offsets))
            return
        import pyarrow.parquet as pq

        table = parquet_table(outputs, n)
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(self._out, table.schema)
        self._parquet.write_table(table)

    def close(self) -> tuple[str, int]:
        if self._parquet is not None:
            self._parquet.close()
        return self._out.close()


def _reject_oov(batch: pa.RecordBatch, error: OutOfVocabulary, split: Split
                ) -> tuple[pa.RecordBatch, list[RejectedRow]]:
    keep = np.ones(batch.num_rows, bool)
    keep[error.rows] = False
    rows = batch.filter(pa.array(~keep)).to_pylist()
    import json

    bad = [RejectedRow(split.path, None, "out_of_vocabulary",
                       f"feature {error.feature!r}: value outside the vocabulary and "
                       "num_oov_indices=0", json.dumps(r, default=str)[:2000]) for r in rows]
    return batch.filter(pa.array(keep)), bad


class TransformSplitFn(beam.DoFn):
    """Encodes one ``(index, split)`` into its shard; yields its counts, tags rejected rows."""

    def __init__(self, artifacts: str, staging: str, total: int, *, fmt: str = "tfrecord",
                 batch_size: int = 65536, csv_delimiter: str = ",",
                 skip_corrupt_tail: bool = False, out_of_fold: bool = False) -> None:
        self._artifacts = artifacts
        self._staging = staging
        self._total = total
        self._out_of_fold = out_of_fold
        self._fmt = fmt
        self._batch_size = batch_size
        self._delimiter = csv_delimiter
        self._skip_tail = skip_corrupt_tail
        self._rows = beam.metrics.Metrics.counter("beam_prep", "rows_transformed")

    def setup(self) -> None:
        self._encoder = BatchEncoder(self._artifacts, verify=False,
                                     out_of_fold=self._out_of_fold)
        self._lists = list_columns(self._encoder.plan.features)

    def process(self, item: tuple[int, Split]) -> Iterator[Any]:
        index, split = item
        started = time.monotonic()
        rel = shard_relpath(index, self._total, self._fmt)
        shard = _Shard(fs.join(self._staging, rel), self._fmt)
        meta = {"rows_read": 0, "rows_rejected": 0, "rows_written": 0,
                "rejected_by_reason": {}}
        for result in read_split(split, self._encoder.columns, batch_size=self._batch_size,
                                 csv_delimiter=self._delimiter,
                                 skip_corrupt_tail=self._skip_tail, strict_columns=True,
                                 list_columns=self._lists):
            rejected = list(result.rejected)
            batch, bad = scalar_rows(result.batch, self._lists, split.path)
            rejected.extend(bad)
            while True:
                try:
                    encoded = self._encoder.encode(batch)
                    break
                except OutOfVocabulary as e:
                    batch, bad = _reject_oov(batch, e, split)
                    rejected.extend(bad)
            meta["rows_read"] += result.rows_seen
            meta["rows_rejected"] += len(rejected)
            meta["rows_written"] += batch.num_rows
            for r in rejected:
                reasons = meta["rejected_by_reason"]
                reasons[r.reason] = reasons.get(r.reason, 0) + 1
                key = f"{r.source}\x00{(r.row if r.row is not None else -1):020d}"
                yield beam.pvalue.TaggedOutput(REJECTED, (key, r.to_json()))
            if batch.num_rows:
                shard.write([(k, encoded[k]) for k, _ in self._encoder.outputs], batch.num_rows)
            self._rows.inc(batch.num_rows)
        sha256, size = shard.close()
        meta["files"] = [{"path": rel, "rows": meta["rows_written"], "sha256": sha256,
                          "bytes": size}]
        progress.record_unit(split.split_id, rows=meta["rows_read"],
                             rejected=meta["rows_rejected"])
        _LOG.info("transformed %s: %d rows in %.1fs", split.split_id, meta["rows_read"],
                  time.monotonic() - started)
        yield meta


def _sum_meta(metas: Iterable[dict]) -> dict:
    out: dict = {"rows_read": 0, "rows_rejected": 0, "rows_written": 0,
                 "rejected_by_reason": {}, "files": []}
    for m in metas:
        for k in ("rows_read", "rows_rejected", "rows_written"):
            out[k] += m[k]
        for k, v in m["rejected_by_reason"].items():
            out["rejected_by_reason"][k] = out["rejected_by_reason"].get(k, 0) + v
        out["files"].extend(m["files"])
    out["files"].sort(key=lambda f: f["path"])
    out["rejected_by_reason"] = dict(sorted(out["rejected_by_reason"].items()))
    return out


class _WriteManifest(beam.DoFn):
    def __init__(self, staging: str, info: dict, max_bad_fraction: float) -> None:
        self._out = staging
        self._info = info
        self._max_bad = max_bad_fraction

    def process(self, _unused: Any, meta: dict, rejected: list) -> Iterator[dict]:
        output.delete_tree(spill.tmp_dir(self._out))
        if wrote_failed_report(self._out, meta, self._info["input"]["patterns"],
                               self._max_bad, rejected):
            return
        manifest = dict(self._info)
        manifest["counts"] = {k: meta[k] for k in ("rows_read", "rows_rejected",
                                                   "rows_written", "rejected_by_reason")}
        manifest["files"] = meta["files"]
        manifest["rejected_files"] = rejected
        fs.write_bytes(fs.join(self._out, MANIFEST), layout.canonical_json(manifest))
        yield manifest


def manifest_info(encoder: BatchEncoder, fmt: str, patterns: Sequence[str], input_format: str,
                  artifacts: str) -> dict:
    """The part of ``transform.json`` known before the run: artifacts, outputs, input."""
    specs = []
    for o in encoder.plan.outputs():
        specs.append({"key": o.key, "dtype": "float32" if o.dtype == "float32" else "int64",
                      "width": o.width, "ragged": o.width is None})
    return {"format_version": FORMAT_VERSION, "job": "transform",
            "artifacts": {"path": artifacts, "fingerprint": encoder.plan.fingerprint},
            "output_format": fmt, "outputs": specs,
            "input": {"patterns": list(patterns), "format": input_format}}


class TransformDataset(beam.PTransform):
    """Encodes every split with the artifacts' layers and writes shards + ``transform.json``.

    Args:
        artifacts: Artifact directory (written by ``beam-prep analyze``).
        splits: The input splits, in their canonical (sorted) order: shard ``i`` is split
            ``i``.
        staging: Output folder (the job passes its staging folder).
        info: :func:`manifest_info` of the run.
        fmt: ``tfrecord`` (tf.Example) or ``parquet``.
        batch_size: Rows per Arrow batch.
        max_bad_fraction: Fail when more than this fraction of rows is rejected.
        csv_delimiter: CSV field delimiter.
        skip_corrupt_tail: TFRecord input: an unframeable file tail is one rejected row.
        out_of_fold: Target encodings out of fold (``--out_of_fold``, docs/transform.md).

    Returns:
        A PCollection with the manifest dict (one element; none when the run failed).
    """

    def __init__(self, artifacts: str, splits: Sequence[Split], staging: str, info: dict, *,
                 fmt: str = "tfrecord", batch_size: int = 65536,
                 max_bad_fraction: float = 0.01, csv_delimiter: str = ",",
                 skip_corrupt_tail: bool = False, out_of_fold: bool = False) -> None:
        super().__init__()
        self._out_of_fold = out_of_fold
        self._artifacts = artifacts
        self._splits = list(splits)
        self._staging = staging
        self._info = info
        self._fmt = fmt
        self._batch_size = batch_size
        self._max_bad = max_bad_fraction
        self._delimiter = csv_delimiter
        self._skip_tail = skip_corrupt_tail

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        p = pbegin.pipeline
        fn = TransformSplitFn(self._artifacts, self._staging, len(self._splits),
                              fmt=self._fmt, batch_size=self._batch_size,
                              csv_delimiter=self._delimiter,
                              skip_corrupt_tail=self._skip_tail,
                              out_of_fold=self._out_of_fold)
        outputs = (pbegin
                   | "Splits" >> beam.Create(list(enumerate(self._splits)), reshuffle=False)
                   | "SpreadSplits" >> beam.Reshuffle()
                   | "TransformSplits" >> beam.ParDo(fn).with_outputs(REJECTED, main="meta"))
        meta = outputs.meta | "SumCounts" >> beam.CombineGlobally(_sum_meta)
        rejected = outputs[REJECTED] | "WriteRejected" >> WriteRejected(
            self._staging, spill.tmp_dir(self._staging))
        return (p
                | "ManifestTrigger" >> beam.Create([None])
                | "WriteTransformManifest" >> beam.ParDo(
                    _WriteManifest(self._staging, self._info, self._max_bad),
                    meta=beam.pvalue.AsSingleton(meta),
                    rejected=beam.pvalue.AsSingleton(rejected)))


TRANSFORM_OUTPUT = output.OutputPolicy(
    job="transform", signatures=((MANIFEST,),),
    owned=(MANIFEST, f"{DATA_DIR}/**", SHARD_GLOB, layout.REJECTED_FILE,
           f"{spill.TMP_DIR}/**", FAILED_REPORT),
    last=MANIFEST)
"""The transform job's output folder: ``transform.json`` (last), ``data/`` shards,
``rejected/`` shards; only these are ever replaced (``--overwrite``)."""
