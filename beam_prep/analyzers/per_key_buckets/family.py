"""The per-key buckets family (``per_key`` with ``num_buckets``) as an analysis family object.

Example:
    >>> PER_KEY_BUCKETS.tag
    'per_key_buckets'
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers.family import KeyedFamily, KeyedKernel
from beam_prep.analyzers.per_key_buckets import hist as pkh
from beam_prep.analyzers.per_key_buckets.pipeline import PerKeyBucketFiles
from beam_prep.io.contract import per_key_buckets_file


class PerKeyBucketsFamily(KeyedFamily):
    """Bounded, exactly mergeable per-key histograms per split →
    ``per_key/<name>.buckets.jsonl`` (:mod:`~beam_prep.analyzers.per_key_buckets.pipeline`)."""

    tag = "per_key_buckets"
    label = "PerKeyBuckets"
    folders = (per_key_buckets_file.DIR,)
    kernel = KeyedKernel(pkh.batch_hist, pkh.merge, pkh.split_by_partition, pkh.to_table,
                         pkh.from_table)

    def applies(self, feature: Any) -> bool:
        return (feature.kind == "numeric" and feature.per_key is not None
                and feature.num_buckets is not None)

    def transform(self, spec: Any, output_dir: str) -> PerKeyBucketFiles:
        return PerKeyBucketFiles({f.name: int(f.num_buckets) for f in self.features(spec)},
                                 output_dir)

    def feature_key(self, feature: Any) -> dict[str, Any]:
        return {"per_key_buckets": True}  # the split also builds per-key histograms

    def manifest(self, out: dict, entry: dict) -> None:
        """``stats.bucket_key_count``."""
        out["stats"]["bucket_key_count"] = entry["bucket_key_count"]


PER_KEY_BUCKETS = PerKeyBucketsFamily()
