"""Per-split vocabulary accumulation in bounded memory: merged in memory, spilled in runs.

A split (a whole CSV file, a run of Parquet row groups) can hold more distinct tokens than
fit in memory: text n-grams keep adding new tokens row after row. :class:`SplitVocabulary`
keeps one merged table plus a short tail of unmerged batch tables; when the merged table
reaches ``memory_rows`` it is hash-partitioned and written as a *run* of spill files, and
accumulation starts again from nothing. The runs and the final table travel as
``((feature, partition), table or SpillRef)`` elements to the keyed combine, which sums
them exactly (counts and document counts are additive: a document is in one batch).

Weights are an optional input of the same accumulator (``weighted=True``, the spec's
``weights``): each batch's (token, weight) pairs become exact integer limb sums per weight
band (:mod:`~beam_prep.analyzers.vocab.weights`), each band counted by its own bounded
accumulator under the band key (``city.w0134``), so weighted counts travel through the same
partitions, spill files and keyed combine as plain counts.

File names derive from the split id, the run number and the partition, so a retried split
rewrites the same files with the same bytes.

Example:
    >>> import pyarrow as pa
    >>> from beam_prep.analyzers.vocab.count import count_values
    >>> acc = SplitVocabulary("f", num_partitions=2, spill_dir=None, file_stem="s")
    >>> acc.add_table(count_values(pa.array(["a", "b", "a"])))
    >>> acc.add_values(pa.array(["a", None]))
    >>> out = acc.result()
    >>> sorted((t, c) for _, tab in out
    ...        for t, c in zip(tab.column("token").to_pylist(), tab.column("count").to_pylist()))
    [('a', 3), ('b', 1)]
    >>> import numpy as np
    >>> w = SplitVocabulary("f", num_partitions=1, spill_dir=None, file_stem="s", weighted=True)
    >>> w.add_values(pa.array(["a", "b"]), np.array([0.5, 2.0]))
    >>> sorted(key for (key, _), _ in w.result())  # both weights are in band 134
    ['f.w0134']
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from beam_prep.analyzers.spill import spill
from beam_prep.analyzers.vocab.count import count_chunks, empty_table, merge_tables
from beam_prep.analyzers.vocab.partition import split_by_partition
from beam_prep.analyzers.vocab.weights import band_key, band_tables, check_weights

__all__ = ["FLUSH_VALUES", "MAX_TAIL_TABLES", "MEMORY_ROWS", "SplitVocabulary"]

#: Raw values buffered before they are counted in one pass.
FLUSH_VALUES = 1 << 22
#: Rows of the merged table at which it is spilled as a run (about 40 MB of short tokens).
MEMORY_ROWS = 1 << 20
#: Unmerged batch tables kept at most before a merge.
MAX_TAIL_TABLES = 16


class SplitVocabulary:
    """Vocabulary accumulator of one feature over one split, bounded in memory.

    Raw value arrays are buffered and counted in one pass per :data:`FLUSH_VALUES` values
    (one hash table, or a bincount over dictionary indices). Counted tables join a tail that
    is merged into the head once it holds more rows than the head (amortised, at least
    ``memory_rows // 2``) or :data:`MAX_TAIL_TABLES` tables. A head of ``memory_rows`` rows
    or more is spilled (when ``spill_dir`` is set) and dropped from memory, so the counted
    rows held never exceed ``2 * memory_rows`` plus the table being added, however many
    distinct tokens the split has.

    Args:
        name: Feature name (part of the key and of the spill paths).
        num_partitions: Hash partitions of the output.
        spill_dir: Scratch directory (None = never spill; everything stays in memory).
        file_stem: Deterministic file-name stem of the split (e.g. ``spill.stable_id``).
        spill_rows: Final tables of this many rows or more also go through files.
        memory_rows: Merged rows kept in memory before a run is spilled.
        weighted: Every value comes with a weight (:meth:`add_values`); the results are
            the weight bands' elements, bands ascending.
    """

    def __init__(self, name: str, *, num_partitions: int, spill_dir: str | None,
                 file_stem: str, spill_rows: int = 1 << 13,
                 memory_rows: int = MEMORY_ROWS, weighted: bool = False) -> None:
        self.name = name
        self.weighted = weighted
        self._bands: dict[int, SplitVocabulary] = {}
        self._partitions = num_partitions
        self._spill_dir = spill_dir
        self._stem = file_stem
        self._spill_rows = spill_rows
        self._memory_rows = max(1, memory_rows)
        self._raw: list[pa.Array] = []
        self._raw_values = 0
        self._head = empty_table()
        self._tail: list[pa.Table] = []
        self._tail_rows = 0
        self._runs: list[tuple[tuple[str, int], Any]] = []
        self._run_count = 0

    @property
    def spilled_runs(self) -> int:
        """Runs written so far (0 when everything fit in memory; weighted: over all bands)."""
        return self._run_count + sum(b.spilled_runs for b in self._bands.values())

    @property
    def rows_in_memory(self) -> int:
        """Counted rows held now: fewer than ``2 * memory_rows`` plus one added table (per
        weight band when weighted: a band is an accumulator of its own)."""
        return (self._head.num_rows + self._tail_rows
                + sum(b.rows_in_memory for b in self._bands.values()))

    def add_values(self, values: pa.Array, weights: np.ndarray | None = None) -> None:
        """Adds flat raw values (nulls are skipped when counted).

        Args:
            values: Flat tokens.
            weights: One valid weight per value (:func:`~beam_prep.analyzers.vocab.weights.
                valid_weights`), given exactly when the accumulator is ``weighted``.
        """
        if (weights is not None) != self.weighted:
            raise ValueError(f"{self.name}: weights must be given exactly when the "
                             f"accumulator is weighted (weighted={self.weighted})")
        if weights is not None:
            check_weights(self.name, len(values), weights)
            for band, table in band_tables(values, weights).items():
                if band not in self._bands:
                    self._bands[band] = SplitVocabulary(
                        band_key(self.name, band), num_partitions=self._partitions,
                        spill_dir=self._spill_dir, file_stem=self._stem,
                        spill_rows=self._spill_rows, memory_rows=self._memory_rows)
                self._bands[band].add_table(table)
            return
        self._raw.append(values)
        self._raw_values += len(values)
        if self._raw_values >= FLUSH_VALUES:
            self._flush_raw()

    def add_table(self, table: pa.Table) -> None:
        """Adds a counted vocabulary table (distinct tokens; not when ``weighted``)."""
        if self.weighted:
            raise ValueError(f"{self.name}: a weighted accumulator counts (token, weight) "
                             f"pairs: use add_values(values, weights), not add_table")
        if table.num_rows == 0:
            return
        self._tail.append(table)
        self._tail_rows += table.num_rows
        if (len(self._tail) >= MAX_TAIL_TABLES or self._tail_rows >= max(
                self._head.num_rows, self._memory_rows // 2)):
            self._merge()

    def result(self) -> list[tuple[tuple[str, int], Any]]:
        """``((name, partition), table or SpillRef)`` elements holding every count (weighted:
        ``((band key, partition), ...)``, bands ascending)."""
        if self.weighted:
            return [item for band in sorted(self._bands)
                    for item in self._bands[band].result()]
        self._flush_raw()
        self._merge()
        head, self._head = self._head, empty_table()
        out = self._runs
        self._runs = []
        if self._spill_dir is not None and (out or head.num_rows >= self._spill_rows):
            return out + self._spill(head, self._stem)
        return out + [((self.name, part), table)
                      for part, table in split_by_partition(head, self._partitions)]

    def _flush_raw(self) -> None:
        if self._raw:
            raw, self._raw, self._raw_values = self._raw, [], 0
            self.add_table(count_chunks(raw))

    def _merge(self) -> None:
        if self._tail:
            tail, self._tail, self._tail_rows = self._tail, [], 0
            self._head = merge_tables([self._head, *tail])
        if self._spill_dir is not None and self._head.num_rows >= self._memory_rows:
            self._runs += self._spill(self._head, f"{self._stem}-r{self._run_count:04d}")
            self._run_count += 1
            self._head = empty_table()

    def _spill(self, table: pa.Table, stem: str) -> list[tuple[tuple[str, int], Any]]:
        return [((self.name, part),
                 spill(t, f"{self._spill_dir}/counts/{self.name}/p{part:03d}/{stem}.arrow"))
                for part, t in split_by_partition(table, self._partitions)]
