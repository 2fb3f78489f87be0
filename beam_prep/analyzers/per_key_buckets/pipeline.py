"""Per-key bucket boundaries in the analysis (``per_key`` + ``num_buckets``): combine, write.

Graph (labels as in the pipeline)::

    AnalyzeSplits ─ per_key_buckets ((feature, partition), KeyHist)
        ─ CombineKeyHists (CombinePerKey: exact merge, any order)
        ─ BucketLines (each partition's keys, one JSON line per key)
        ─ WithEmptyBuckets (one seed per feature) ─ GroupBucketsByFeature
        ─ WriteBucketFiles (per feature: all lines sorted by key, streamed into the file)

The histograms (:mod:`~beam_prep.analyzers.per_key_buckets.hist`) merge exactly, so the file's
bytes depend only on the data, never on batches, splits, partitions or merge order.
``per_key/<feature>.buckets.jsonl`` holds one line per key
(:mod:`beam_prep.io.contract.per_key_buckets_file`).

Example:
    >>> meta = hists | PerKeyBucketFiles({"price": 4}, "artifacts/")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa

from beam_prep.analyzers.key_lines import json_key, write_lines
from beam_prep.analyzers.per_key_buckets import hist as pkh
from beam_prep.io import filesystem as fs
from beam_prep.io.contract.per_key_buckets_file import ROLE, buckets_relpath


class KeyHistCombineFn(beam.CombineFn):
    """Merges :class:`~beam_prep.analyzers.per_key_buckets.hist.KeyHist` exactly (order-free)."""

    def create_accumulator(self) -> list[pkh.KeyHist]:
        return []

    def add_input(self, acc: list[pkh.KeyHist], element: pkh.KeyHist) -> list[pkh.KeyHist]:
        acc.append(element)
        return [pkh.merge(acc)] if len(acc) >= 16 else acc

    def merge_accumulators(self, accs: Iterable[list[pkh.KeyHist]]) -> list[pkh.KeyHist]:
        return [pkh.merge([h for a in accs for h in a])]

    def extract_output(self, acc: list[pkh.KeyHist]) -> pkh.KeyHist:
        return pkh.merge(acc)


def bucket_lines(hist: pkh.KeyHist, num_buckets: int) -> pa.Array:
    """One line ``[key, count, level, [boundaries]]\\n`` per key of a merged histogram."""
    bounds = pkh.boundaries(hist, num_buckets)
    counts = hist.key_counts().tolist()
    levels = hist.level.tolist()
    rows = zip(hist.keys.to_pylist(), counts, levels, bounds.tolist())
    return pa.array([f"[{json_key(k)},{c},{lv},[{','.join(map(repr, b))}]]\n"
                     for k, c, lv, b in rows], pa.large_string())


def _finalize(kv: tuple[tuple[str, int], pkh.KeyHist], buckets: dict[str, int]
              ) -> tuple[str, Any]:
    (name, part), hist = kv
    return name, (part, hist.keys, bucket_lines(hist, buckets[name]))


class _WriteBuckets(beam.DoFn):
    def __init__(self, output_dir: str) -> None:
        self._out = output_dir

    def process(self, kv: tuple[str, Iterable[Any]]) -> Iterator[tuple[str, dict]]:
        name, items = kv
        parts = sorted((p for p in items if p is not None), key=lambda p: p[0])
        rel = buckets_relpath(name)
        written = write_lines([(k, v) for _, k, v in parts], fs.join(self._out, rel))
        yield name, {"files": {ROLE: {"path": rel, "sha256": written["sha256"],
                                      "bytes": written["bytes"]}},
                     "bucket_key_count": written["keys"]}


class PerKeyBucketFiles(beam.PTransform):
    """``((feature, partition), KeyHist)`` in, ``(feature, {files, bucket_key_count})`` out.

    Args:
        buckets: Feature with ``per_key`` and ``num_buckets`` -> its ``num_buckets``.
        output_dir: Artifact directory.
    """

    def __init__(self, buckets: dict[str, int], output_dir: str) -> None:
        super().__init__()
        self._buckets = dict(buckets)
        self._out = output_dir

    def expand(self, pcoll: beam.PCollection) -> beam.PCollection:
        seeds = pcoll.pipeline | "EveryBucketFeature" >> beam.Create(
            [(n, None) for n in sorted(self._buckets)], reshuffle=False)
        lines = (pcoll
                 | "CombineKeyHists" >> beam.CombinePerKey(KeyHistCombineFn())
                 | "BucketLines" >> beam.Map(_finalize, self._buckets))
        return ((lines, seeds)
                | "WithEmptyBuckets" >> beam.Flatten()
                | "GroupBucketsByFeature" >> beam.GroupByKey()
                | "WriteBucketFiles" >> beam.ParDo(_WriteBuckets(self._out)))
