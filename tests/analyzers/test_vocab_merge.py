"""The streamed k-way merge of sorted runs and the vocabulary files it writes.

The oracle is plain Python: ``sorted`` on (count, UTF-8 bytes) descending, ``json.dumps`` per
line, ``hashlib`` on the joined lines; never the library's own sort or writers.
"""

from __future__ import annotations

import hashlib
import json
import random

import pyarrow as pa
import pytest

from beam_prep.analyzers.vocab import merge as vm
from beam_prep.analyzers.vocab.count import table_from_counts
from beam_prep.analyzers.vocab.partition import stable_partition
from beam_prep.analyzers.vocab.topk import sort_vocabulary


def _vocab(n: int, seed: int) -> dict[str, tuple[int, int]]:
    """Distinct tokens with many count ties and long shared prefixes; token -> (count, df)."""
    rng = random.Random(seed)
    alphabet = ["a", "b", "é", "日", '"', "\\", "z", "\x01"]
    out: dict[str, tuple[int, int]] = {}
    while len(out) < n:
        prefix = rng.choice(["", "http://www.example.com/", "ab", "abcdefgh"])
        tok = prefix + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        count = rng.choice([1, 1, 1, 2, 2, 3, 7, rng.randint(1, 50)])
        out[tok] = (count, rng.randint(0, count))
    return out


def _oracle_order(vocab: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(vocab, key=lambda t: (vocab[t][0], t.encode("utf-8")), reverse=True)


def _runs(vocab: dict[str, tuple[int, int]], parts: int) -> list[pa.Table]:
    """Hash partitions of the vocabulary, each sorted (as PrunePartitions emits them)."""
    tokens = list(vocab)
    part = stable_partition(pa.array(tokens, pa.large_string()), parts).tolist()
    runs = []
    for p in range(parts):
        mine = [t for t, q in zip(tokens, part) if q == p]
        runs.append(sort_vocabulary(table_from_counts(
            pa.array(mine, pa.large_string()), pa.array([vocab[t][0] for t in mine], pa.int64()),
            pa.array([vocab[t][1] for t in mine], pa.int64()))))
    return runs


@pytest.mark.parametrize("parts,batch_rows,fan_in", [
    (1, 5, 64), (3, 7, 64), (16, 3, 64), (16, 8, 2), (16, 50, 3), (5, 2, 2)])
def test_merge_gives_the_oracle_order(tmp_path, parts, batch_rows, fan_in):
    vocab = _vocab(150, seed=parts)
    runs = _runs(vocab, parts)
    got = [t for chunk in vm.merge_runs(runs, batch_rows=batch_rows, fan_in=fan_in,
                                        temp_dir=str(tmp_path / "m"))
           for t in chunk.column("token").to_pylist()]
    assert got == _oracle_order(vocab)


def test_spilled_and_in_memory_runs_merge_alike(tmp_path):
    vocab = _vocab(120, seed=9)
    runs = _runs(vocab, 4)
    mixed = [vm.write_run(r, str(tmp_path / f"r{i}.arrow"), batch_rows=8) if i % 2 else r
             for i, r in enumerate(runs)]
    got = [t for chunk in vm.merge_runs(mixed, batch_rows=5)
           for t in chunk.column("token").to_pylist()]
    assert got == _oracle_order(vocab)


def test_many_runs_without_a_temp_dir_are_refused():
    runs = _runs(_vocab(50, seed=1), 5)
    with pytest.raises(ValueError, match="temp_dir"):
        list(vm.merge_runs(runs, fan_in=2))


def _expected_files(vocab, top_k, with_df):
    order = _oracle_order(vocab)
    kept = order if top_k is None else order[:top_k]
    txt = "".join(t + "\n" for t in kept).encode("utf-8")
    side = "".join(json.dumps([t, vocab[t][0], *([vocab[t][1]] if with_df else [])],
                              ensure_ascii=False, separators=(",", ":")) + "\n"
                   for t in kept).encode("utf-8")
    dropped = order[len(kept):]
    return txt, side, {"tokens": len(kept), "count": sum(vocab[t][0] for t in kept)}, \
        {"tokens": len(dropped), "count": sum(vocab[t][0] for t in dropped)}


@pytest.mark.parametrize("top_k", [None, 0, 1, 37, 149, 150, 1000])
@pytest.mark.parametrize("with_df", [False, True])
def test_files_are_the_oracle_bytes_with_top_k_cut_through_ties(tmp_path, top_k, with_df):
    vocab = _vocab(150, seed=3)
    runs = [vm.write_run(r, str(tmp_path / f"p{i}.arrow"), batch_rows=16)
            for i, r in enumerate(_runs(vocab, 6))]
    out = vm.write_vocabulary_files(runs, str(tmp_path / "v.txt"), str(tmp_path / "v.jsonl"),
                                    top_k=top_k, with_df=with_df, batch_rows=9, fan_in=4,
                                    temp_dir=str(tmp_path / "merge"))
    txt, side, kept, dropped = _expected_files(vocab, top_k, with_df)
    assert (tmp_path / "v.txt").read_bytes() == txt
    assert (tmp_path / "v.jsonl").read_bytes() == side
    assert out["vocabulary"] == (hashlib.sha256(txt).hexdigest(), len(txt))
    assert out["counts"] == (hashlib.sha256(side).hexdigest(), len(side))
    assert out["kept"] == kept
    assert out["dropped_top_k"] == dropped


def test_ties_at_the_top_k_cut_go_by_token_bytes(tmp_path):
    # Hand example: four tokens of count 2 across two runs; top_k=3 keeps the three
    # largest by UTF-8 bytes: "é" (0xC3 0xA9) > "b" > "ab" > "a".
    a = sort_vocabulary(table_from_counts(pa.array(["a", "é"]), pa.array([2, 2])))
    b = sort_vocabulary(table_from_counts(pa.array(["ab", "b", "top"]), pa.array([2, 2, 9])))
    out = vm.write_vocabulary_files([a, b], str(tmp_path / "v.txt"), str(tmp_path / "c.jsonl"),
                                    top_k=3, with_df=False, batch_rows=1)
    assert (tmp_path / "v.txt").read_text(encoding="utf-8") == "top\né\nb\n"
    assert out["dropped_top_k"] == {"tokens": 2, "count": 4}


def test_no_runs_give_empty_files(tmp_path):
    empty = table_from_counts(pa.array([], pa.large_string()), pa.array([], pa.int64()))
    out = vm.write_vocabulary_files([empty], str(tmp_path / "v.txt"), str(tmp_path / "c.jsonl"),
                                    top_k=5, with_df=False)
    assert (tmp_path / "v.txt").read_bytes() == b""
    assert (tmp_path / "c.jsonl").read_bytes() == b""
    assert out["vocabulary"] == (hashlib.sha256(b"").hexdigest(), 0)
    assert out["kept"] == {"tokens": 0, "count": 0}
    assert out["dropped_top_k"] == {"tokens": 0, "count": 0}
