"""Target encodings in the transform job: the serving value, or out of fold.

The generated layers map a token to its all-folds encoding (``<name>_target_encoding``,
:mod:`beam_prep.codegen.target_plan`); :func:`target_tables` reads the same file into
numpy: the lookup's vocabulary, that float32 table (row 0: the global mean, for OOV and
missing), and the out-of-fold table (row 0: each fold's out-of-fold mean). With
``beam-prep transform --out_of_fold`` a row of fold ``k`` (the stable hash of its
``fold_column`` value, :func:`~beam_prep.analyzers.target_stats.folds_of`, as in the
analysis) gets column ``k`` of the out-of-fold table: statistics of the other folds only,
so a training row never sees its own label (docs/target_encoding.md).

Example:
    >>> vocab, serving, oof = target_tables("artifacts/", plan, stats)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from beam_prep.analyzers.target_stats import folds_of
from beam_prep.codegen.plan_types import (
    EMPTY_VOCABULARY_INTEGER,
    EMPTY_VOCABULARY_TOKEN,
    TargetPlan,
)
from beam_prep.io import filesystem as fs

__all__ = ["OutOfFold", "target_tables"]


def _nan(v: Any) -> float:
    return float("nan") if v is None else float(v)


def target_tables(path: str, plan: TargetPlan, stats: dict
                  ) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(vocabulary, serving float32 ``(V + 1,)``, out-of-fold float32 ``(V + 1, folds)``)."""
    text = fs.read_text(path.rstrip("/") + "/" + plan.path)
    rows = [json.loads(line) for line in text.splitlines() if line]
    tokens: list[Any] = [int(r[0]) if plan.integer else r[0] for r in rows]
    serving = [plan.global_mean] + [_nan(r[1]) for r in rows]
    oof_means = [_nan(v) if v is not None else 0.0 for v in stats["out_of_fold_means"]]
    oof = [oof_means] + [[_nan(v) for v in r[4]] for r in rows]
    if not tokens:
        tokens = [EMPTY_VOCABULARY_INTEGER if plan.integer else EMPTY_VOCABULARY_TOKEN]
        serving.append(plan.global_mean)
        oof.append(oof_means)
    vocabulary = pa.array(tokens, pa.int64() if plan.integer else pa.string())
    return (vocabulary, np.asarray(serving, np.float64).astype(np.float32),
            np.asarray(oof, np.float64).astype(np.float32).reshape(len(tokens) + 1, -1))


class OutOfFold:
    """A target output computed out of fold: ``table[lookup index, fold of the row]``.

    Args:
        table: The out-of-fold table of :func:`target_tables`.
        fold_column: The data column whose value sets a row's fold.
        folds: The number of folds.
    """

    def __init__(self, table: np.ndarray, fold_column: str, folds: int) -> None:
        self.table = table
        self.fold_column = fold_column
        self.folds = folds

    def __call__(self, index: np.ndarray, batch: pa.RecordBatch) -> np.ndarray:
        fold = folds_of(batch.column(self.fold_column), self.folds)
        return self.table[np.asarray(index, np.int64), fold].reshape(-1, 1)
