"""The per-key buckets family (``per_key`` with ``num_buckets``) as an analysis family object.

Example:
    >>> PER_KEY_BUCKETS.tag
    'per_key_buckets'
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers.family import AnalysisFamily, FeatureBatch, ipc_bytes, ipc_table
from beam_prep.analyzers.per_key_buckets import hist as pkh
from beam_prep.analyzers.per_key_buckets.pipeline import PerKeyBucketFiles
from beam_prep.analyzers.vocab.partition import token_hashes
from beam_prep.io.contract import per_key_buckets_file

#: Batches a split holds per feature before merging them.
MERGE_EVERY = 16


class _HistAccumulator:
    def __init__(self) -> None:
        self._parts: list[pkh.KeyHist] = []

    def add(self, view: FeatureBatch) -> None:
        self._parts.append(pkh.batch_hist(view.keys, view.float_rows))
        if len(self._parts) >= MERGE_EVERY:
            self._parts[:] = [pkh.merge(self._parts)]

    def result(self) -> pkh.KeyHist:
        return pkh.merge(self._parts)


def hist_partitions(hist: pkh.KeyHist, num_partitions: int) -> list[tuple[int, Any]]:
    """Per-key histograms split by the keys' hash partition (as per-key stats are)."""
    if not len(hist):
        return []
    return pkh.split_by_partition(hist, token_hashes(hist.keys), num_partitions)


class PerKeyBucketsFamily(AnalysisFamily):
    """Bounded, exactly mergeable per-key histograms per split →
    ``per_key/<name>.buckets.jsonl`` (:mod:`~beam_prep.analyzers.per_key_buckets.pipeline`)."""

    tag = "per_key_buckets"
    label = "PerKeyBuckets"
    folders = (per_key_buckets_file.DIR,)

    def applies(self, feature: Any) -> bool:
        return (feature.kind == "numeric" and feature.per_key is not None
                and feature.num_buckets is not None)

    def accumulator(self, feature: Any) -> _HistAccumulator:
        return _HistAccumulator()

    def elements(self, name: str, value: pkh.KeyHist, num_partitions: int) -> list:
        return [((name, part), hist) for part, hist in hist_partitions(value, num_partitions)]

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
