"""Per-list and per-document statistics of make-elwc (stats.json), against oracles computed
here with plain Python from the input lines (no numpy, no beam_prep code in the oracle)."""

from __future__ import annotations

import collections
import json
import os
import random

import numpy as np
import pytest
from beam_prep.pipelines import make_elwc

from beam_prep.ranking.data.list_stats import (
    LIST_STATS_FIELDS,
    RELEVANT_CAP,
    per_list_stats,
)
from beam_prep.ranking.data.lists import add_counts


def _split_sizes(n: int, cap: int) -> list[int]:
    """Sizes of the consecutive parts of the split policy: ceil(n / cap) parts, sizes
    differing by at most one, the larger ones first."""
    if n <= cap:
        return [n]
    k = -(-n // cap)
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def _letor_lines(seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for q in range(40):
        n = rng.choice([1, 2, 3, 5, 9, 14])
        all_zero = q % 7 == 0
        for _ in range(n):
            label = 0 if all_zero else rng.choice([0, 0, 1, 2, 4])
            ids = sorted(rng.sample(range(1, 9), rng.randint(0, 8)))
            feats = " ".join(f"{i}:{rng.randint(0, 9) / 4}" for i in ids)
            if ids and rng.random() < 0.2:
                feats += f" {ids[0]}:7"  # duplicate id: last value wins, still one feature
            lines.append(f"{label} qid:q{q:02d} {feats}".rstrip() + "\n")
    return lines


def _letor_oracle(lines: list[str], cap: int) -> dict[str, dict[str, int]]:
    queries: dict[str, list[tuple[float, set[int]]]] = {}
    for line in lines:
        tok = line.split()
        ids = {int(t.split(":")[0]) for t in tok[2:]}
        queries.setdefault(tok[1][4:], []).append((float(tok[0]), ids))
    relevant: collections.Counter[str] = collections.Counter()
    top: collections.Counter[str] = collections.Counter()
    present: collections.Counter[str] = collections.Counter()
    seen: set[int] = set()
    for docs in queries.values():
        start = 0
        for size in _split_sizes(len(docs), cap):
            part = docs[start:start + size]
            start += size
            relevant[str(sum(lab > 0 for lab, _ in part))] += 1
            best = max(lab for lab, _ in part)
            top[str(int(best)) if best == int(best) else repr(best)] += 1
        for _, ids in docs:
            seen |= ids
            for i in ids:
                present[f"f{i}"] += 1
    return {"relevant_per_list_histogram": dict(relevant),
            "max_label_per_list_histogram": dict(top),
            "example_features_present": {f"f{i}": present[f"f{i}"] for i in sorted(seen)},
            "context_features_present": {}}


def test_letor_per_list_stats_match_a_line_by_line_oracle(tmp_path):
    lines = _letor_lines(11)
    (tmp_path / "a.txt").write_text("".join(lines[:70]))
    (tmp_path / "b.txt").write_text("".join(lines[70:]))  # a query may span both files
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(tmp_path / "*.txt"), "--input_format", "letor",
                   "--output", out, "--max_list_size", "4", "--num_shards", "3",
                   "--splits", "train:0.5,test:0.5", "--no_report", "--quiet"])
    stats = json.load(open(os.path.join(out, "stats.json")))
    expected = _letor_oracle(lines, 4)
    for key in LIST_STATS_FIELDS:
        assert stats[key] == expected[key], key
    assert stats["relevant_per_list_histogram"]["0"] >= 6  # the all-zero queries' lists
    assert sum(stats["relevant_per_list_histogram"].values()) == stats["lists"]
    assert stats["policy"]["input_format"] == "letor"


def test_tabular_presence_counts_written_documents_and_lists(tmp_path):
    rows = [
        {"qid": "a", "label": 1, "ctx": "x", "doc": "d1", "score": 0.5},
        {"qid": "a", "label": 0, "ctx": "x", "doc": "d2"},                 # no score
        {"qid": "a", "label": 0, "ctx": "x", "doc": None, "score": 1.0},   # null doc
        {"qid": "b", "label": 0, "doc": "d4", "score": 2.0},               # no ctx
        {"qid": "b", "label": 0, "ctx": "y", "doc": "d5", "score": None},
        {"qid": "c", "label": 3, "ctx": None, "doc": "d6", "score": 1.5},
    ]
    (tmp_path / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(tmp_path / "x.jsonl"), "--input_format", "jsonl",
                   "--output", out, "--max_list_size", "2", "--list_policy", "truncate",
                   "--context_columns", "ctx", "--no_report", "--quiet"])
    stats = json.load(open(os.path.join(out, "stats.json")))
    # Oracle: the first two rows of each query are written (truncate to 2).
    by_q: dict[str, list[dict]] = {}
    for r in rows:
        by_q.setdefault(r["qid"], []).append(r)
    written = [q[:2] for q in by_q.values()]
    docs = [r for lst in written for r in lst]
    assert stats["example_features_present"] == {
        c: sum(r.get(c) is not None for r in docs) for c in ("doc", "score")}
    assert stats["context_features_present"] == {
        "ctx": sum(lst[0].get("ctx") is not None for lst in written)}
    assert stats["relevant_per_list_histogram"] == dict(collections.Counter(
        str(sum(r["label"] > 0 for r in lst)) for lst in written))
    assert stats["max_label_per_list_histogram"] == dict(collections.Counter(
        str(max(r["label"] for r in lst)) for lst in written))
    assert stats["policy"]["input_format"] == "jsonl"


def _as_lists(labels: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([v for x in labels for v in x], np.float64),
            np.array([len(x) for x in labels], np.int64))


def test_per_list_stats_sharded_and_merged_in_any_order_equal_the_whole():
    rng = random.Random(5)
    lists = [[rng.choice([0.0, 0.0, 1.0, 2.5, 3.0]) for _ in range(rng.randint(1, 30))]
             for _ in range(200)]
    lists.append([1.0] * (RELEVANT_CAP + 40))   # overflow bucket
    lists.append([1.0] * RELEVANT_CAP)
    lists.append([-1.0, 0.0])                   # negative labels are not relevant
    whole = per_list_stats(*_as_lists(lists))
    oracle_rel: collections.Counter[str] = collections.Counter()
    for x in lists:
        r = sum(v > 0 for v in x)
        oracle_rel[f"{RELEVANT_CAP}+" if r >= RELEVANT_CAP else str(r)] += 1
    assert whole["relevant_per_list_histogram"] == dict(oracle_rel)
    assert whole["relevant_per_list_histogram"][f"{RELEVANT_CAP}+"] == 2
    oracle_top = collections.Counter(
        str(int(max(x))) if max(x) == int(max(x)) else repr(max(x)) for x in lists)
    assert whole["max_label_per_list_histogram"] == dict(oracle_top)
    shards = [lists[i::4] for i in range(4)]
    for order in ([0, 1, 2, 3], [3, 1, 0, 2], [2, 3, 1, 0]):
        acc: dict = {}
        for i in order:
            add_counts(acc, per_list_stats(*_as_lists(shards[i])))
        assert acc == whole
    assert per_list_stats(np.zeros(0), np.zeros(0, np.int64)) == {
        "relevant_per_list_histogram": {}, "max_label_per_list_histogram": {}}


@pytest.mark.parametrize("cap", [1, 3])
def test_split_sizes_oracle_agrees_with_the_documented_policy(cap):
    # guards the oracle itself: parts cover n, are consecutive, differ by at most one
    for n in range(1, 12):
        sizes = _split_sizes(n, cap)
        assert sum(sizes) == n and max(sizes) <= cap and max(sizes) - min(sizes) <= 1
