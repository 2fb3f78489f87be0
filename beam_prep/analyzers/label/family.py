"""The label-aware vocabulary family (``labels:``) as an analysis family object.

Example:
    >>> LABELS.tag, LABELS.replaces_vocabulary
    ('labels', True)
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from beam_prep.analyzers.family import AnalysisFamily, FeatureBatch, ipc_bytes, ipc_table
from beam_prep.analyzers.label import counts as label_counts
from beam_prep.analyzers.label.vocab import LabeledVocabularies
from beam_prep.io.contract import artifacts as layout
from beam_prep.spec.label_fields import has_labels


class _LabelAccumulator:
    def __init__(self) -> None:
        self._tables = label_counts.LabelTables()

    def add(self, view: FeatureBatch) -> None:
        labels = view.batch.column(view.feature.labels)
        self._tables.add(label_counts.count_batch(view.values, labels))

    def result(self) -> pa.Table:
        return self._tables.result()


class LabelFamily(AnalysisFamily):
    """(token, label) row counts per split → MI-ranked vocabulary files
    (:mod:`~beam_prep.analyzers.label.vocab`); its features skip the count-ranked path."""

    tag = "labels"
    label = "LabelVocabularies"
    folders = (layout.VOCAB_DIR,)
    replaces_vocabulary = True

    def applies(self, feature: Any) -> bool:
        return has_labels(feature)

    def accumulator(self, feature: Any) -> _LabelAccumulator:
        return _LabelAccumulator()

    def elements(self, name: str, value: pa.Table, num_partitions: int) -> list:
        return label_counts.partitioned(name, value, num_partitions)

    def merge(self, values: list[pa.Table]) -> pa.Table:
        return label_counts.sorted_by_token(label_counts.merge_label_tables(values))

    def to_bytes(self, value: pa.Table) -> bytes:
        return ipc_bytes(value.cast(label_counts.SCHEMA))

    def from_bytes(self, data: bytes, feature: Any, relname: str) -> pa.Table:
        return ipc_table(data).cast(label_counts.SCHEMA)

    def transform(self, spec: Any, output_dir: str) -> LabeledVocabularies:
        return LabeledVocabularies(spec, output_dir)

    def manifest(self, out: dict, entry: dict) -> None:
        """``stats.mutual_info``; the tokens it dropped count as distinct and total."""
        stats = out["stats"]
        mi = stats["mutual_info"] = entry["mutual_info"]
        stats["distinct_values"] += mi["dropped_min_mutual_info"]["tokens"]
        stats["total_count"] += mi["dropped_min_mutual_info"]["count"]


LABELS = LabelFamily()
