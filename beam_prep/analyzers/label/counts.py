"""Per (token, label) row counts of a label-aware vocabulary, columnar, and their Beam combine.

A *label table* has columns ``token`` (large_string; null marks the per-label row totals,
TFT's "sentinel" token), ``label`` (int64) and ``count`` (float64: rows, whole numbers now,
so that a weighted count could be added later without a new layout; fractional weights
would then need order-independent sums, see :mod:`beam_prep.analyzers.exact_sums`). One row
per distinct (token, label). Counting is Arrow hashing over a batch (``group_by``), never a
Python loop per row. Sums of whole-number float64 counts are exact below 2**53, so merging in
any order gives the same table: the combine's output is sorted by (token, label) and is the
same bytes whatever the sharding or batch size.

A row counts when its label is present and >= 0 (TFT integer labels index classes; a
missing or negative label leaves the row out: such rows are totalled under label -1,
reported as ``rows_without_label``). A token
counts once per row (a list holding a token twice is one occurrence: mutual information is
defined on token presence, the multi-hot representation TFT asks for).

Example:
    >>> import pyarrow as pa
    >>> t = count_batch(pa.array(["a", "b", "a", None]), pa.array([1, 0, 1, None]))
    >>> sorted(zip(*(t.column(c).to_pylist() for c in ("token", "label", "count"))),
    ...        key=str)
    [('a', 1, 2.0), ('b', 0, 1.0), (None, -1, 1.0), (None, 0, 1.0), (None, 1, 2.0)]
"""

from __future__ import annotations

from collections.abc import Iterable

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.vocab.partition import split_by_partition

__all__ = ["SCHEMA", "LabelCountsCombineFn", "LabelTables", "count_batch", "empty_table",
           "merge_label_tables", "partitioned"]

SCHEMA = pa.schema([("token", pa.large_string()), ("label", pa.int64()),
                    ("count", pa.float64())])
#: Rows of unmerged tables an accumulator holds before it merges them.
COMPACT_ROWS = 1 << 20


def empty_table() -> pa.Table:
    """A label table with no rows."""
    return SCHEMA.empty_table()


def _labels(labels: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(label values as int64 with -1 for missing, mask of rows that count)."""
    if pa.types.is_dictionary(labels.type):
        labels = labels.dictionary_decode()
    values = np.asarray(pc.fill_null(labels.cast(pa.int64()), -1).to_numpy(
        zero_copy_only=False), dtype=np.int64)
    return values, values >= 0


def _codes(values: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """(dictionary code of each flat value, -1 for null; the row of each; the distinct
    tokens as large_string). Counting runs on the integer codes; only the distinct values
    are turned into strings (integers: their decimal strings)."""
    if pa.types.is_large_list(values.type) or pa.types.is_list(values.type):
        rows = np.asarray(pc.list_parent_indices(values).to_numpy(zero_copy_only=False),
                          dtype=np.int64)
        flat = pc.list_flatten(values)
    else:
        rows, flat = np.arange(len(values), dtype=np.int64), values
    if not pa.types.is_dictionary(flat.type):  # Parquet strings usually arrive encoded
        flat = pc.dictionary_encode(flat)
    codes = np.asarray(pc.fill_null(flat.indices.cast(pa.int64()), -1).to_numpy(
        zero_copy_only=False), dtype=np.int64)
    dictionary = flat.dictionary.cast(pa.large_string())
    if dictionary.null_count:  # a null *value* in the dictionary is a missing cell too
        nulls = np.flatnonzero(np.asarray(pc.is_null(dictionary)))
        codes = np.where(np.isin(codes, nulls), -1, codes)
    return codes, rows, dictionary


def merge_label_tables(tables: Iterable[pa.Table]) -> pa.Table:
    """Sums label tables into one (distinct (token, label) rows, any order)."""
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return empty_table()
    return tables[0] if len(tables) == 1 else _summed(tables)


def _summed(tables: list[pa.Table]) -> pa.Table:
    """One row per (token, label), counts summed."""
    summed = pa.concat_tables(tables).group_by(["token", "label"]).aggregate(
        [("count", "sum")])
    return pa.Table.from_arrays([summed.column("token"), summed.column("label"),
                                 summed.column("count_sum")], schema=SCHEMA)


def sorted_by_token(table: pa.Table) -> pa.Table:
    """The table sorted by (token, label), the totals (null token) last, in one chunk."""
    order = pc.sort_indices(table, sort_keys=[("token", "ascending"), ("label", "ascending")])
    return table.take(order).combine_chunks()


def count_batch(values: pa.Array, labels: pa.Array) -> pa.Table:
    """The label table of one batch: (token, label) row counts plus per-label row totals.

    Args:
        values: The feature's values (scalar or list column, string or integer), defaults
            already filled; nulls are skipped.
        labels: The batch's label column (int64), aligned with ``values``.
    """
    label_of_row, counted = _labels(labels)
    # per-label row totals; rows without a (valid) label under -1
    totals = np.unique(np.where(counted, label_of_row, -1), return_counts=True)
    sentinel = pa.Table.from_arrays(
        [pa.nulls(len(totals[0]), pa.large_string()), pa.array(totals[0], pa.int64()),
         pa.array(totals[1].astype(np.float64))], schema=SCHEMA)
    codes, rows, dictionary = _codes(values)
    keep = (codes >= 0) & counted[rows]
    pairs = pa.table({"row": rows[keep], "code": codes[keep]})
    if pa.types.is_large_list(values.type) or pa.types.is_list(values.type):
        pairs = pairs.group_by(["row", "code"]).aggregate([])  # once per row
    pairs = pairs.append_column(
        "label", pa.array(label_of_row[pairs.column("row").to_numpy()], pa.int64()))
    grouped = pairs.group_by(["code", "label"]).aggregate([("row", "count")])
    table = pa.Table.from_arrays(
        [dictionary.take(grouped.column("code")), grouped.column("label"),
         grouped.column("row_count").cast(pa.float64())], schema=SCHEMA)
    if len(pc.unique(dictionary)) != len(dictionary):  # a dictionary may repeat a value
        table = _summed([table])
    return pa.concat_tables([sentinel, table])


def partitioned(name: str, table: pa.Table, num_partitions: int
                ) -> list[tuple[tuple[str, int], pa.Table]]:
    """``((name, partition), table)``: the totals (null token) under partition -1, always;
    the (token, label) rows by the token's stable hash, like the count-ranked vocabularies
    (:func:`~beam_prep.analyzers.vocab.partition.split_by_partition`; empty ones left out).

    Example:
        >>> t = count_batch(pa.array(["a", "b"]), pa.array([0, 1]))
        >>> sorted(k for k, _ in partitioned("f", t, 1))
        [('f', -1), ('f', 0)]
    """
    is_total = pc.is_null(table.column("token"))
    out = [((name, -1), table.filter(is_total))]
    return out + [((name, part), t) for part, t in
                  split_by_partition(table.filter(pc.invert(is_total)), num_partitions)]


class LabelTables:
    """Accumulates label tables in bounded memory (merged every :data:`COMPACT_ROWS` rows).

    Example:
        >>> acc = LabelTables()
        >>> acc.add(count_batch(pa.array(["a"]), pa.array([0])))          # doctest: +SKIP
        >>> acc.result().num_rows                                          # doctest: +SKIP
        2
    """

    def __init__(self) -> None:
        self.tables: list[pa.Table] = []
        self._rows = 0

    def add(self, table: pa.Table) -> None:
        """Adds a label table."""
        self.tables.append(table)
        self._rows += table.num_rows
        if self._rows >= COMPACT_ROWS and len(self.tables) > 1:
            merged = merge_label_tables(self.tables)
            self.tables, self._rows = [merged], merged.num_rows

    def result(self) -> pa.Table:
        """The merged table, sorted by (token, label) (the totals, null token, last)."""
        return sorted_by_token(merge_label_tables(self.tables))


class LabelCountsCombineFn(beam.CombineFn):
    """Sums the label tables of one feature (Beam ``CombinePerKey``, key = feature name).

    The output is sorted by (token, label), so it does not depend on the order of inputs.
    """

    def create_accumulator(self) -> LabelTables:
        return LabelTables()

    def add_input(self, acc: LabelTables, table: pa.Table) -> LabelTables:
        acc.add(table)
        return acc

    def merge_accumulators(self, accs: Iterable[LabelTables]) -> LabelTables:
        out = LabelTables()
        for acc in accs:
            for table in acc.tables:
                out.add(table)
        return out

    def compact(self, acc: LabelTables) -> LabelTables:
        out = LabelTables()
        out.add(merge_label_tables(acc.tables))
        return out

    def extract_output(self, acc: LabelTables) -> pa.Table:
        return acc.result()
