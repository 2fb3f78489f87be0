"""Per-query document chunks, list policies, stable split/shard hashing and run statistics.

A :class:`DocBlock` holds the documents of many queries from one piece of input (columnar).
Every query is assigned to a split and a shard by a hash of its id (BLAKE2b, stable across
processes and machines; all parts of a query land in the same split and shard), so the pipeline
groups blocks by ``(split, shard)``; the blocks of a shard are merged in input order (file,
piece, line) and the list policy turns each query into zero or more lists.

Example:
    >>> plan_lists(5, np.array([0, 1, 0, 0, 0.0]), max_list_size=2, policy="split",
    ...            min_list_size=1, drop_no_positive=False, seed=0, qid="q")[0]
    [array([0, 1]), array([2, 3]), array([4])]
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
class DocBlock:
    """Documents of several queries from one piece of input, columnar, in input order.

    One block is what one input split (byte range of a LETOR file, Parquet row group, whole
    file) contributes to one output ``(split, shard)``; the pipeline moves these few large
    elements instead of one element per query or per document.

    Attributes:
        order: ``(file index, piece index)``: blocks are concatenated in this order, which is
            input order (file, line).
        qid_names: distinct query ids of the block (object array of ``str``).
        qid_codes: int64 ``[n]``: document ``i`` belongs to ``qid_names[qid_codes[i]]``.
        labels: float64 ``[n]``.
        sparse: LETOR features as CSR ``(indptr int64 [n+1], ids int64, values float32)``.
        columns: tabular example features ``{name: per-document values}`` (``None`` = missing).
        context: tabular context features ``{name: per-document values}``; a query takes the
            value of its first document.
    """

    order: tuple[int, int]
    qid_names: np.ndarray
    qid_codes: np.ndarray
    labels: np.ndarray
    sparse: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    columns: dict[str, list[Any]] | None = None
    context: dict[str, list[Any]] | None = None

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, rows: np.ndarray) -> DocBlock:
        """The documents ``rows`` (increasing) as a new block with compact query codes."""
        used, codes = np.unique(self.qid_codes[rows], return_inverse=True)
        sparse = None
        if self.sparse is not None:
            indptr, ids, vals = self.sparse
            idx, new_indptr = csr_rows(indptr, rows)
            sparse = (new_indptr, ids[idx], vals[idx])
        keep = rows.tolist()

        def pick(values: list[Any]) -> list[Any]:
            return [values[i] for i in keep]

        return DocBlock(
            order=self.order, qid_names=self.qid_names[used], qid_codes=codes.astype(np.int64),
            labels=self.labels[rows], sparse=sparse,
            columns=None if self.columns is None else {k: pick(v) for k, v in self.columns.items()},
            context=None if self.context is None else {k: pick(v) for k, v in self.context.items()})


def csr_rows(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value positions and new ``indptr`` of the CSR rows ``rows`` (in the given order)."""
    starts, lens = indptr[rows], indptr[rows + 1] - indptr[rows]
    new_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_indptr[1:])
    idx = np.arange(int(new_indptr[-1]), dtype=np.int64) + np.repeat(starts - new_indptr[:-1], lens)
    return idx, new_indptr


def merge_blocks(blocks: Iterable[DocBlock]) -> DocBlock:
    """Concatenates blocks in input order; query ids get codes in sorted (str) order.

    The result's ``qid_names`` are sorted and distinct, so a stable sort of ``qid_codes`` lists
    the queries in id order with each query's documents in input order.
    """
    blocks = sorted(blocks, key=lambda b: b.order)
    if not blocks:
        return DocBlock((0, 0), np.array([], dtype=object), np.zeros(0, np.int64), np.zeros(0))
    used = [np.unique(b.qid_codes) for b in blocks]  # names without documents are left out
    names = sorted({q for b, u in zip(blocks, used) for q in b.qid_names[u].tolist()})
    code_of = {q: i for i, q in enumerate(names)}
    codes = []
    for b, u in zip(blocks, used):
        table = np.zeros(len(b.qid_names), np.int64)
        table[u] = [code_of[q] for q in b.qid_names[u].tolist()]
        codes.append(table[b.qid_codes])
    first = blocks[0]
    sparse = None
    if first.sparse is not None:
        indptrs, ids, vals, off = [np.zeros(1, np.int64)], [], [], 0
        for b in blocks:
            ip, i, v = b.sparse  # type: ignore[misc]
            indptrs.append(ip[1:] + off)
            off += int(ip[-1])
            ids.append(i)
            vals.append(v)
        sparse = (np.concatenate(indptrs), np.concatenate(ids), np.concatenate(vals))

    def cat(attr: str) -> dict[str, list[Any]] | None:
        if getattr(first, attr) is None:
            return None
        return {k: [x for b in blocks for x in getattr(b, attr)[k]] for k in getattr(first, attr)}

    return DocBlock(order=first.order, qid_names=np.array(names, dtype=object),
                    qid_codes=np.concatenate(codes).astype(np.int64),
                    labels=np.concatenate([b.labels for b in blocks]), sparse=sparse,
                    columns=cat("columns"), context=cat("context"))


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
