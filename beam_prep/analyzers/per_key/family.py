"""The per-key statistics family (``per_key:``) as an analysis family object.

Example:
    >>> PER_KEY.tag
    'per_key'
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers.family import KeyedFamily, KeyedKernel
from beam_prep.analyzers.per_key import stats as pks
from beam_prep.analyzers.per_key.pipeline import PerKeyFiles
from beam_prep.io.contract import per_key_file


class PerKeyFamily(KeyedFamily):
    """Exact per-key moments of a numeric feature per split → ``per_key/<name>.jsonl``
    (:mod:`~beam_prep.analyzers.per_key.pipeline`)."""

    tag = "per_key"
    label = "PerKey"
    folders = (per_key_file.DIR,)
    kernel = KeyedKernel(pks.batch_stats, pks.merge, pks.split_by_partition, pks.to_table,
                         pks.from_table)

    def applies(self, feature: Any) -> bool:
        return feature.kind == "numeric" and feature.per_key is not None

    def transform(self, spec: Any, output_dir: str) -> PerKeyFiles:
        return PerKeyFiles([f.name for f in self.features(spec)], output_dir)

    def manifest(self, out: dict, entry: dict) -> None:
        """``stats.key_count``."""
        out["stats"]["key_count"] = entry["key_count"]


PER_KEY = PerKeyFamily()
