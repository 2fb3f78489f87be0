"""The Beam CombineFn that sums vocabulary tables, spilling large ones to files.

Example:
    >>> import pyarrow as pa
    >>> from beam_prep.analyzers.vocab.count import count_values
    >>> fn = VocabularyCombineFn()
    >>> acc = fn.add_input(fn.create_accumulator(), count_values(pa.array(["a", "b", "a"])))
    >>> acc = fn.merge_accumulators([acc, fn.add_input(fn.create_accumulator(),
    ...                                                count_values(pa.array(["a"])))])
    >>> out = fn.extract_output(acc)
    >>> sorted(zip(out.column("token").to_pylist(), out.column("count").to_pylist()))
    [('a', 3), ('b', 1)]
"""

from __future__ import annotations

from collections.abc import Iterable

import apache_beam as beam
import pyarrow as pa

from beam_prep.analyzers.spill import SpillRef, materialize, spill_by_content
from beam_prep.analyzers.vocab.count import empty_table, merge_tables

__all__ = ["COMPACT_ROWS", "VocabularyCombineFn"]

#: In-memory tables are re-merged once the unmerged tail holds more rows than this (or
#: than the merged head).
COMPACT_ROWS = 1 << 20


class VocabularyCombineFn(beam.CombineFn):
    """Sums vocabulary tables (in memory or spilled); the empty input gives an empty table.

    The accumulator is a list of tables and :class:`SpillRef` s. In-memory tables are
    merged when they pile up; a merged table of ``spill_rows`` rows or more is spilled to
    ``temp_dir`` so accumulators stay small whatever the vocabulary size.

    Args:
        temp_dir: Scratch directory for spills (None = never spill).
        spill_rows: Row threshold for spilling a merged table.
    """

    def __init__(self, temp_dir: str | None = None, spill_rows: int = 1 << 20) -> None:
        self._temp_dir = temp_dir
        self._spill_rows = spill_rows

    def create_accumulator(self) -> list:
        return []

    def add_input(self, acc: list, item: pa.Table | SpillRef) -> list:
        acc.append(item)
        return self._maybe_compact(acc)

    def merge_accumulators(self, accs: Iterable[list]) -> list:
        out: list = []
        for a in accs:
            out.extend(a)
        return self._maybe_compact(out)

    def compact(self, acc: list) -> list:
        return self._maybe_compact(acc, force=True)

    def extract_output(self, acc: list) -> pa.Table:
        """The summed table. Spilled tables are read one at a time and merged as they
        come (amortised), so memory holds about the distinct tokens plus one table, not
        every spilled table at once."""
        merged = empty_table()
        pending: list[pa.Table] = []
        pending_rows = 0
        for item in acc:
            table = materialize(item)
            pending.append(table)
            pending_rows += table.num_rows
            if pending_rows >= max(COMPACT_ROWS, merged.num_rows):
                merged = merge_tables([merged, *pending])
                pending, pending_rows = [], 0
        return merge_tables([merged, *pending])

    def _maybe_compact(self, acc: list, force: bool = False) -> list:
        refs = [x for x in acc if isinstance(x, SpillRef)]
        tables = [x for x in acc if not isinstance(x, SpillRef)]
        # Amortised: re-merge only when the tail outgrows the already-compacted head.
        if len(tables) > 1 and (force or len(tables) >= 64 or sum(
                t.num_rows for t in tables[1:]) > max(COMPACT_ROWS, tables[0].num_rows)):
            tables = [merge_tables(tables)]
        if self._temp_dir and tables and tables[0].num_rows >= self._spill_rows:
            # Named by content: a retried bundle rewrites the same file (no orphan).
            refs.append(spill_by_content(tables[0], f"{self._temp_dir}/combine"))
            tables = tables[1:]
        return refs + tables
