"""Exact vocabulary counting with vectorised Arrow accumulators.

A vocabulary *table* is a ``pa.Table`` with columns ``token`` (large_string), ``count``
(int64, occurrences) and ``df`` (int64, documents/rows containing the token). Tables are
merged by concatenation plus an Arrow ``group_by().aggregate(sum)``: no Python loop per
token. Counts are integers, so merges are exact and order-independent.

Ordering (TFT's): count descending, then token UTF-8 bytes descending.

Example:
    >>> import pyarrow as pa
    >>> t = count_values(pa.array(["b", "a", "b", None]))
    >>> sort_vocabulary(t).column("token").to_pylist()
    ['b', 'a']
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.io.artifacts import LINE_BREAK_CHARS

SCHEMA = pa.schema([("token", pa.large_string()), ("count", pa.int64()), ("df", pa.int64())])
_UNWRITABLE_RE = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in LINE_BREAK_CHARS) + "]"
_JSON_UNSAFE_RE = r'["\\\x00-\x1f]'
COMPACT_ROWS = 1 << 20


def empty_table() -> pa.Table:
    """A vocabulary table with no rows."""
    return SCHEMA.empty_table()


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
        tokens = vc.field("values")
        counts = vc.field("counts").cast(pa.int64())
        return pa.Table.from_arrays([tokens, counts, pa.array(np.zeros(len(tokens), np.int64))],
                                    schema=SCHEMA)
    t = pa.table({"token": values, "doc": doc_ids}).filter(pc.is_valid(values))
    if t.num_rows == 0:
        return empty_table()
    per_doc = t.group_by(["token", "doc"]).aggregate([([], "count_all")])
    out = per_doc.group_by("token").aggregate([("count_all", "sum"), ([], "count_all")])
    return pa.Table.from_arrays(
        [out.column("token"), out.column("count_all_sum").cast(pa.int64()),
         out.column("count_all").cast(pa.int64())], schema=SCHEMA)


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
    tokens = dictionary.take(pa.array(present)).cast(pa.large_string())
    return pa.Table.from_arrays([tokens, pa.array(counts[present]),
                                 pa.array(np.zeros(len(present), np.int64))], schema=SCHEMA)


def count_chunks(chunks: list[pa.Array]) -> pa.Table:
    """Counts the non-null values of several flat arrays in one pass.

    Dictionary-encoded chunks are counted on their indices (unless a dictionary holds a
    null); other arrays are hashed once as a chunked array. Integers are counted as integers, then written as decimal strings.
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
    values, counts = values.filter(keep), vc.field("counts").filter(keep)
    return pa.Table.from_arrays([values.cast(pa.large_string()), counts.cast(pa.int64()),
                                 pa.array(np.zeros(len(values), np.int64))], schema=SCHEMA)


_EXACT_FLOAT_SUM = 1 << 53


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


_HASH_MULT = np.uint64(0x100000001B3)  # FNV-1a 64-bit prime, used as polynomial base
_MIX = np.uint64(0xBF58476D1CE4E5B9)


_WORD_MULT = np.uint64(0xC2B2AE3D27D4EB4F)
_BYTE_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [(1 << 64) - 1],
                       dtype=np.uint64)


def _token_hashes(tokens: pa.Array) -> np.ndarray:
    """64-bit hash of each token's UTF-8 bytes, vectorised over the Arrow buffers.

    The bytes are read 8 at a time (little-endian words, zero past the token's end) and
    mixed with the length, one numpy pass per word position over the tokens that reach
    it. Pure numpy (no Python string per token) and the same in every process, unlike
    Python's salted ``hash()``.
    """
    n = len(tokens)
    offsets, data = _string_buffers(tokens)
    lengths = np.diff(offsets)
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[:len(data)] = data
    words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    with np.errstate(over="ignore"):
        h = lengths.astype(np.uint64) * _HASH_MULT
        idx = np.flatnonzero(lengths > 0)
        w = 0
        while idx.size:
            remaining = np.minimum(lengths[idx] - 8 * w, 8)
            word = words[offsets[idx] + 8 * w] & _BYTE_MASKS[remaining]
            g = (h[idx] ^ word) * _WORD_MULT
            h[idx] = g ^ (g >> np.uint64(29))
            w += 1
            idx = idx[lengths[idx] > 8 * w]
        h ^= h >> np.uint64(31)
        h *= _MIX
        h ^= h >> np.uint64(29)
    return h if n else np.zeros(0, dtype=np.uint64)


def stable_partition(tokens: pa.Array, num_partitions: int) -> np.ndarray:
    """Partition index per token from a hash that is the same in every process."""
    if num_partitions == 1 or len(tokens) == 0:
        return np.zeros(len(tokens), dtype=np.int64)
    return (_token_hashes(tokens) % np.uint64(num_partitions)).astype(np.int64)


def split_by_partition(table: pa.Table, num_partitions: int) -> list[tuple[int, pa.Table]]:
    """Splits a table into compact per-partition tables (empty partitions omitted).

    ``take`` (not ``slice``) on purpose: a pickled slice would carry its parent's buffers.
    """
    if table.num_rows == 0:
        return []
    part = stable_partition(table.column("token").combine_chunks(), num_partitions)
    if num_partitions == 1:
        return [(0, table.combine_chunks())]
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(num_partitions + 1))
    return [(p, table.take(pa.array(order[bounds[p]:bounds[p + 1]])))
            for p in range(num_partitions) if bounds[p + 1] > bounds[p]]


_MAX_TIE_RUNS = 256


def sort_vocabulary(table: pa.Table) -> pa.Table:
    """Sorts by count descending, then token bytes descending (TFT's order).

    Sorted on numbers: the tokens' first 8 bytes as big-endian integers, then (stable)
    the counts; runs of tokens with equal count and equal first 8 bytes are then ordered
    by their full bytes, so the result is canonical. When such runs are many (long tokens
    with a common prefix, e.g. URLs), one Arrow sort on (count, token) does it all.
    Measured per 100k Zipf tokens, with the take: 12 ms vs 23.5 ms for the Arrow sort.
    """
    n = table.num_rows
    if n <= 1:
        return table
    table = table.combine_chunks()
    tokens = table.column("token").chunk(0)
    counts = table.column("count").to_numpy()
    keys = _prefix_keys(tokens)
    order = np.argsort(~keys)
    order = order[np.argsort(-counts[order], kind="stable")]
    k, c = keys[order], counts[order]
    same = (k[1:] == k[:-1]) & (c[1:] == c[:-1])
    if same.any():
        edges = np.diff(np.concatenate(([0], same.view(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) + 1
        if len(starts) > _MAX_TIE_RUNS:
            idx = pc.sort_indices(table, sort_keys=[("count", "descending"),
                                                    ("token", "descending")])
            return table.take(idx)
        for a, b in zip(starts.tolist(), ends.tolist()):
            run = order[a:b]
            sub = pc.sort_indices(tokens.take(pa.array(run)), sort_keys=[("", "descending")])
            order[a:b] = run[sub.to_numpy()]
    return table.take(pa.array(order))


def _string_buffers(tokens: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets relative to the first token, data bytes) of a string array, zero-copy."""
    tokens = tokens.cast(pa.large_string())
    n = len(tokens)
    offsets = np.frombuffer(tokens.buffers()[1], dtype=np.int64)[
        tokens.offset:tokens.offset + n + 1]
    data = (np.frombuffer(tokens.buffers()[2], dtype=np.uint8) if tokens.buffers()[2]
            else np.zeros(0, np.uint8))
    return offsets - offsets[0], data[int(offsets[0]):int(offsets[-1])]


def unwritable_mask(tokens: pa.Array) -> pa.Array:
    """Tokens a line-based vocabulary file cannot hold: empty or containing a line break.

    Every line-break character is a control byte (< 0x20) or non-ASCII, so when the
    token bytes hold neither (the common case) only empty tokens need looking at.
    """
    if isinstance(tokens, pa.ChunkedArray):
        tokens = tokens.combine_chunks()
    empty = pc.equal(pc.binary_length(tokens), 0)
    if len(tokens) == 0:
        return empty
    _, data = _string_buffers(tokens)
    if not ((data < 0x20) | (data >= 0x80)).any():
        return empty
    return pc.or_(empty, pc.match_substring_regex(tokens, _UNWRITABLE_RE))


def _prefix_keys(tokens: pa.Array) -> np.ndarray:
    """The first 8 bytes of each token as a big-endian uint64 (zero padded).

    Comparing keys orders tokens as their bytes do, except that tokens sharing their first
    8 bytes compare equal: callers break those ties with a full comparison.
    """
    offsets, data = _string_buffers(tokens)
    lengths = np.minimum(np.diff(offsets), 8)
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[:len(data)] = data
    words = np.ndarray((len(padded) - 7,), dtype=">u8", buffer=padded, strides=(1,))
    keys = words[offsets[:-1]].astype(np.uint64)
    shift = (8 * (8 - lengths)).astype(np.uint64)
    keep = np.where(lengths > 0, ~np.uint64(0) << np.minimum(shift, 63), np.uint64(0))
    keep[shift == 64] = 0
    return keys & keep


def _largest_tokens(tokens: pa.Array, k: int) -> np.ndarray:
    """Indices of the ``k`` tokens with the largest bytes (tokens are distinct)."""
    n = len(tokens)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    keys = _prefix_keys(tokens)
    threshold = np.partition(keys, n - k)[n - k]
    above = np.flatnonzero(keys > threshold)
    ties = np.flatnonzero(keys == threshold)
    need = k - len(above)
    if need < len(ties):
        order = pc.sort_indices(tokens.take(pa.array(ties)),
                                sort_keys=[("", "descending")]).to_numpy()
        ties = ties[order[:need]]
    return np.concatenate([above, ties])


def summary(table: pa.Table) -> dict[str, int]:
    count = pc.sum(table.column("count")).as_py() if table.num_rows else 0
    return {"tokens": int(table.num_rows), "count": int(count or 0)}


def select_top_k(table: pa.Table, top_k: int | None) -> tuple[pa.Table, dict[str, int]]:
    """The ``top_k`` first tokens in vocabulary order (unsorted) and a summary of the rest.

    The vocabulary order (count, then token bytes, both descending) is total because tokens
    are distinct, so the selected set is exact and deterministic. The count of the k-th
    token is found with ``np.partition``; every token above it is kept, and only the tie
    group at that count is ordered by token to fill the remaining places. (A two-key
    ``select_k`` compares strings inside a heap and was 20x slower on Zipf data.)

    Example:
        >>> t = count_values(pa.array(["b", "a", "a", "c", "c", "d"]))
        >>> sorted(select_top_k(t, 2)[0].column("token").to_pylist())
        ['a', 'c']
    """
    n = table.num_rows
    if top_k is None or n <= top_k:
        return table, {"tokens": 0, "count": 0}
    if table.num_rows == 0:
        return empty_table()
    table = table.combine_chunks()
    counts = table.column("count").to_numpy()
    if top_k == 0:
        keep = np.zeros(0, dtype=np.int64)
    else:
        threshold = np.partition(counts, n - top_k)[n - top_k]
        above = np.flatnonzero(counts > threshold)
        ties = np.flatnonzero(counts == threshold)
        need = top_k - len(above)
        if need < len(ties):
            tied = table.column("token").take(pa.array(ties)).combine_chunks()
            ties = ties[_largest_tokens(tied, need)]
        keep = np.sort(np.concatenate([above, ties]))
    kept = table.take(pa.array(keep))
    total = summary(table)
    kept_summary = summary(kept)
    return kept, {"tokens": total["tokens"] - kept_summary["tokens"],
                  "count": total["count"] - kept_summary["count"]}


def prune(table: pa.Table, *, min_count: int, top_k: int | None,
          reserved: tuple[str, ...] = ()) -> tuple[pa.Table, dict]:
    """Drops unwritable tokens, applies ``min_count``, sorts, keeps the first ``top_k``.

    Correct on a hash partition too: the global top_k is contained in the union of the
    partitions' top_k, so pruning each partition first is exact.

    Args:
        table: Counted tokens.
        min_count: Frequency threshold.
        top_k: Maximum tokens kept (None = all).
        reserved: Tokens the Keras layer reserves (``[UNK]`` for TextVectorization),
            dropped and counted in ``excluded_reserved``.

    Returns:
        (pruned table, in no particular order, and drop statistics with
        ``excluded_unwritable``,
        ``excluded_reserved``,
        ``dropped_min_count`` and ``dropped_top_k`` as {tokens, count}).
    """
    def split_off(table: pa.Table, mask: pa.Array) -> tuple[pa.Table, pa.Table]:
        if not pc.any(mask).as_py():  # the common case: no copy of the table
            return table, table.slice(0, 0)
        return table.filter(pc.invert(mask)), table.filter(mask)

    table, excluded = split_off(table, unwritable_mask(table.column("token")))
    if reserved:
        table, reserved_rows = split_off(table, pc.is_in(
            table.column("token"), pa.array(list(reserved), pa.large_string())))
    else:
        reserved_rows = table.slice(0, 0)
    table, dropped_min = split_off(table, pc.less(table.column("count"), min_count))
    table, dropped_top = select_top_k(table, top_k)
    return table, {"excluded_unwritable": summary(excluded),
                   "excluded_reserved": summary(reserved_rows),
                   "dropped_min_count": summary(dropped_min),
                   "dropped_top_k": dropped_top}


def add_drop_stats(a: dict, b: dict) -> dict:
    """Sums two drop-statistics dicts from :func:`prune`."""
    return {k: {f: a.get(k, {}).get(f, 0) + b.get(k, {}).get(f, 0) for f in ("tokens", "count")}
            for k in set(a) | set(b)}


def _concatenated(strings: pa.Array) -> bytes:
    """The bytes of every element of a string array, back to back (its data buffer)."""
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)
    start = int(offsets[strings.offset])
    end = int(offsets[strings.offset + len(strings)])
    return strings.buffers()[2].slice(start, end - start).to_pybytes()


def _lines_bytes(lines: pa.Array) -> bytes:
    """Concatenates ``line + "\\n"`` for every element, straight from the Arrow buffers."""
    if len(lines) == 0:
        return b""
    if isinstance(lines, pa.ChunkedArray):
        lines = lines.combine_chunks()
    return _concatenated(pc.binary_join_element_wise(lines.cast(pa.large_string()),
                                                     _ls("\n"), _ls("")))


def vocabulary_text(tokens: pa.Array) -> bytes:
    """The .txt file body: one token per line, UTF-8, trailing newline (empty if none)."""
    return _lines_bytes(tokens)


def _ls(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def _json_unsafe(tokens: pa.Array) -> pa.Array | None:
    """Per-token mask of tokens needing JSON escapes (quote, backslash, control byte), or
    None when no token does (checked on the raw bytes first: one numpy pass)."""
    _, data = _string_buffers(tokens)
    if not ((data < 0x20) | (data == 0x22) | (data == 0x5C)).any():
        return None
    return pc.match_substring_regex(tokens, _JSON_UNSAFE_RE)


def counts_jsonl(table: pa.Table, *, with_df: bool) -> bytes:
    """The sidecar body: ``[token, count]`` (or ``[token, count, df]``) per line.

    Built by one element-wise join over the Arrow buffers; only tokens that need JSON
    escapes go through ``json.dumps``.
    """
    if table.num_rows == 0:
        return b""
    tokens = table.column("token").combine_chunks().cast(pa.large_string())
    nums = [pc.cast(table.column(c).combine_chunks(), pa.large_string())
            for c in (("count", "df") if with_df else ("count",))]
    unsafe = _json_unsafe(tokens)
    if unsafe is None:
        parts = [_ls('["'), tokens, _ls('",')]
    else:
        quote = _ls('"')
        quoted = pc.binary_join_element_wise(quote, tokens, quote, _ls(""))
        fixed = [json.dumps(t, ensure_ascii=False) if u else None
                 for t, u in zip(tokens.to_pylist(), unsafe.to_pylist())]
        quoted = pc.if_else(unsafe, pa.array(fixed, pa.large_string()), quoted)
        parts = [_ls("["), quoted, _ls(",")]
    for i, num in enumerate(nums):
        parts += ([_ls(",")] if i else []) + [num]
    parts += [_ls("]\n"), _ls("")]
    return _concatenated(pc.binary_join_element_wise(*parts))


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

    def add_input(self, acc: list, item) -> list:
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
        from beam_prep.analyzers.spill import materialize

        return merge_tables([materialize(x) for x in acc])

    def _maybe_compact(self, acc: list, force: bool = False) -> list:
        from beam_prep.analyzers.spill import SpillRef, spill

        refs = [x for x in acc if isinstance(x, SpillRef)]
        tables = [x for x in acc if not isinstance(x, SpillRef)]
        # Amortised: re-merge only when the tail outgrows the already-compacted head.
        if len(tables) > 1 and (force or len(tables) >= 64 or sum(
                t.num_rows for t in tables[1:]) > max(COMPACT_ROWS, tables[0].num_rows)):
            tables = [merge_tables(tables)]
        if self._temp_dir and tables and tables[0].num_rows >= self._spill_rows:
            import uuid

            path = f"{self._temp_dir}/combine/{uuid.uuid4().hex}.arrow"
            refs.append(spill(tables[0], path))
            tables = tables[1:]
        return refs + tables
