"""Contract tests of the vocabulary accumulators (no pipeline), and ordering rules."""

from __future__ import annotations

import collections
import itertools
import json
import pickle
import random

import pyarrow as pa
import pytest

from beam_prep.analyzers import vocab as voc

CASES = [
    ["b", "a", "b", "c", "c", "c"],
    ["Ξ", "ξ", "Ξ", "日本", "a b", "a b", "é", "é"],
    ["x"] * 5 + ["y"] * 5 + ["z"] * 5,  # all tied
    [],
]


def _reference(tokens: list[str], min_count: int = 1, top_k: int | None = None):
    """Independent reference: Counter + sort by (-count, bytes descending)."""
    counts = collections.Counter(tokens)
    kept = [(t, c) for t, c in counts.items() if c >= min_count and t and not any(
        ch in t for ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")]
    kept.sort(key=lambda tc: (-tc[1], [-b for b in tc[0].encode("utf-8")] + [1]))
    return kept[:top_k] if top_k is not None else kept


def _as_pairs(table: pa.Table) -> list[tuple[str, int]]:
    return list(zip(table.column("token").to_pylist(), table.column("count").to_pylist()))


@pytest.mark.parametrize("spill", [False, True])
@pytest.mark.parametrize("tokens", CASES)
def test_sharded_adds_and_merges_in_any_order_give_the_same_exact_counts(tokens, spill,
                                                                         tmp_path):
    # With spilling on, every merged table goes through an Arrow file.
    fn = voc.VocabularyCombineFn(str(tmp_path) if spill else None, spill_rows=1)
    rng = random.Random(0)
    expected = _reference(tokens)
    for num_shards in (1, 2, 3):
        shards = [tokens[i::num_shards] for i in range(num_shards)]
        accs = []
        for shard in shards:
            acc = fn.create_accumulator()
            for chunk in (shard[: len(shard) // 2], shard[len(shard) // 2:]):
                acc = fn.add_input(acc, voc.count_values(pa.array(chunk, pa.string())))
            accs.append(acc)
        for order in itertools.permutations(range(num_shards)):
            merged = fn.merge_accumulators([accs[i] for i in order])
            out = fn.extract_output(fn.compact(merged))
            assert _as_pairs(voc.sort_vocabulary(out)) == expected
        rng.shuffle(accs)


def test_accumulator_survives_pickling():
    fn = voc.VocabularyCombineFn()
    acc = fn.add_input(fn.create_accumulator(), voc.count_values(pa.array(["a", "b", "a"])))
    acc = pickle.loads(pickle.dumps(acc))
    assert _as_pairs(voc.sort_vocabulary(fn.extract_output(acc))) == [("a", 2), ("b", 1)]


def test_empty_input_gives_an_empty_table():
    fn = voc.VocabularyCombineFn()
    out = fn.extract_output(fn.create_accumulator())
    assert out.num_rows == 0 and out.schema == voc.SCHEMA


def test_ties_are_broken_by_reverse_byte_order_like_tft():
    table = voc.count_values(pa.array(["apple", "Zebra", "zebra", "éclair", "b", "b"]))
    got = voc.sort_vocabulary(table).column("token").to_pylist()
    # b has count 2; the rest tie at 1 and sort by UTF-8 bytes descending:
    # 'é' (0xC3) > 'z' (0x7A) > 'a' (0x61) > 'Z' (0x5A).
    assert got == ["b", "éclair", "zebra", "apple", "Zebra"]


def test_prune_drops_unwritable_before_threshold_and_top_k_and_reports_it():
    tokens = ["a"] * 5 + ["b"] * 4 + ["c"] * 3 + ["d"] + ["has\nnewline"] * 9 + [""] * 7 + [
        "line\u2028sep"] * 2 + ["tab\tok"] * 2
    table = voc.count_values(pa.array(tokens))
    pruned, drops = voc.prune(table, min_count=2, top_k=3)
    assert _as_pairs(voc.sort_vocabulary(pruned)) == [("a", 5), ("b", 4), ("c", 3)]
    assert drops["excluded_unwritable"] == {"tokens": 3, "count": 18}
    assert drops["dropped_min_count"] == {"tokens": 1, "count": 1}
    assert drops["dropped_top_k"] == {"tokens": 1, "count": 2}  # "tab\tok" (count 2)


@pytest.mark.parametrize("top_k", [0, 1, 3, 17, 40, 63, 64, 500])
def test_select_top_k_equals_a_full_sort_at_every_cut(top_k):
    # Few distinct counts, so most cuts fall inside a tie group; several chunks.
    rng = random.Random(top_k)
    tokens = [f"{rng.choice('abcxyzÉ日')}{int(rng.paretovariate(0.9)) % 97}" for _ in range(900)]
    table = voc.count_values(pa.array(tokens))
    chunked = pa.concat_tables([table.slice(0, 20), table.slice(20)])
    kept, rest = voc.select_top_k(chunked, top_k)
    expected = _reference(tokens)[:top_k]
    assert _as_pairs(voc.sort_vocabulary(kept)) == expected
    dropped = len(set(tokens)) - len(expected)
    assert rest == {"tokens": dropped,
                    "count": len(tokens) - sum(c for _, c in expected) if dropped else 0}


@pytest.mark.parametrize("k", [0, 1, 5, 50, 199, 400])
def test_largest_tokens_breaks_shared_prefixes_by_full_bytes(k):
    rng = random.Random(k)
    stems = ["http://example.com/item/", "abcdefgh", "abcdefg", "Ζ", ""]
    tokens = sorted({rng.choice(stems) + rng.choice(["", "a", "ab", "é", "z\x00", "zz"])
                     + str(rng.randrange(30)) for _ in range(300)} | {"", "abcdefgh"})
    rng.shuffle(tokens)
    got = voc.largest_tokens(pa.array(tokens, pa.large_string()), k)
    expected = sorted(tokens, key=lambda t: t.encode(), reverse=True)[:k]
    assert sorted(tokens[i] for i in got) == sorted(expected)


def test_unwritable_mask_on_plain_ascii_flags_only_empty_tokens():
    tokens = pa.array(["a", "", "x y", "~"], pa.large_string())  # no control/non-ASCII byte
    assert voc.unwritable_mask(tokens).to_pylist() == [False, True, False, False]
    mixed = pa.array(["a", "b\x0bc", "d\u2028", "é", "", "tab\tok"], pa.large_string())
    assert voc.unwritable_mask(mixed).to_pylist() == [False, True, True, False, True, False]


def test_partitioned_prune_equals_global_prune():
    rng = random.Random(7)
    tokens = [f"t{int(rng.paretovariate(1.2))}" for _ in range(5000)]
    table = voc.count_values(pa.array(tokens))
    parts = voc.split_by_partition(table, 8)
    assert sum(t.num_rows for _, t in parts) == table.num_rows
    pruned_parts = [voc.prune(t, min_count=2, top_k=10)[0] for _, t in parts]
    merged = voc.sort_vocabulary(voc.merge_tables(pruned_parts)).slice(0, 10)
    assert _as_pairs(merged) == _reference(tokens, min_count=2, top_k=10)


def test_partition_is_stable_across_processes():
    import subprocess
    import sys

    code = ("import pyarrow as pa; from beam_prep.analyzers.vocab import stable_partition;"
            "print(stable_partition(pa.array(['a','b','Ξ','long token']), 16).tolist())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}
    assert len(outs) == 1


def test_document_frequency_counts_rows_not_occurrences():
    table = voc.count_values(pa.array(["a", "a", "b", "a"]), pa.array([0, 0, 0, 1]))
    got = {t: (c, d) for t, c, d in zip(*(table.column(k).to_pylist()
                                           for k in ("token", "count", "df")))}
    assert got == {"a": (3, 2), "b": (1, 1)}


def test_files_round_trip_any_token():
    tokens = ['quote"d', "back\\slash", "tab\there", "ctrl\x01", "Ξ日本", "sp ace", "\u2027"]
    table = voc.sort_vocabulary(voc.count_values(pa.array(tokens + ["sp ace"])))
    text = voc.vocabulary_text(table.column("token").combine_chunks()).decode("utf-8")
    assert text.split("\n")[:-1] == table.column("token").to_pylist()
    lines = voc.counts_jsonl(table, with_df=True).decode("utf-8").splitlines()
    parsed = [json.loads(line) for line in lines]
    assert parsed == [[t, c, 0] for t, c in _as_pairs(table)]
    assert voc.vocabulary_text(pa.array([], pa.large_string())) == b""


@pytest.mark.parametrize("runs", [3, 400])
def test_sort_breaks_ties_on_full_bytes_when_the_first_8_bytes_agree(runs):
    rng = random.Random(runs)
    tokens = []
    for r in range(runs):
        stem = f"https://{r:04d}"  # 12 bytes: the first 8 agree across every run
        tokens += [stem + rng.choice(["", "a", "b", "ab", "é", "\x00"]) + str(i)
                   for i in range(rng.randint(1, 4))]
    tokens += ["a", "a\x00", "a\x00\x00", "ab"]  # equal zero-padded prefixes
    tokens = sorted(set(tokens))
    counted = [t for t in tokens for _ in range(rng.choice([1, 1, 2]))]
    rng.shuffle(counted)
    table = voc.count_values(pa.array(counted, pa.large_string()))
    assert _as_pairs(voc.sort_vocabulary(table)) == _reference(counted)


@pytest.mark.parametrize("with_df", [False, True])
def test_counts_sidecar_is_compact_json_per_line(with_df):
    tokens = ["plain", "sp ace", "Ξ日本", "ünï", "7"]
    table = pa.Table.from_arrays(
        [pa.array(tokens, pa.large_string()), pa.array([5, 4, 3, 2, 1]),
         pa.array([2, 2, 1, 1, 0])], schema=voc.SCHEMA)
    expected = "".join(
        json.dumps([t, c, d] if with_df else [t, c], ensure_ascii=False,
                   separators=(",", ":")) + "\n"
        for t, c, d in zip(tokens, [5, 4, 3, 2, 1], [2, 2, 1, 1, 0]))
    assert voc.counts_jsonl(table, with_df=with_df) == expected.encode("utf-8")


def test_reserved_tokens_are_dropped_and_counted():
    table = voc.count_values(pa.array(["[UNK]"] * 4 + ["a"] * 2 + ["b"]))
    pruned, drops = voc.prune(table, min_count=1, top_k=None, reserved=("[UNK]",))
    assert _as_pairs(voc.sort_vocabulary(pruned)) == [("a", 2), ("b", 1)]
    assert drops["excluded_reserved"] == {"tokens": 1, "count": 4}
    kept, _ = voc.prune(table, min_count=1, top_k=None)
    assert _as_pairs(voc.sort_vocabulary(kept))[0] == ("[UNK]", 4)


def test_a_dictionary_holding_a_string_twice_is_counted_once_per_token():
    # Arrow allows duplicate dictionary entries; the counts must still be per token.
    arr = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1, 0], pa.int32()),
                                         pa.array(["x", "y", "x"]))
    got = dict(_as_pairs(voc.count_chunks([arr])))
    assert got == {"x": 3, "y": 2}


def test_dictionary_chunks_with_nulls_and_different_dictionaries_match_a_counter():
    rng = random.Random(7)
    words = ["a", "bb", "ccc", "日本", "é", ""]
    chunks, plain = [], []
    for n in (0, 1, 50, 300):
        values = [rng.choice(words + [None]) for _ in range(n)]
        plain += [v for v in values if v is not None]
        chunks.append(pa.array(values, pa.string()).dictionary_encode())
    chunks.append(pa.array([None, None], pa.string()).dictionary_encode())  # all null
    got = dict(_as_pairs(voc.count_chunks(chunks)))
    assert got == dict(collections.Counter(plain))


def test_dictionaries_with_narrow_indices_or_null_values_are_counted():
    wide = pa.array([str(i) for i in range(200)])  # longer than int8 can index
    narrow = pa.DictionaryArray.from_arrays(pa.array([0, 1, 1, None], pa.int8()), wide)
    assert dict(_as_pairs(voc.count_chunks([narrow]))) == {"0": 1, "1": 2}
    holed = pa.DictionaryArray.from_arrays(pa.array([0, 1, 1, 2], pa.int32()),
                                           pa.array([None, "b", "c"]))
    assert dict(_as_pairs(voc.count_chunks([holed]))) == {"b": 2, "c": 1}


def test_merged_counts_stay_exact_past_float64_precision():
    big = 2**60 + 1  # not representable in float64
    a = pa.Table.from_arrays([pa.array(["t", "u"], pa.large_string()), pa.array([big, 1]),
                              pa.array([0, 0])], schema=voc.SCHEMA)
    b = pa.Table.from_arrays([pa.array(["t"], pa.large_string()), pa.array([2]),
                              pa.array([0])], schema=voc.SCHEMA)
    assert dict(_as_pairs(voc.merge_tables([a, b]))) == {"t": big + 2, "u": 1}
    small = [voc.count_values(pa.array(["x", "y", "x"])), voc.count_values(pa.array(["y"]))]
    assert dict(_as_pairs(voc.merge_tables(small))) == {"x": 2, "y": 2}


def test_extract_output_merges_spilled_tables_as_it_reads_them(tmp_path, monkeypatch):
    from beam_prep.analyzers.vocab import combine as vocab_combine

    monkeypatch.setattr(vocab_combine, "COMPACT_ROWS", 3)  # a merge every few tables
    rng = random.Random(5)
    batches = [[f"t{rng.randrange(40)}" for _ in range(rng.randrange(1, 30))]
               for _ in range(25)]
    fn = voc.VocabularyCombineFn(str(tmp_path), spill_rows=1)
    accs = [fn.add_input(fn.create_accumulator(), voc.count_values(pa.array(b)))
            for b in batches]
    out = fn.extract_output(fn.merge_accumulators(accs))
    assert _as_pairs(voc.sort_vocabulary(out)) == _reference([t for b in batches for t in b])
