"""Turn the documents of one output shard into serialized ELWC lists (no Beam here).

The shard's blocks are merged in input order, the documents sorted by query id (stable, so a
query keeps its input order), each query cut into lists by the list policy, and whole batches of
documents encoded at once (dense LETOR features: one numpy fill per batch; each list is then a
slice of a byte matrix).

Example:
    >>> import numpy as np
    >>> from beam_prep.ranking.data.lists import DocBlock
    >>> opts = ElwcOptions(input_format="letor")
    >>> spec = feature_spec_from_layout({"ids": np.array([1, 2])}, opts)
    >>> [f.name for f in spec.example]
    ['f1', 'f2']
    >>> b = DocBlock((0, 0), np.array(["q", "p"], dtype=object), np.array([0, 1, 0]),
    ...              np.array([1.0, 0.0, 2.0]),
    ...              sparse=(np.array([0, 1, 1, 2]), np.array([2, 1]),
    ...                      np.array([0.5, 3.0], np.float32)))
    >>> builder = ListBuilder(opts, {"ids": np.array([1, 2])})
    >>> [(qid, part) for qid, part, _ in builder.build("train", [b])[0]]
    [('p', 0), ('q', 0)]
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any

import numpy as np

from beam_prep.errors import InputError
from beam_prep.ranking.data.artifact_encode import load_encoder, rows_as_lists
from beam_prep.ranking.data.encode import (
    DenseFloatEncoder,
    encode_elwc,
    encode_features,
    frame_example,
)
from beam_prep.ranking.data.list_stats import (
    column_presence,
    label_key,
    per_list_stats,
    sparse_presence,
)
from beam_prep.ranking.data.lists import DocBlock, csr_rows, merge_blocks, plan_lists
from beam_prep.ranking.data.options import ElwcOptions
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo


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
    spec = ElwcFeatureSpec(context=tuple(context), example=tuple(example),
                           label=LabelInfo(opts.label_name, opts.label_dtype))
    if not opts.artifacts:
        return spec
    return load_encoder(opts.artifacts).encode_spec(spec, skip=(opts.query_id_feature,))


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


class ListBuilder:
    """Builds the ELWC records of one output shard; construct once per worker (caches encoders).

    Args:
        opts: conversion options.
        layout: merged feature layout from :class:`~beam_prep.ranking.data.sources.LayoutCombineFn`.
        batch_documents: documents encoded per numpy batch (bounds the temporary matrices).
    """

    def __init__(self, opts: ElwcOptions, layout: dict[str, Any], *,
                 batch_documents: int = 8192) -> None:
        self.opts = opts
        self.spec = feature_spec_from_layout(layout, opts)
        self.batch_documents = batch_documents
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
        # make-elwc --artifacts: the raw features of the encoded ones, and their encoder
        self._raw = {f.name: f.raw for f in self.spec.encoded.features} \
            if self.spec.encoded is not None else {}
        self._encoder = load_encoder(opts.artifacts) if self._raw else None
        self._empty_context = encode_elwc([], encode_features({}))
        self._lookup: np.ndarray | None = None

    def build(self, split: str, blocks: Iterable[DocBlock]
              ) -> tuple[list[tuple[str, int, bytes]], dict[str, Any]]:
        """ELWC records of one ``(split, shard)``, in output order, and their statistics.

        Args:
            split: the split every query of ``blocks`` belongs to (for the statistics).
            blocks: the shard's documents; merged in input order.

        Returns:
            ``[(query id, part index, ELWC bytes)]`` sorted by query id then part, and a
            statistics dict (``{}`` when there is no query) to be summed over shards.
        """
        o = self.opts
        block = merge_blocks(blocks)
        if len(block) == 0:
            return [], {}
        names = block.qid_names.tolist()
        if o.label_dtype == "int64":
            frac = np.mod(block.labels, 1) != 0
            if frac.any():
                i = int(np.flatnonzero(frac)[0])
                raise InputError(f"label {block.labels[i]} of query {names[block.qid_codes[i]]!r} "
                                 "is not an integer but --label_dtype=int64; use "
                                 "--label_dtype=float.")
        order = np.argsort(block.qid_codes, kind="stable")
        labels = block.labels[order]
        bounds = np.zeros(len(names) + 1, np.int64)
        np.cumsum(np.bincount(block.qid_codes, minlength=len(names)), out=bounds[1:])
        events: collections.Counter[str] = collections.Counter()
        plans: list[tuple[int, list[np.ndarray]]] = []
        for q, qid in enumerate(names):
            a, b = int(bounds[q]), int(bounds[q + 1])
            parts, ev = plan_lists(b - a, labels[a:b], max_list_size=o.max_list_size,
                                   policy=o.list_policy, min_list_size=o.min_list_size,
                                   drop_no_positive=o.drop_no_positive, seed=o.seed, qid=qid)
            events.update(ev)
            plans.append((q, [p + a for p in parts]))
        out: list[tuple[str, int, bytes]] = []
        q0 = 0
        while q0 < len(names):  # encode whole queries, about batch_documents at a time
            q1 = int(np.searchsorted(bounds, bounds[q0] + self.batch_documents, side="right")) - 1
            q1 = min(max(q1, q0 + 1), len(names))
            a, b = int(bounds[q0]), int(bounds[q1])
            framed = self._frame(block, order[a:b], labels[a:b])
            encoded = self._encode(block.context or {}, order[bounds[q0:q1]].tolist())
            for q in range(q0, q1):
                parts = plans[q][1]
                if not parts:
                    continue
                context = self._context(block, names[q], int(order[bounds[q]]),
                                        {k: v[q - q0] for k, v in encoded.items()})
                for k, rows in enumerate(parts):
                    out.append((names[q], k, _join_rows(framed, rows - a, context)))
            q0 = q1
        kept = np.concatenate([p for _, parts in plans for p in parts] or [np.zeros(0, np.int64)])
        values, counts = np.unique(labels[kept], return_counts=True)
        label_hist: collections.Counter[str] = collections.Counter()
        for v, c in zip(values.tolist(), counts.tolist()):
            label_hist[label_key(v)] += c
        list_sizes = np.array([len(p) for _, parts in plans for p in parts], np.int64)
        sizes = collections.Counter(str(n) for n in list_sizes.tolist())
        docs = len(kept)
        stats = {"queries": len(names), "lists": len(out), "documents": docs,
                 "list_size_histogram": dict(sizes),
                 "label_histogram": dict(label_hist),
                 **per_list_stats(labels[kept], list_sizes),
                 **self._presence(block, order, kept,
                                  [int(order[bounds[q]]) for q, parts in plans for _ in parts]),
                 "splits": {split: {"lists": len(out), "documents": docs}},
                 "events": dict(events)}
        return out, stats

    def _presence(self, block: DocBlock, order: np.ndarray, kept: np.ndarray,
                  list_first_rows: list[int]) -> dict[str, dict[str, int]]:
        """``example_features_present`` (per written document) and ``context_features_present``
        (per written list, from the row of its query's first document); see
        :mod:`beam_prep.ranking.data.list_stats`."""
        rows = order[kept]
        if self._dense is not None:
            indptr, ids, _ = block.sparse  # type: ignore[misc]
            example = sparse_presence(indptr, ids, rows, self._column_of,
                                      [f.name for f in self.spec.example],
                                      batch_documents=self.batch_documents)
            return {"example_features_present": example}
        return {"example_features_present": column_presence(block.columns or {}, rows.tolist()),
                "context_features_present": column_presence(block.context or {},
                                                            list_first_rows)}

    def _column_of(self, ids: np.ndarray) -> np.ndarray:
        """Column of each LETOR feature id in the dense matrix (ids are all in ``self._ids``)."""
        if self._lookup is None:
            top = int(self._ids[-1]) if len(self._ids) else 0
            self._lookup = np.zeros(0, np.int64) if top >= (1 << 22) else \
                np.zeros(top + 1, np.int64)
            if len(self._lookup):
                self._lookup[self._ids] = np.arange(len(self._ids))
        if len(self._lookup):
            return self._lookup[ids]
        return np.searchsorted(self._ids, ids)

    def _encode(self, columns: dict[str, list[Any]], rows: list[int]) -> dict[str, list[Any]]:
        """Encoded values (a list per row) of the covered ``columns`` at ``rows``."""
        if self._encoder is None:
            return {}
        return {name: rows_as_lists(self._encoder.encode(self._raw[name],
                                                         [values[r] for r in rows]))
                for name, values in columns.items() if name in self._raw}

    def _context(self, block: DocBlock, qid: str, first_row: int,
                 encoded: dict[str, list[Any]]) -> bytes:
        """The ``context`` field of the query's lists (query id and context columns)."""
        feats: dict[str, tuple[str, Any]] = {}
        if self.opts.query_id_feature:
            feats[self.opts.query_id_feature] = ("string", [qid])
        for name, values in (block.context or {}).items():
            value = values[first_row]
            if name in encoded:
                feats[name] = (self._kinds[name], encoded[name])
            elif value is not None:
                feats[name] = (self._kinds[name], _as_list(value))
        if not feats:
            return self._empty_context
        return encode_elwc([], encode_features(feats))

    def _frame(self, block: DocBlock, rows: np.ndarray, labels: np.ndarray
               ) -> np.ndarray | list[bytes]:
        """Framed examples of the documents ``rows`` (see ``DenseFloatEncoder.frame_examples``)."""
        if self._dense is not None:
            indptr, ids, vals = block.sparse  # type: ignore[misc]
            idx, sub_indptr = csr_rows(indptr, rows)
            dense = np.full((len(rows), len(self._ids)), self.opts.missing_value, np.float32)
            doc = np.repeat(np.arange(len(rows)), np.diff(sub_indptr))
            dense[doc, self._column_of(ids[idx])] = vals[idx]
            if self._encoder is not None:
                self._encode_dense(dense)
            return self._dense.frame_examples(dense, labels)
        label_dtype = self.opts.label_dtype
        cols = block.columns or {}
        encoded = self._encode(cols, rows.tolist())
        out = []
        for i, (r, lab) in enumerate(zip(rows.tolist(), labels.tolist())):
            feats: dict[str, tuple[str, Any]] = {
                self.opts.label_name: (label_dtype, [int(lab) if label_dtype == "int64" else lab])}
            for name, values in cols.items():
                v = values[r]
                if name in encoded:
                    feats[name] = (self._kinds[name], encoded[name][i])
                elif v is not None:
                    feats[name] = (self._kinds[name], _as_list(v))
            out.append(frame_example(encode_features(feats)))
        return out


    def _encode_dense(self, dense: np.ndarray) -> None:
        """LETOR: encodes the covered columns of the dense float32 matrix in place."""
        for j, info in enumerate(self.spec.example):
            raw = self._raw.get(info.name)
            if raw is None:
                continue
            enc = self._encoder.encode(raw, dense[:, j])  # type: ignore[union-attr]
            if enc.dtype != "float32" or enc.row_splits is not None or enc.values.shape[1] != 1:
                raise InputError(f"feature {info.name!r}: its layers in --artifacts output "
                                 f"{enc.dtype} of width {enc.values.shape[-1]}, but LETOR "
                                 "features are written as one float each. Fix: use a numeric "
                                 "spec feature for it, or make-elwc without --artifacts.")
            dense[:, j] = enc.values[:, 0]


def _join_rows(framed: np.ndarray | list[bytes], rows: np.ndarray, context: bytes) -> bytes:
    """One ELWC record: the framed examples of ``rows`` (increasing), then the context field."""
    if isinstance(framed, np.ndarray):
        if len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows):
            return b"".join((framed[int(rows[0]):int(rows[-1]) + 1], context))  # one copy
        return b"".join((framed[rows], context))
    return b"".join([*(framed[int(r)] for r in rows), context])


def _as_list(v: Any) -> list[Any]:
    return [x for x in v if x is not None] if isinstance(v, (list, tuple)) else [v]
