"""Per-query document chunks, list policies, stable split/shard hashing and run statistics.

A :class:`DocChunk` holds the documents of one query found in one input file (columnar). After
GroupByKey the chunks of a query are merged in input order (file index, then line), the list
policy turns the query into zero or more lists, and each list is assigned to a split and a shard
by a hash of the query id (BLAKE2b, stable across processes and machines; all parts of a query
land in the same split and shard).

Example:
    >>> plan_lists(5, np.array([0, 1, 0, 0, 0.0]), max_list_size=2, policy="split",
    ...            min_list_size=1, drop_no_positive=False, seed=0, qid="q")[0]
    [array([0, 1, 2]), array([3, 4])]
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import numpy as np


@dataclasses.dataclass(frozen=True)
class DocChunk:
    """Documents of one query from one input file, in input order.

    Attributes:
        qid: query id (string).
        file_index: index of the file in the sorted input file list.
        line_numbers: 1-based line (LETOR) or row (tabular) number of each document, int64.
        labels: float64 labels.
        sparse: LETOR features as CSR ``(indptr, ids, values)`` or ``None``.
        columns: tabular example features ``{name: per-document values}`` (``None`` = missing).
        context: tabular context features of the query's first row in this file.
    """

    qid: str
    file_index: int
    line_numbers: np.ndarray
    labels: np.ndarray
    sparse: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    columns: dict[str, list[Any]] | None = None
    context: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.labels)


def merge_chunks(chunks: Iterable[DocChunk]) -> DocChunk:
    """Concatenates the chunks of one query in input order (file index, first line)."""
    chunks = sorted(chunks, key=lambda c: (c.file_index, int(c.line_numbers[0]) if len(c) else 0))
    if len(chunks) == 1:
        return chunks[0]
    first = chunks[0]
    sparse = None
    if first.sparse is not None:
        indptrs, ids, vals, base = [np.zeros(1, np.int64)], [], [], 0
        for c in chunks:
            ip, i, v = c.sparse  # type: ignore[misc]
            indptrs.append(ip[1:] + base)
            base += int(ip[-1])
            ids.append(i)
            vals.append(v)
        sparse = (np.concatenate(indptrs), np.concatenate(ids), np.concatenate(vals))
    columns = None
    if first.columns is not None:
        columns = {k: [x for c in chunks for x in c.columns[k]]  # type: ignore[index]
                   for k in first.columns}
    return DocChunk(
        qid=first.qid, file_index=first.file_index,
        line_numbers=np.concatenate([c.line_numbers for c in chunks]),
        labels=np.concatenate([c.labels for c in chunks]),
        sparse=sparse, columns=columns, context=first.context,
    )


def stable_hash(*parts: str) -> int:
    """64-bit BLAKE2b hash of the parts (NUL-separated); identical in every process."""
    h = hashlib.blake2b("\x00".join(parts).encode("utf-8"), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def split_of(qid: str, splits: tuple[tuple[str, float], ...], salt: str) -> str:
    """Split of a query: cumulative fractions over a uniform hash in [0, 1)."""
    u = stable_hash("split", salt, qid) / 2.0**64
    acc = 0.0
    for name, frac in splits:
        acc += frac
        if u < acc:
            return name
    return splits[-1][0]


def shard_of(qid: str, num_shards: int) -> int:
    """Output shard of a query."""
    return stable_hash("shard", qid) % num_shards


def plan_lists(
    n: int, labels: np.ndarray, *, max_list_size: int | None, policy: str, min_list_size: int,
    drop_no_positive: bool, seed: int, qid: str,
) -> tuple[list[np.ndarray], dict[str, int]]:
    """Row indices of the lists written for one query, plus event counters for stats.json.

    ``split`` cuts ``n`` documents into ``ceil(n / max_list_size)`` consecutive parts whose sizes
    differ by at most one; ``truncate`` keeps the first ``max_list_size``; ``sample`` keeps a
    seeded random subset (seed and query id) in input order. Then lists shorter than
    ``min_list_size`` or (optionally) without a positive label are dropped.
    """
    ev: collections.Counter[str] = collections.Counter()
    rows = np.arange(n)
    if max_list_size is not None and n > max_list_size:
        if policy == "split":
            k = -(-n // max_list_size)
            parts = np.array_split(rows, k)
            ev["queries_split"] += 1
            ev["extra_lists_from_split"] += k - 1
        elif policy == "truncate":
            parts = [rows[:max_list_size]]
            ev["queries_truncated"] += 1
            ev["documents_truncated"] += n - max_list_size
        else:
            rng = np.random.default_rng(stable_hash("sample", str(seed), qid))
            parts = [np.sort(rng.choice(n, size=max_list_size, replace=False))]
            ev["queries_sampled"] += 1
            ev["documents_not_sampled"] += n - max_list_size
    else:
        parts = [rows]
    kept = []
    for p in parts:
        if len(p) < min_list_size:
            ev["lists_dropped_too_small"] += 1
            ev["documents_dropped_too_small"] += len(p)
        elif drop_no_positive and not (labels[p] > 0).any():
            ev["lists_dropped_no_positive"] += 1
            ev["documents_dropped_no_positive"] += len(p)
        else:
            kept.append(p)
    return kept, dict(ev)


def add_counts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Adds nested dicts of ints into ``a`` (in place) and returns it."""
    for k, v in b.items():
        if isinstance(v, dict):
            add_counts(a.setdefault(k, {}), v)
        else:
            a[k] = a.get(k, 0) + v
    return a


class CountsCombineFn(beam.CombineFn):
    """Sums nested ``{str: int | dict}`` counters (list statistics, file totals).

    The empty input gives ``{}``; merge order does not matter (addition is commutative).
    """

    def create_accumulator(self) -> dict[str, Any]:
        return {}

    def add_input(self, acc: dict[str, Any], element: dict[str, Any]) -> dict[str, Any]:
        return add_counts(acc, element)

    def merge_accumulators(self, accs: Iterable[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for a in accs:
            add_counts(out, a)
        return out

    def extract_output(self, acc: dict[str, Any]) -> dict[str, Any]:
        return _sorted(acc)


def _sort_key(k: str) -> tuple[int, float, str]:
    try:
        return (0, float(k), k)
    except ValueError:
        return (1, 0.0, k)


def _sorted(d: dict[str, Any]) -> dict[str, Any]:
    """Keys in natural order (numbers numerically, then strings), recursively."""
    return {k: _sorted(v) if isinstance(v, dict) else v
            for k, v in sorted(d.items(), key=lambda kv: _sort_key(kv[0]))}
