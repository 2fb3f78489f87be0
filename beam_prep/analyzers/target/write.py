"""Target-encoding statistics out: ``vocab/<name>.target.jsonl`` and the manifest entry.

From one feature's merged (token, fold) table (:mod:`~beam_prep.analyzers.target.stats`),
with ``m = smoothing``, ``C`` rows and ``S`` label sum (exact, rounded once to float64):

* ``global_mean = S / C`` over every counted row (0 when no row has a label);
* ``encoding(token) = (S_t + m * global_mean) / (C_t + m)`` over all folds: what serving
  uses; a token not in the file (OOV, missing) gets ``global_mean``;
* ``out_of_fold(token, k)``: the same from the other folds only, ``S_t - S_tk``,
  ``C_t - C_tk`` and the other folds' mean ``(S - S_k) / (C - C_k)`` (0 when no other fold
  has rows), so that a row of fold ``k`` never sees its own label; with no other-fold row
  of the token it is that other-fold mean.

File: one JSON line per token, sorted by token (UTF-8 bytes; integers as decimal strings):
``[token, encoding, [rows per fold], [label sum per fold], [out_of_fold per fold]]``.

Example:
    >>> from beam_prep.analyzers.target.stats import SUM_SHIFT
    >>> table = {("a", 0): [2, 2 << SUM_SHIFT], (None, 0): [2, 2 << SUM_SHIFT],
    ...          (None, 1): [2, 0]}
    >>> r = encode(table, folds=2, smoothing=2.0)
    >>> r["global_mean"], r["tokens"][0][1]
    (0.5, 0.75)
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import apache_beam as beam
import numpy as np

from beam_prep.analyzers.exact_sums import ratio_to_float
from beam_prep.analyzers.target.stats import (
    SUM_SHIFT,
    Table,
    TargetStatsCombineFn,
)
from beam_prep.io import filesystem as fs
from beam_prep.spec import Spec
from beam_prep.spec.target_fields import has_target_encoding

__all__ = ["TARGET_SUFFIX", "TargetStats", "WriteTargetStats", "encode", "target_relpath"]

TARGET_SUFFIX = ".target.jsonl"
_UNIT = 1 << SUM_SHIFT


def target_relpath(name: str) -> str:
    """``vocab/<name>.target.jsonl``."""
    return f"vocab/{name}{TARGET_SUFFIX}"


def _mean(total: int, rows: int) -> float:
    return ratio_to_float(total, rows * _UNIT) if rows else 0.0


def _smoothed(sums: np.ndarray, rows: np.ndarray, prior: np.ndarray | float,
              m: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (sums + m * prior) / (rows + m)
    return np.where(rows + m > 0, out, prior)


def encode(table: Table, folds: int, smoothing: float) -> dict[str, Any]:
    """The encodings and statistics of one feature's merged table.

    Returns:
        ``{"tokens": [(token, encoding, rows[k], sums[k], out_of_fold[k]), ...] sorted,
        "rows", "rows_per_fold", "global_mean", "out_of_fold_means"}``.
    """
    fold_rows = [0] * folds
    fold_sums = [0] * folds
    per_token: dict[str, tuple[list[int], list[int]]] = {}
    for (token, fold), (n, s) in table.items():
        if token is None:
            fold_rows[fold], fold_sums[fold] = fold_rows[fold] + n, fold_sums[fold] + s
            continue
        rows, sums = per_token.setdefault(token, ([0] * folds, [0] * folds))
        rows[fold] += n
        sums[fold] += s
    rows_all, sum_all = sum(fold_rows), sum(fold_sums)
    global_mean = _mean(sum_all, rows_all)
    oof_means = [_mean(sum_all - fold_sums[k], rows_all - fold_rows[k]) for k in range(folds)]
    names = sorted(per_token, key=lambda t: t.encode("utf-8"))
    if not names:
        return {"tokens": [], "rows": rows_all, "rows_per_fold": fold_rows,
                "global_mean": global_mean, "out_of_fold_means": oof_means}
    rows = np.array([per_token[t][0] for t in names], dtype=np.float64)
    exact = [per_token[t][1] for t in names]
    total_sum = np.array([_mean(sum(s), 1) for s in exact])
    fold_sum = np.array([[_mean(v, 1) for v in s] for s in exact]).reshape(len(names), folds)
    other_sum = np.array([[_mean(sum(s) - v, 1) for v in s] for s in exact]).reshape(
        len(names), folds)
    m = float(smoothing)
    enc = _smoothed(total_sum, rows.sum(axis=1), global_mean, m)
    oof = _smoothed(other_sum, rows.sum(axis=1, keepdims=True) - rows,
                    np.array(oof_means)[None, :], m)
    tokens = [(t, float(enc[i]), [int(v) for v in rows[i]], fold_sum[i].tolist(),
               oof[i].tolist()) for i, t in enumerate(names)]
    return {"tokens": tokens, "rows": rows_all, "rows_per_fold": fold_rows,
            "global_mean": global_mean, "out_of_fold_means": oof_means}


def _finite(v: float) -> float | None:
    return v if np.isfinite(v) else None


def target_jsonl(tokens: list) -> bytes:
    """The file body (non-finite floats, from sums beyond float64, as null)."""
    lines = [json.dumps([t, _finite(e), r, [_finite(v) for v in s], [_finite(v) for v in o]],
                        ensure_ascii=True, allow_nan=False, separators=(",", ":"))
             for t, e, r, s, o in tokens]
    return "".join(line + "\n" for line in lines).encode("ascii")


def target_stats(result: dict, feature: Any) -> dict:
    """The ``stats.target_encoding`` manifest entry (docs/target_encoding.md)."""
    te = feature.target_encoding
    return {"label_column": te.labels, "fold_column": te.fold_column, "folds": te.folds,
            "smoothing": float(te.smoothing), "rows": result["rows"],
            "rows_per_fold": result["rows_per_fold"], "tokens": len(result["tokens"]),
            "global_mean": _finite(result["global_mean"]),
            "out_of_fold_means": [_finite(v) for v in result["out_of_fold_means"]]}


class WriteTargetStats(beam.DoFn):
    """``(feature, merged table)`` → the file; yields ``(feature, {"target_encoding": ...})``
    (``file`` and ``stats``), merged into the feature's manifest entry."""

    def __init__(self, output_dir: str, spec_dict: dict) -> None:
        self._out = output_dir
        self._spec_dict = spec_dict

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)

    def process(self, kv: tuple[str, Table]):
        name, table = kv
        feature = self._spec.feature(name)
        te = feature.target_encoding
        result = encode(table, te.folds, te.smoothing)
        body = target_jsonl(result["tokens"])
        rel = target_relpath(name)
        fs.write_bytes(fs.join(self._out, rel), body)
        yield name, {"target_encoding": {
            "file": {"path": rel, "sha256": hashlib.sha256(body).hexdigest(),
                     "bytes": len(body)},
            "stats": target_stats(result, feature)}}


class TargetStats(beam.PTransform):
    """``(feature, table)`` per split → ``(feature, {"target_encoding": ...})`` per
    target-encoded feature (a feature with no labelled row still gets its empty file).

    Args:
        spec: The spec.
        output_dir: The artifact (staging) directory.
    """

    def __init__(self, spec: Spec, output_dir: str) -> None:
        super().__init__()
        self._spec = spec
        self._out = output_dir

    def expand(self, tables: beam.PCollection) -> beam.PCollection:
        seeds = tables.pipeline | "EveryTargetEncoding" >> beam.Create(
            [(f.name, {}) for f in self._spec.features if has_target_encoding(f)],
            reshuffle=False)
        return ((tables, seeds)
                | "WithEmptyTargetStats" >> beam.Flatten()
                | "SumTargetStats" >> beam.CombinePerKey(TargetStatsCombineFn())
                | "WriteTargetStats" >> beam.ParDo(
                    WriteTargetStats(self._out, self._spec.to_dict())))
