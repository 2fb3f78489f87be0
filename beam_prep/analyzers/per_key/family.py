"""The per-key statistics family (``per_key:``) as an analysis family object.

Example:
    >>> PER_KEY.tag
    'per_key'
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers.family import AnalysisFamily, FeatureBatch, ipc_bytes, ipc_table
from beam_prep.analyzers.per_key import stats as pks
from beam_prep.analyzers.per_key.pipeline import PerKeyFiles
from beam_prep.analyzers.vocab.partition import token_hashes
from beam_prep.io.contract import per_key_file

#: Batches a split holds per feature before merging them.
MERGE_EVERY = 16


class _KeyStatsAccumulator:
    def __init__(self) -> None:
        self._parts: list[pks.KeyStats] = []

    def add(self, view: FeatureBatch) -> None:
        self._parts.append(pks.batch_stats(view.keys, view.float_rows))
        if len(self._parts) >= MERGE_EVERY:
            self._parts[:] = [pks.merge(self._parts)]

    def result(self) -> pks.KeyStats:
        return pks.merge(self._parts)


def key_partitions(stats: pks.KeyStats, num_partitions: int) -> list[tuple[int, Any]]:
    """Per-key stats split by the keys' hash partition (as vocabularies are)."""
    if not len(stats):
        return []
    return pks.split_by_partition(stats, token_hashes(stats.keys), num_partitions)


class PerKeyFamily(AnalysisFamily):
    """Exact per-key moments of a numeric feature per split → ``per_key/<name>.jsonl``
    (:mod:`~beam_prep.analyzers.per_key.pipeline`)."""

    tag = "per_key"
    label = "PerKey"
    folders = (per_key_file.DIR,)

    def applies(self, feature: Any) -> bool:
        return feature.kind == "numeric" and feature.per_key is not None

    def accumulator(self, feature: Any) -> _KeyStatsAccumulator:
        return _KeyStatsAccumulator()

    def elements(self, name: str, value: pks.KeyStats, num_partitions: int) -> list:
        return [((name, part), stats) for part, stats in key_partitions(value, num_partitions)]

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
