"""Turn the merged documents of one query into serialized ELWC lists (no Beam here).

Example:
    >>> import numpy as np
    >>> from beam_prep.ranking.lists import DocChunk
    >>> opts = ElwcOptions(input_format="letor")
    >>> spec = feature_spec_from_layout({"ids": np.array([1, 2])}, opts)
    >>> [f.name for f in spec.example]
    ['f1', 'f2']
    >>> c = DocChunk("q", 0, np.array([1]), np.array([1.0]),
    ...              sparse=(np.array([0, 1]), np.array([2]), np.array([0.5], np.float32)))
    >>> builder = ListBuilder(opts, {"ids": np.array([1, 2])})
    >>> [(split, part) for split, part, _ in builder.build(c)[0]]
    [('train', 0)]
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from beam_prep.errors import InputError
from beam_prep.ranking.encode import DenseFloatEncoder, encode_elwc, encode_features
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from beam_prep.ranking.lists import DocChunk, plan_lists, split_of
from beam_prep.ranking.options import ElwcOptions


def letor_ids(layout: dict[str, Any], opts: ElwcOptions) -> np.ndarray:
    """Feature ids written for LETOR input: ``1..num_features`` or every id seen."""
    if opts.num_features is not None:
        return np.arange(1, opts.num_features + 1, dtype=np.int64)
    return np.asarray(layout.get("ids", np.zeros(0, np.int64)), dtype=np.int64)


def feature_spec_from_layout(layout: dict[str, Any], opts: ElwcOptions) -> ElwcFeatureSpec:
    """The :class:`ElwcFeatureSpec` the job writes, from the merged layout and the options."""
    context: list[FeatureInfo] = []
    if opts.query_id_feature:
        context.append(FeatureInfo(opts.query_id_feature, "string", (), ""))
    if opts.is_letor:
        example = [FeatureInfo(opts.feature_name(int(i)), "float", (), float(opts.missing_value))
                   for i in letor_ids(layout, opts)]
    else:
        schema = layout.get("schema", {})
        for col in opts.context_columns:
            context.append(_column_info(col, schema.get(col, ["null", False]), opts))
        example = [_column_info(col, kind, opts) for col, kind in schema.items()
                   if col not in opts.context_columns]
    return ElwcFeatureSpec(context=tuple(context), example=tuple(example),
                           label=LabelInfo(opts.label_name, opts.label_dtype))


def _column_info(col: str, kind: list[Any], opts: ElwcOptions) -> FeatureInfo:
    dtype, is_list = kind
    if dtype.startswith("conflict"):
        raise InputError(f"column {col!r} has incompatible types across input files ({dtype}). "
                         "Make the column's type consistent or leave it out.")
    if dtype == "null":
        dtype = "float"
    if is_list:
        return FeatureInfo(col, dtype, (None,), None)
    default = {"float": float(opts.missing_value), "int64": 0, "string": ""}[dtype]
    return FeatureInfo(col, dtype, (), default)


def _label_key(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


class ListBuilder:
    """Builds the ELWC records of one query; construct once per worker (it caches encoders).

    Args:
        opts: conversion options.
        layout: merged feature layout from :class:`~beam_prep.ranking.sources.LayoutCombineFn`.
    """

    def __init__(self, opts: ElwcOptions, layout: dict[str, Any]) -> None:
        self.opts = opts
        self.spec = feature_spec_from_layout(layout, opts)
        self._ids = letor_ids(layout, opts) if opts.is_letor else None
        self._dense = None
        if opts.is_letor:
            self._dense = DenseFloatEncoder([f.name for f in self.spec.example],
                                            label_name=opts.label_name,
                                            label_dtype=opts.label_dtype)
        names = {f.name for f in (*self.spec.context, *self.spec.example)}
        if opts.label_name in names:
            raise InputError(f"label name {opts.label_name!r} is also a feature name; choose "
                             "another --label_name or rename the column.")
        self._kinds = {f.name: f.dtype for f in (*self.spec.context, *self.spec.example)}

    def build(self, chunk: DocChunk) -> tuple[list[tuple[str, int, bytes]], dict[str, Any]]:
        """Returns ``[(split, part index, ELWC bytes)]`` and the query's statistics."""
        o = self.opts
        if o.label_dtype == "int64" and not np.all(np.mod(chunk.labels, 1) == 0):
            bad = chunk.labels[np.mod(chunk.labels, 1) != 0][0]
            raise InputError(f"label {bad} of query {chunk.qid!r} is not an integer but "
                             "--label_dtype=int64; use --label_dtype=float.")
        parts, events = plan_lists(len(chunk), chunk.labels, max_list_size=o.max_list_size,
                                   policy=o.list_policy, min_list_size=o.min_list_size,
                                   drop_no_positive=o.drop_no_positive, seed=o.seed, qid=chunk.qid)
        split = split_of(chunk.qid, o.splits, o.split_seed)
        context = self._context(chunk)
        examples = self._examples(chunk)
        out, sizes = [], collections.Counter()
        labels: collections.Counter[str] = collections.Counter()
        docs = 0
        for k, rows in enumerate(parts):
            out.append((split, k, encode_elwc([examples[int(r)] for r in rows], context)))
            sizes[str(len(rows))] += 1
            docs += len(rows)
            for v, c in collections.Counter(chunk.labels[rows].tolist()).items():
                labels[_label_key(v)] += c
        stats = {"queries": 1, "lists": len(parts), "documents": docs,
                 "list_size_histogram": dict(sizes), "label_histogram": dict(labels),
                 "splits": {split: {"lists": len(parts), "documents": docs}},
                 "events": events}
        return out, stats

    def _context(self, chunk: DocChunk) -> bytes:
        feats: dict[str, tuple[str, Any]] = {}
        if self.opts.query_id_feature:
            feats[self.opts.query_id_feature] = ("string", [chunk.qid])
        for name, value in chunk.context.items():
            if value is not None:
                feats[name] = (self._kinds[name], _as_list(value))
        return encode_features(feats)

    def _examples(self, chunk: DocChunk) -> list[bytes]:
        if self._dense is not None:
            indptr, ids, vals = chunk.sparse  # type: ignore[misc]
            dense = np.full((len(chunk), len(self._ids)), self.opts.missing_value, np.float32)
            rows = np.repeat(np.arange(len(chunk)), np.diff(indptr))
            dense[rows, np.searchsorted(self._ids, ids)] = vals
            return self._dense.encode(dense, chunk.labels)
        label_dtype = self.opts.label_dtype
        cols = chunk.columns or {}
        out = []
        for i in range(len(chunk)):
            lab = chunk.labels[i]
            feats: dict[str, tuple[str, Any]] = {
                self.opts.label_name: (label_dtype, [int(lab) if label_dtype == "int64" else lab])}
            for name, values in cols.items():
                v = values[i]
                if v is not None:
                    feats[name] = (self._kinds[name], _as_list(v))
            out.append(encode_features(feats))
        return out


def _as_list(v: Any) -> list[Any]:
    return [x for x in v if x is not None] if isinstance(v, (list, tuple)) else [v]
