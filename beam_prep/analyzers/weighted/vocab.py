"""Weighted vocabularies: pruning and the files (TFT ``weights=``).

A token's weighted count is the sum of the weights of its occurrences: in a list or text
feature a token occurring twice in a row counts that row's weight twice (TFT's
``tft.vocabulary(x, weights=w)`` with ``w`` broadcast to ``x``), so all weights 1 give the
unweighted counts. Order as TFT: weighted count descending, then token bytes descending;
``min_count`` drops tokens whose weighted count is below it (TFT's ``frequency_threshold``
compared with the weighted count: ``min_count: 0`` keeps every token, even one whose
weights are all 0).

Counts are exact until each token's one final rounding (:mod:`vocab.weights`), and every
statistic written (kept and dropped totals) is an exact sum of the written counts
(:func:`~beam_prep.analyzers.exact_sums.exact_sums`), so the files and the manifest are the
same bytes whatever the batches, splits, partitions and merge order. The sidecar's counts
are JSON numbers (shortest round-trip form: ``2.5``, ``3``, ``1e+20``).

They are counted per split by the vocabulary accumulator with weights as its optional
input (:class:`~beam_prep.analyzers.vocab.split.SplitVocabulary`, ``weighted=True``).

Example:
    >>> import pyarrow as pa
    >>> t = pa.table({"token": ["a", "b"], "count": [0.5, 2.0], "df": [0, 0]})
    >>> kept, drops = prune_weighted(t, min_count=1.0, top_k=None)
    >>> kept.column("token").to_pylist(), drops["dropped_min_count"]["tokens"]
    (['b'], 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.exact_sums import SUM_SHIFT, exact_sum, ratio_to_float
from beam_prep.analyzers.vocab.merge import merge_runs
from beam_prep.analyzers.vocab.topk import select_top_k, sort_vocabulary
from beam_prep.analyzers.vocab.write import counts_jsonl, unwritable_mask, vocabulary_text
from beam_prep.io import filesystem as fs

__all__ = ["exact_total", "prune_weighted", "to_float", "write_weighted_files"]


def exact_total(table: pa.Table) -> int:
    """Σ of the ``count`` column exactly, in units of ``2**-SUM_SHIFT`` (order-free)."""
    if table.num_rows == 0:
        return 0
    return exact_sum(table.column("count").to_numpy())


def to_float(total: int) -> float:
    """An exact total of :func:`exact_total` as the nearest float64.

    Example:
        >>> to_float(exact_total(pa.table({"count": [0.1, 0.2]})))
        0.30000000000000004
    """
    return ratio_to_float(total, 1 << SUM_SHIFT)


def _summary(table: pa.Table) -> dict[str, int]:
    return {"tokens": table.num_rows, "count": exact_total(table)}


def _split_off(table: pa.Table, mask: pa.Array) -> tuple[pa.Table, pa.Table]:
    if not pc.any(mask).as_py():
        return table, table.slice(0, 0)
    return table.filter(pc.invert(mask)), table.filter(mask)


def prune_weighted(table: pa.Table, *, min_count: float, top_k: int | None,
                   reserved: tuple[str, ...] = ()) -> tuple[pa.Table, dict]:
    """Drops unwritable and reserved tokens, then weighted counts below ``min_count``, then
    keeps the first ``top_k`` (exact on a hash partition, as the unweighted prune).

    Returns:
        (pruned table sorted in vocabulary order, drop statistics as ``{tokens, count}``
        with ``count`` an exact total of :func:`exact_total`; ``pruned`` summarises the
        rows kept).
    """
    table, excluded = _split_off(table, unwritable_mask(table.column("token")))
    reserved_rows = table.slice(0, 0)
    if reserved:
        table, reserved_rows = _split_off(table, pc.is_in(
            table.column("token"), pa.array(list(reserved), pa.large_string())))
    table, below = _split_off(table, pc.less(table.column("count"), float(min_count)))
    before = _summary(table)
    table, _ = select_top_k(table, top_k)
    kept = _summary(table)
    top = {k: before[k] - kept[k] for k in kept}
    return sort_vocabulary(table), {
        "excluded_unwritable": _summary(excluded), "excluded_reserved": _summary(reserved_rows),
        "dropped_min_count": _summary(below), "dropped_top_k": top, "pruned": kept}


def write_weighted_files(runs: Sequence[Any], vocab_path: str, counts_path: str, *,
                         top_k: int | None, temp_dir: str | None = None) -> dict:
    """Merges sorted weighted runs (disjoint tokens) into the ``.txt`` and its sidecar.

    Returns:
        ``{"vocabulary": (sha256, bytes), "counts": (sha256, bytes), "kept": {tokens,
        count}, "dropped_top_k": {tokens, count}, "first": the first line's token or None}``
        (counts as exact totals).
    """
    vocab, counts = fs.HashingWriter.create(vocab_path), fs.HashingWriter.create(counts_path)
    kept = {"tokens": 0, "count": 0}
    written: list[pa.Table] = []
    first = None
    for chunk in merge_runs(runs, temp_dir=temp_dir):
        if top_k is not None and kept["tokens"] + chunk.num_rows > top_k:
            chunk = chunk.slice(0, top_k - kept["tokens"])
        if first is None and chunk.num_rows:
            first = chunk.column("token")[0].as_py()  # the most frequent (impute)
        vocab.write(vocabulary_text(chunk.column("token").combine_chunks()))
        counts.write(counts_jsonl(chunk, with_df=False))
        kept["tokens"] += chunk.num_rows
        written.append(chunk.select(["count"]))
        if top_k is not None and kept["tokens"] >= top_k:
            break
    kept["count"] = sum(exact_total(t) for t in written)
    return {"vocabulary": vocab.close(), "counts": counts.close(), "kept": kept,
            "first": first}


def add_stats(a: dict, b: dict) -> dict:
    """Sums two drop-statistics dicts (exact integers)."""
    return {k: {f: a.get(k, {}).get(f, 0) + b.get(k, {}).get(f, 0) for f in ("tokens", "count")}
            for k in set(a) | set(b)}


def finish_stats(drops: dict) -> dict:
    """Drop statistics with each exact ``count`` total as its float64 (for the manifest)."""
    return {k: {"tokens": int(v["tokens"]), "count": to_float(v["count"])}
            for k, v in sorted(drops.items())}
