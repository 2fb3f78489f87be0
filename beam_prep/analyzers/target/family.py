"""The target-encoding family (``target_encoding:``) as an analysis family object.

Example:
    >>> TARGET.tag, TARGET.every_feature
    ('target', True)
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers.family import AnalysisFamily, FeatureBatch
from beam_prep.analyzers.target import cache_file
from beam_prep.analyzers.target import stats as target_stats
from beam_prep.analyzers.target.write import TargetStats
from beam_prep.io.contract import artifacts as layout
from beam_prep.spec.target_fields import has_target_encoding


class _TargetAccumulator:
    def __init__(self) -> None:
        self.table: target_stats.Table = {}

    def add(self, view: FeatureBatch) -> None:
        target_stats.add_batch(self.table, view.values, view.batch,
                               view.feature.target_encoding)

    def result(self) -> target_stats.Table:
        return self.table


class TargetFamily(AnalysisFamily):
    """Per (token, fold) rows and exact label sums per split → ``vocab/<name>.target.jsonl``
    (:mod:`~beam_prep.analyzers.target.write`). Every split emits a table per feature."""

    tag = "target"
    label = "TargetStats"
    folders = (layout.VOCAB_DIR,)
    suffix = "jsonl"
    every_feature = True

    def applies(self, feature: Any) -> bool:
        return has_target_encoding(feature)

    def accumulator(self, feature: Any) -> _TargetAccumulator:
        return _TargetAccumulator()

    def elements(self, name: str, value: target_stats.Table, num_partitions: int) -> list:
        return [(name, value)]

    def name_and_value(self, element: tuple[str, Any]) -> tuple[str, Any]:
        return element

    def merge(self, values: list[target_stats.Table]) -> target_stats.Table:
        return values[0] if len(values) == 1 else target_stats.merge_tables(values)

    def to_bytes(self, value: target_stats.Table) -> bytes:
        return cache_file.table_bytes(value)

    def from_bytes(self, data: bytes, feature: Any, relname: str) -> target_stats.Table:
        return cache_file.load_table(data, folds=feature.target_encoding.folds, name=relname)

    def transform(self, spec: Any, output_dir: str) -> TargetStats:
        return TargetStats(spec, output_dir)

    def manifest(self, out: dict, entry: dict) -> None:
        """``files.target_encoding`` and ``stats.target_encoding``."""
        out["files"]["target_encoding"] = entry["target_encoding"]["file"]
        out["stats"]["target_encoding"] = entry["target_encoding"]["stats"]


TARGET = TargetFamily()
