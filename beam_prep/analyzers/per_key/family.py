"""The per-key statistics family (``per_key:``) as an analysis family object.

Example:
    >>> PER_KEY.tag
    'per_key'
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
from beam_prep.analyzers.per_key import stats as pks
from beam_prep.analyzers.per_key.pipeline import PerKeyFiles
from beam_prep.io.contract import per_key_file


class PerKeyFamily(AnalysisFamily):
    """Exact per-key moments of a numeric feature per split → ``per_key/<name>.jsonl``
    (:mod:`~beam_prep.analyzers.per_key.pipeline`)."""

    tag = "per_key"
    label = "PerKey"
    folders = (per_key_file.DIR,)

    def applies(self, feature: Any) -> bool:
        return feature.kind == "numeric" and feature.per_key is not None

    def accumulator(self, feature: Any) -> BatchMerging:
        return BatchMerging(lambda view: pks.batch_stats(view.keys, view.float_rows), pks.merge)

    def elements(self, name: str, value: pks.KeyStats, num_partitions: int) -> list:
        parts = key_partitions(value, pks.split_by_partition, num_partitions)
        return [((name, part), stats) for part, stats in parts]

    def merge(self, values: list[pks.KeyStats]) -> pks.KeyStats:
        return pks.merge(values)

    def to_bytes(self, value: pks.KeyStats) -> bytes:
        return ipc_bytes(pks.to_table(value))

    def from_bytes(self, data: bytes, feature: Any, relname: str) -> pks.KeyStats:
        return pks.from_table(ipc_table(data))

    def transform(self, spec: Any, output_dir: str) -> PerKeyFiles:
        return PerKeyFiles([f.name for f in self.features(spec)], output_dir)

    def manifest(self, out: dict, entry: dict) -> None:
        """``stats.key_count``."""
        out["stats"]["key_count"] = entry["key_count"]


PER_KEY = PerKeyFamily()
