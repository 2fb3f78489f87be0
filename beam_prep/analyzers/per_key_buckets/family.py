"""The per-key buckets family (``per_key`` with ``num_buckets``) as an analysis family object.

Example:
    >>> PER_KEY_BUCKETS.tag
    'per_key_buckets'
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers.family import (
    AnalysisFamily,
    BatchMerging,
    ipc_bytes,
    ipc_table,
    key_partitions,
)
from beam_prep.analyzers.per_key_buckets import hist as pkh
from beam_prep.analyzers.per_key_buckets.pipeline import PerKeyBucketFiles
from beam_prep.io.contract import per_key_buckets_file


class PerKeyBucketsFamily(AnalysisFamily):
    """Bounded, exactly mergeable per-key histograms per split →
    ``per_key/<name>.buckets.jsonl`` (:mod:`~beam_prep.analyzers.per_key_buckets.pipeline`)."""

    tag = "per_key_buckets"
    label = "PerKeyBuckets"
    folders = (per_key_buckets_file.DIR,)

    def applies(self, feature: Any) -> bool:
        return (feature.kind == "numeric" and feature.per_key is not None
                and feature.num_buckets is not None)

    def accumulator(self, feature: Any) -> BatchMerging:
        return BatchMerging(lambda view: pkh.batch_hist(view.keys, view.float_rows), pkh.merge)

    def elements(self, name: str, value: pkh.KeyHist, num_partitions: int) -> list:
        parts = key_partitions(value, pkh.split_by_partition, num_partitions)
        return [((name, part), hist) for part, hist in parts]

    def merge(self, values: list[pkh.KeyHist]) -> pkh.KeyHist:
        return pkh.merge(values)

    def to_bytes(self, value: pkh.KeyHist) -> bytes:
        return ipc_bytes(pkh.to_table(value))

    def from_bytes(self, data: bytes, feature: Any, relname: str) -> pkh.KeyHist:
        return pkh.from_table(ipc_table(data))

    def transform(self, spec: Any, output_dir: str) -> PerKeyBucketFiles:
        return PerKeyBucketFiles({f.name: int(f.num_buckets) for f in self.features(spec)},
                                 output_dir)

    def feature_key(self, feature: Any) -> dict[str, Any]:
        return {"per_key_buckets": True}  # the split also builds per-key histograms

    def manifest(self, out: dict, entry: dict) -> None:
        """``stats.bucket_key_count``."""
        out["stats"]["bucket_key_count"] = entry["bucket_key_count"]


PER_KEY_BUCKETS = PerKeyBucketsFamily()
