"""Exact token counting into vocabulary tables, and merging of those tables.

A vocabulary *table* is a ``pa.Table`` with columns ``token`` (large_string), ``count``
(int64, occurrences) and ``df`` (int64, documents/rows containing the token; 0 when not
counted). Counting and merging are vectorised (Arrow hashing, numpy ``bincount``): no Python
loop per token. Counts are integers, so merges are exact and order-independent.

Example:
    >>> import pyarrow as pa
    >>> t = merge_tables([count_values(pa.array(["b", "a", "b", None])),
    ...                   count_values(pa.array(["a"]))])
    >>> sorted(zip(t.column("token").to_pylist(), t.column("count").to_pylist()))
    [('a', 2), ('b', 2)]
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "SCHEMA",
    "count_chunks",
    "count_values",
    "empty_table",
    "merge_tables",
    "summary",
    "table_from_counts",
]

SCHEMA = pa.schema([("token", pa.large_string()), ("count", pa.int64()), ("df", pa.int64())])

_EXACT_FLOAT_SUM = 1 << 53


def empty_table() -> pa.Table:
    """A vocabulary table with no rows."""
    return SCHEMA.empty_table()


def table_from_counts(tokens: pa.Array, counts: pa.Array | np.ndarray,
                      dfs: pa.Array | np.ndarray | None = None) -> pa.Table:
    """A vocabulary table from distinct tokens, their counts and (optionally) their dfs.

    Args:
        tokens: Distinct tokens (any string type; cast to large_string).
        counts: Occurrences per token.
        dfs: Documents per token (None = zeros).
    """
    n = len(tokens)
    if dfs is None:
        dfs = np.zeros(n, np.int64)
    return pa.Table.from_arrays(
        [tokens.cast(pa.large_string()), pa.array(counts).cast(pa.int64()),
         pa.array(dfs).cast(pa.int64())], schema=SCHEMA)


def count_values(values: pa.Array, doc_ids: pa.Array | None = None) -> pa.Table:
    """Counts the non-null values of a flat array.

    Args:
        values: Tokens (strings); nulls are ignored.
        doc_ids: Optional document id per value; then ``df`` counts distinct documents,
            otherwise ``df`` is 0.

    Returns:
        A vocabulary table (unsorted).
    """
    values = values.cast(pa.large_string())
    if doc_ids is None:
        values = values.drop_null()
        if len(values) == 0:
            return empty_table()
        vc = pc.value_counts(values)
        return table_from_counts(vc.field("values"), vc.field("counts"))
    t = pa.table({"token": values, "doc": doc_ids}).filter(pc.is_valid(values))
    if t.num_rows == 0:
        return empty_table()
    per_doc = t.group_by(["token", "doc"]).aggregate([([], "count_all")])
    out = per_doc.group_by("token").aggregate([("count_all", "sum"), ([], "count_all")])
    return table_from_counts(out.column("token").combine_chunks(),
                             out.column("count_all_sum").combine_chunks(),
                             out.column("count_all").combine_chunks())


def _dictionary_counts(chunks: list[pa.Array]) -> pa.Table:
    """Counts dictionary-encoded chunks on their integer indices (no string hashing).

    ``unify_dictionaries`` builds one memo table over every chunk's dictionary, so the
    unified dictionary holds each string once; an empty chunk is appended so that a lone
    chunk is unified too (a dictionary may hold the same string twice, e.g. after a cast).
    Null slots are filled with index 0 and taken back from that token's count.
    """
    kind = chunks[0].type
    if not pa.types.is_int32(kind.index_type):  # room for the unified dictionary
        kind = pa.dictionary(pa.int64(), kind.value_type)
        chunks = [c.cast(kind) for c in chunks]
    empty = pa.DictionaryArray.from_arrays(pa.array([], kind.index_type),
                                           pa.array([], kind.value_type))
    unified = pa.chunked_array(chunks + [empty]).unify_dictionaries()
    dictionary = unified.chunks[0].dictionary
    nulls = sum(c.null_count for c in unified.chunks)
    indices = [pc.fill_null(c.indices, 0) if c.null_count else c.indices
               for c in unified.chunks if len(c)]
    idx = np.concatenate([i.to_numpy() for i in indices])
    counts = np.bincount(idx, minlength=len(dictionary)).astype(np.int64)
    if nulls:
        counts[0] -= nulls
    present = np.flatnonzero(counts)
    return table_from_counts(dictionary.take(pa.array(present)), counts[present])


def count_chunks(chunks: list[pa.Array]) -> pa.Table:
    """Counts the non-null values of several flat arrays in one pass.

    Dictionary-encoded chunks are counted on their indices (unless a dictionary holds a
    null); other arrays are hashed once as a chunked array. Integers are counted as
    integers, then written as decimal strings.
    """
    chunks = [c for c in chunks if len(c)]
    if not chunks:
        return empty_table()
    if all(pa.types.is_dictionary(c.type) and c.dictionary.null_count == 0 for c in chunks):
        return _dictionary_counts(chunks)
    flat = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
    if len({c.type for c in flat}) > 1:
        flat = [c.cast(pa.large_string()) for c in flat]
    vc = pc.value_counts(pa.chunked_array(flat))
    values = vc.field("values")
    keep = pc.is_valid(values)
    return table_from_counts(values.filter(keep), vc.field("counts").filter(keep))


def _aggregate(table: pa.Table) -> pa.Table:
    """One row per token: counts and dfs summed.

    Tokens are hashed once (``dictionary_encode``) and the sums taken with ``bincount``
    over the indices, ~5x faster than a grouped aggregation. ``bincount`` sums in
    float64, exact while the total stays below 2**53; beyond that (never in practice) the
    grouped aggregation is used.
    """
    if table.num_rows == 0:
        return empty_table()
    table = table.combine_chunks()
    counts = table.column("count").to_numpy()
    dfs = table.column("df").to_numpy()
    if int(counts.sum()) >= _EXACT_FLOAT_SUM or int(dfs.sum()) >= _EXACT_FLOAT_SUM:
        out = table.group_by("token").aggregate([("count", "sum"), ("df", "sum")])
        return pa.Table.from_arrays(
            [out.column("token"), out.column("count_sum"), out.column("df_sum")],
            schema=SCHEMA)
    encoded = pc.dictionary_encode(table.column("token").chunk(0))
    idx = encoded.indices.to_numpy()
    n = len(encoded.dictionary)
    summed = [np.bincount(idx, weights=v, minlength=n).astype(np.int64) for v in (counts, dfs)]
    return pa.Table.from_arrays([encoded.dictionary, pa.array(summed[0]), pa.array(summed[1])],
                                schema=SCHEMA)


def merge_tables(tables: Iterable[pa.Table]) -> pa.Table:
    """Sums counts and dfs of the same token across tables (each table has distinct tokens)."""
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return empty_table()
    if len(tables) == 1:
        return tables[0]
    return _aggregate(pa.concat_tables(tables))


def summary(table: pa.Table) -> dict[str, int]:
    """``{"tokens": rows, "count": summed counts}`` of a vocabulary table."""
    count = pc.sum(table.column("count")).as_py() if table.num_rows else 0
    return {"tokens": int(table.num_rows), "count": int(count or 0)}
