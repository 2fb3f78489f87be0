"""Cache entries carry each token's partition hash; replay partitions without re-hashing."""

from __future__ import annotations

import pyarrow as pa
import pytest

from beam_prep.analyzers.cache import store
from beam_prep.analyzers.vocab.count import SCHEMA
from beam_prep.analyzers.vocab.partition import split_by_partition, token_hashes

TOKENS = ["", "a", "b", "item_1", "item_12345678", "ü-tf", "x" * 40, "same", "z", "längeres wort"]


def _table(tokens: list[str]) -> pa.Table:
    n = len(tokens)
    return pa.table({"token": pa.array(tokens, pa.large_string()),
                     "count": pa.array(range(1, n + 1), pa.int64()),
                     "df": pa.array([1] * n, pa.int64())}, schema=SCHEMA)


def _stored(tmp_path, tables: list[pa.Table]) -> list[pa.Table]:
    result = store.SplitResult({"item": tables}, None, {"rows_read": 1, "rows_rejected": 0}, [])
    store.write_entry(str(tmp_path), "ab" * 32, result, {})
    return list(store.vocab_tables(store.entry_dir(str(tmp_path), "ab" * 32), "vocab-000.arrow"))


def test_stored_hash_column_is_token_hash(tmp_path):
    [stored] = _stored(tmp_path, [_table(TOKENS)])
    assert stored.schema == store.ENTRY_SCHEMA
    expected = token_hashes(pa.array(TOKENS, pa.large_string())).tolist()
    assert stored.column("hash").to_pylist() == expected


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64])
def test_partitions_of_matches_rehashing(tmp_path, n):
    tables = [_table(TOKENS), _table(TOKENS[3:] + ["q", "r"]), _table([])]
    stored = _stored(tmp_path, tables)
    for original, entry in zip([t for t in tables if t.num_rows], stored, strict=False):
        got = store.partitions_of(entry, n)
        want = split_by_partition(original, n)
        assert [p for p, _ in got] == [p for p, _ in want]
        for (_, g), (_, w) in zip(got, want, strict=True):
            assert g.schema == SCHEMA
            assert g.equals(w)


def test_table_of_one_partition_is_returned_whole(tmp_path):
    original = _table(TOKENS)
    per_partition = [t for _, t in split_by_partition(original, 3)]
    stored = _stored(tmp_path, per_partition)
    for entry, want in zip(stored, split_by_partition(original, 3), strict=True):
        [(part, got)] = store.partitions_of(entry, 3)
        assert part == want[0]
        assert got.equals(want[1])
