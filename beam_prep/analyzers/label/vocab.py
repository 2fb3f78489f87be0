"""The label-aware vocabulary path: label counts in, MI-ranked vocabulary files out.

Features with ``labels`` (beam_prep.spec.label_fields) skip the count-ranked vocabulary path.
The split analysis emits label tables per feature, hash partition and split
(:mod:`~beam_prep.analyzers.label.counts`); here they are summed per (feature, partition)
(``CombinePerKey``), scored (:mod:`~beam_prep.analyzers.label.mutual_info`) and filtered per
partition, then ordered per feature and written:

* ``vocab/<name>.txt``: the tokens, best score first (ties: token bytes descending, as
  TFT's ``Top.Of`` orders ``(score, token)``), the same Keras-readable file as every
  vocabulary: the generated layers and the transform job read it unchanged;
* ``vocab/<name>.counts.jsonl``: ``[token, rows]`` in the same order;
* ``vocab/<name>.mutual_info.jsonl``: ``[token, score, rows]`` in the same order.

Filters, in TFT's order: tokens a line-based file cannot hold are excluded, then
``min_count`` (rows holding the token), ``min_mutual_info`` (TFT's ``frequency_threshold``
with labels), then ``top_k``: each partition keeps its best ``top_k`` (the global best are
among them) and the writer cuts their union. The writer holds the kept tokens of a feature in
memory (all of them without ``top_k``); no worker holds a whole (token, label) table.

Example:
    >>> ranked = rank(table, feature)                              # doctest: +SKIP
    >>> ranked["table"].column("token").to_pylist()[:3]            # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.label import counts as label_counts
from beam_prep.analyzers.label import mutual_info
from beam_prep.analyzers.vocab.write import counts_jsonl, unwritable_mask, vocabulary_text
from beam_prep.io import filesystem as fs
from beam_prep.io.contract import artifacts as layout
from beam_prep.io.contract.label_sidecar import mutual_info_relpath
from beam_prep.spec import Spec
from beam_prep.spec.label_fields import has_labels

__all__ = ["MAX_LISTED_LABELS", "LabeledVocabularies", "rank"]

#: Labels listed one by one in the manifest (``label_rows``); more are only counted.
MAX_LISTED_LABELS = 1000
_NONE = {"tokens": 0, "count": 0}
_EMPTY_SCORED = pa.schema([("token", pa.large_string()), ("score", pa.float64()),
                           ("count", pa.float64())]).empty_table()


def _drop(table: pa.Table, mask: np.ndarray) -> tuple[pa.Table, dict]:
    dropped = {"tokens": int(mask.sum()),
               "count": int(round(float(np.asarray(table.column("count"))[mask].sum())))}
    return table.filter(pa.array(~mask)), dropped


def label_totals(totals: pa.Table, feature: Any) -> dict:
    """Per-label rows, rows without a label and the ``min_diff_from_avg`` used, from the
    totals rows (null token) of a label table."""
    label_rows = {int(k): float(v) for k, v in zip(totals.column("label").to_pylist(),
                                                   totals.column("count").to_pylist())}
    without = label_rows.pop(-1, 0.0)
    min_diff = feature.min_diff_from_avg
    if min_diff is None:
        min_diff = float(mutual_info.recommended_min_diff_from_avg(sum(label_rows.values())))
    return {"labels": label_rows, "rows_without_label": int(without),
            "min_diff_from_avg": float(min_diff)}


def _ordered(scored: pa.Table, top_k: int | None) -> tuple[pa.Table, dict]:
    """Vocabulary order (score descending, token bytes descending), cut at ``top_k``."""
    order = pc.sort_indices(scored, sort_keys=[("score", "descending"),
                                               ("token", "descending")])
    scored = scored.take(order)
    if top_k is None or scored.num_rows <= top_k:
        return scored, dict(_NONE)
    cut = np.zeros(scored.num_rows, bool)
    cut[top_k:] = True
    return _drop(scored, cut)


def score_pairs(pairs: pa.Table, totals: dict, feature: Any) -> tuple[pa.Table, dict]:
    """Scores the (token, label) rows of some tokens (all rows of each), filters them and
    keeps the best ``top_k`` in vocabulary order: the exact top_k of the whole vocabulary is
    among the union of these partial ones.

    Returns:
        ``(token, score, count)`` table and the drops (``excluded_unwritable``,
        ``dropped_min_count``, ``dropped_min_mutual_info``, ``dropped_top_k``).
    """
    grouped = pairs.group_by("token").aggregate([("count", "sum")])
    tokens = grouped.column("token").combine_chunks()
    token_index = pc.index_in(pairs.column("token"), value_set=tokens).to_numpy()
    labels = pairs.column("label").to_numpy()
    counts = pairs.column("count").to_numpy()
    x = np.bincount(token_index, weights=counts, minlength=len(tokens))
    joint = {int(j): np.bincount(token_index[labels == j], weights=counts[labels == j],
                                 minlength=len(tokens)) for j in np.unique(labels)}
    scores = mutual_info.scores(x, joint, totals["labels"],
                                min_diff_from_avg=totals["min_diff_from_avg"],
                                adjusted=feature.adjusted_mutual_info)
    scored = pa.table({"token": tokens.cast(pa.large_string()),
                       "score": pa.array(scores, pa.float64()),
                       "count": pa.array(x, pa.float64())})
    drops = {}
    scored, drops["excluded_unwritable"] = _drop(
        scored, np.asarray(unwritable_mask(scored.column("token")), dtype=bool))
    scored, drops["dropped_min_count"] = _drop(
        scored, np.asarray(scored.column("count")) < feature.min_count)
    threshold = -np.inf if feature.min_mutual_info is None else feature.min_mutual_info
    scored, drops["dropped_min_mutual_info"] = _drop(
        scored, ~(np.asarray(scored.column("score")) >= threshold))
    scored, drops["dropped_top_k"] = _ordered(scored, feature.top_k)
    return scored, drops


def _sum_drops(parts: list[dict]) -> dict:
    keys = ("excluded_unwritable", "dropped_min_count", "dropped_min_mutual_info",
            "dropped_top_k")
    return {k: {f: sum(d.get(k, _NONE)[f] for d in parts) for f in ("tokens", "count")}
            for k in keys}


def merge_scored(parts: list[tuple[pa.Table, dict]], top_k: int | None) -> tuple[pa.Table, dict]:
    """The vocabulary from partial results of disjoint tokens: ordered, cut at ``top_k``."""
    tables = [t for t, _ in parts if t.num_rows]
    merged = pa.concat_tables(tables) if tables else _EMPTY_SCORED
    merged, cut = _ordered(merged, top_k)
    return merged, _sum_drops([d for _, d in parts] + [{"dropped_top_k": cut}])


def rank(table: pa.Table, feature: Any) -> dict:
    """Scores, filters and orders one feature's whole summed label table (one partition).

    Returns:
        ``{"table": (token, score, count) in vocabulary order, "drops": {...},
        "labels": {label: rows}, "rows_without_label": int, "min_diff_from_avg": float}``.
    """
    is_total = pc.is_null(table.column("token")).to_numpy(zero_copy_only=False)
    totals = label_totals(table.filter(pa.array(is_total)), feature)
    scored, drops = merge_scored([score_pairs(table.filter(pa.array(~is_total)), totals,
                                              feature)], feature.top_k)
    return {"table": scored, "drops": drops, **totals}


def _write(path: str, body: bytes) -> dict:
    fs.write_bytes(path, body)
    return {"sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}


def label_stats(ranked: dict, feature: Any) -> dict:
    """The ``stats.mutual_info`` entry of the manifest (see docs/artifacts.md).

    Example:
        >>> label_stats({"labels": {0: 3.0, 1: 1.0}, "rows_without_label": 0,
        ...              "min_diff_from_avg": 2.0, "drops": {}},
        ...             StringFeature("a", labels="y"))["label_rows"]  # doctest: +SKIP
        {'0': 3, '1': 1}
    """
    listed = sorted(ranked["labels"].items())
    stats = {"label_column": feature.labels, "adjusted": bool(feature.adjusted_mutual_info),
             "min_diff_from_avg": ranked["min_diff_from_avg"],
             "min_mutual_info": feature.min_mutual_info,
             "rows": int(round(sum(ranked["labels"].values()))),
             "rows_without_label": ranked["rows_without_label"],
             "distinct_labels": len(listed),
             "dropped_min_mutual_info": ranked["drops"].get("dropped_min_mutual_info", _NONE)}
    if len(listed) <= MAX_LISTED_LABELS:
        stats["label_rows"] = {str(k): int(round(v)) for k, v in listed}
    return stats


class _ScorePartition(beam.DoFn):
    """``((feature, partition), summed pairs)`` → ``(feature, (partition, scored, drops))``,
    with the feature's label totals as a side input."""

    def __init__(self, spec_dict: dict) -> None:
        self._spec_dict = spec_dict

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)

    def process(self, kv: tuple[tuple[str, int], pa.Table], totals: dict):
        (name, part), pairs = kv
        feature = self._spec.feature(name)
        yield name, (part, *score_pairs(pairs, label_totals(totals[name], feature), feature))


class _WriteLabeledVocabulary(beam.DoFn):
    """(feature, its scored partitions) → the three files; yields the vocab_meta entry."""

    def __init__(self, output_dir: str, spec_dict: dict) -> None:
        self._out = output_dir
        self._spec_dict = spec_dict

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)

    def process(self, kv: tuple[str, Iterable[tuple[int, pa.Table, dict]]], totals: dict):
        name, parts = kv
        feature = self._spec.feature(name)
        parts = sorted(parts, key=lambda p: p[0])
        t, drops = merge_scored([(table, d) for _, table, d in parts], feature.top_k)
        ranked = {"table": t, "drops": drops, **label_totals(totals[name], feature)}
        tokens = t.column("token").combine_chunks()
        rows = pc.cast(pc.round(t.column("count")), pa.int64())
        counts = pa.table({"token": tokens, "count": rows})
        scores = pa.table({"token": tokens, "count": t.column("score"), "df": rows})
        rels = {"vocabulary": layout.vocabulary_relpath(name),
                "counts": layout.counts_relpath(name),
                "mutual_info": mutual_info_relpath(name)}
        bodies = {"vocabulary": vocabulary_text(tokens),
                  "counts": counts_jsonl(counts, with_df=False),
                  "mutual_info": counts_jsonl(scores, with_df=True)}  # [token, score, rows]
        files = {role: {"path": rel, **_write(fs.join(self._out, rel), bodies[role])}
                 for role, rel in rels.items()}
        drops = {k: v for k, v in ranked["drops"].items() if k != "dropped_min_mutual_info"}
        yield name, {"files": files, "vocabulary_size": t.num_rows,
                     "kept_count": int(pc.sum(rows).as_py() or 0), "drops": drops,
                     "mutual_info": label_stats(ranked, feature)}


class LabeledVocabularies(beam.PTransform):
    """``((feature, partition), label table)`` per split → ``(feature, vocab_meta entry)``
    per labeled feature (a feature with no value at all still gets its empty files).

    Partition -1 holds the per-label row totals (null token); the others hold the
    (token, label) rows of the tokens hashed to them
    (:func:`~beam_prep.analyzers.label.counts.partitioned`). Each partition is summed
    (``CombinePerKey``) and scored on its own with the totals as a side input, keeping its
    best ``top_k``; one worker per feature then orders the union and writes the files, so
    no worker holds a whole (token, label) table.

    Args:
        spec: The spec.
        output_dir: The artifact (staging) directory.
    """

    def __init__(self, spec: Spec, output_dir: str) -> None:
        super().__init__()
        self._spec = spec
        self._out = output_dir

    def expand(self, tables: beam.PCollection) -> beam.PCollection:
        names = [f.name for f in self._spec.features if has_labels(f)]
        spec_dict = self._spec.to_dict()
        p = tables.pipeline
        seeds = p | "EveryLabelTotal" >> beam.Create(
            [((name, -1), label_counts.empty_table()) for name in names], reshuffle=False)
        summed = ((tables, seeds)
                  | "WithEmptyLabelTotals" >> beam.Flatten()
                  | "SumLabelCounts" >> beam.CombinePerKey(label_counts.LabelCountsCombineFn()))
        totals = beam.pvalue.AsDict(
            summed
            | "LabelTotals" >> beam.Filter(lambda kv: kv[0][1] < 0)
            | "ByFeature" >> beam.Map(lambda kv: (kv[0][0], kv[1])))
        empty = p | "EveryLabeledVocabulary" >> beam.Create(
            [(name, (-1, _EMPTY_SCORED, {})) for name in names], reshuffle=False)
        scored = (summed
                  | "LabelPartitions" >> beam.Filter(lambda kv: kv[0][1] >= 0)
                  | "ScorePartitions" >> beam.ParDo(_ScorePartition(spec_dict), totals=totals))
        return ((scored, empty)
                | "WithEmptyVocabularies" >> beam.Flatten()
                | "GroupScoredByFeature" >> beam.GroupByKey()
                | "WriteLabeledVocabularies" >> beam.ParDo(
                    _WriteLabeledVocabulary(self._out, spec_dict), totals=totals))
