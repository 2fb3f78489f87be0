"""The label-aware vocabulary path: label counts in, MI-ranked vocabulary files out.

Features with ``labels`` (beam_prep.spec.label_fields) skip the count-ranked vocabulary path.
The split analysis emits one label table per feature and split
(:mod:`~beam_prep.analyzers.label_counts`); here they are summed per feature
(``CombinePerKey``), scored (:mod:`~beam_prep.analyzers.mutual_info`), filtered and written:

* ``vocab/<name>.txt``: the tokens, best score first (ties: token bytes descending, as
  TFT's ``Top.Of`` orders ``(score, token)``), the same Keras-readable file as every
  vocabulary: the generated layers and the transform job read it unchanged;
* ``vocab/<name>.counts.jsonl``: ``[token, rows]`` in the same order;
* ``vocab/<name>.mutual_info.jsonl``: ``[token, score, rows]`` in the same order.

Filters, in TFT's order: tokens a line-based file cannot hold are excluded, then
``min_count`` (rows holding the token), ``min_mutual_info`` (TFT's ``frequency_threshold``
with labels), then ``top_k``. A feature's summed table is held in memory by one worker
(tokens x labels seen together): unlike the count-ranked path, it does not spill.

Example:
    >>> ranked = rank(table, feature)                              # doctest: +SKIP
    >>> ranked["table"].column("token").to_pylist()[:3]            # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers import label_counts, mutual_info
from beam_prep.analyzers.vocab_write import counts_jsonl, unwritable_mask, vocabulary_text
from beam_prep.io import artifacts as layout
from beam_prep.io import filesystem as fs
from beam_prep.io.label_sidecar import mutual_info_relpath
from beam_prep.spec import Spec
from beam_prep.spec.label_fields import has_labels

__all__ = ["MAX_LISTED_LABELS", "LabeledVocabularies", "rank"]

#: Labels listed one by one in the manifest (``label_rows``); more are only counted.
MAX_LISTED_LABELS = 1000
_NONE = {"tokens": 0, "count": 0}


def _drop(table: pa.Table, mask: np.ndarray) -> tuple[pa.Table, dict]:
    dropped = {"tokens": int(mask.sum()),
               "count": int(round(float(np.asarray(table.column("count"))[mask].sum())))}
    return table.filter(pa.array(~mask)), dropped


def rank(table: pa.Table, feature: Any) -> dict:
    """Scores, filters and orders one feature's summed label table.

    Returns:
        ``{"table": (token, score, count) in vocabulary order, "drops": {...},
        "labels": {label: rows}, "rows_without_label": int, "min_diff_from_avg": float}``.
    """
    is_total = pc.is_null(table.column("token")).to_numpy(zero_copy_only=False)
    totals, pairs = table.filter(pa.array(is_total)), table.filter(pa.array(~is_total))
    label_rows = {int(k): float(v) for k, v in zip(totals.column("label").to_pylist(),
                                                   totals.column("count").to_pylist())}
    without = label_rows.pop(-1, 0.0)
    rows = sum(label_rows.values())
    min_diff = feature.min_diff_from_avg
    if min_diff is None:
        min_diff = float(mutual_info.recommended_min_diff_from_avg(rows))
    grouped = pairs.group_by("token").aggregate([("count", "sum")])
    tokens = grouped.column("token").combine_chunks()
    token_index = pc.index_in(pairs.column("token"), value_set=tokens).to_numpy()
    labels = pairs.column("label").to_numpy()
    counts = pairs.column("count").to_numpy()
    x = np.bincount(token_index, weights=counts, minlength=len(tokens))
    joint = {int(j): np.bincount(token_index[labels == j], weights=counts[labels == j],
                                 minlength=len(tokens)) for j in np.unique(labels)}
    scores = mutual_info.scores(x, joint, label_rows, min_diff_from_avg=min_diff,
                                adjusted=feature.adjusted_mutual_info)
    scored = pa.table({"token": tokens, "score": pa.array(scores, pa.float64()),
                       "count": pa.array(x, pa.float64())})
    drops = {}
    scored, drops["excluded_unwritable"] = _drop(
        scored, np.asarray(unwritable_mask(scored.column("token")), dtype=bool))
    scored, drops["dropped_min_count"] = _drop(
        scored, np.asarray(scored.column("count")) < feature.min_count)
    threshold = -np.inf if feature.min_mutual_info is None else feature.min_mutual_info
    scored, drops["dropped_min_mutual_info"] = _drop(
        scored, ~(np.asarray(scored.column("score")) >= threshold))
    order = pc.sort_indices(scored, sort_keys=[("score", "descending"),
                                               ("token", "descending")])
    scored = scored.take(order)
    drops["dropped_top_k"] = dict(_NONE)
    if feature.top_k is not None and scored.num_rows > feature.top_k:
        cut = np.zeros(scored.num_rows, bool)
        cut[feature.top_k:] = True
        scored, drops["dropped_top_k"] = _drop(scored, cut)
    return {"table": scored, "drops": drops, "labels": label_rows,
            "rows_without_label": int(without), "min_diff_from_avg": float(min_diff)}


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


class _WriteLabeledVocabulary(beam.DoFn):
    """(feature, summed label table) → the three files; yields the vocab_meta entry."""

    def __init__(self, output_dir: str, spec_dict: dict) -> None:
        self._out = output_dir
        self._spec_dict = spec_dict

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)

    def process(self, kv: tuple[str, pa.Table]):
        name, table = kv
        feature = self._spec.feature(name)
        ranked = rank(table, feature)
        t = ranked["table"]
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
    """``(feature, label table)`` per split → ``(feature, vocab_meta entry)`` per labeled
    feature (a feature with no value at all still gets its empty files).

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
        seeds = tables.pipeline | "EveryLabeledVocabulary" >> beam.Create(
            [(name, label_counts.empty_table()) for name in names], reshuffle=False)
        return ((tables, seeds)
                | "WithEmptyLabelTables" >> beam.Flatten()
                | "SumLabelCounts" >> beam.CombinePerKey(label_counts.LabelCountsCombineFn())
                | "WriteLabeledVocabularies" >> beam.ParDo(
                    _WriteLabeledVocabulary(self._out, self._spec.to_dict())))
