"""Target encodings in the transform job: the serving value, or out of fold.

The generated layers map a token to its all-folds encoding (``<name>_target_encoding``,
:mod:`beam_prep.codegen.target_plan`); :func:`target_tables` reads the same file into
numpy: the lookup's vocabulary, that float32 table (row 0: the global mean, for OOV and
missing), and the out-of-fold table (row 0: each fold's out-of-fold mean). With
``beam-prep transform --out_of_fold`` a row of fold ``k`` (the stable hash of its
``fold_column`` value, :func:`~beam_prep.analyzers.target.stats.folds_of`, as in the
analysis) gets column ``k`` of the out-of-fold table: statistics of the other folds only,
so a training row never sees its own label (docs/target_encoding.md).

Example:
    >>> vocab, serving, oof = target_tables(art, "city", plan, stats)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from beam_prep.analyzers.target.stats import folds_of
from beam_prep.codegen.plan_types import (
    EMPTY_VOCABULARY_INTEGER,
    EMPTY_VOCABULARY_TOKEN,
    TargetPlan,
)
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.io.contract.target_file import read_target

__all__ = ["OutOfFold", "target_tables"]


def target_tables(art: Artifacts, name: str, plan: TargetPlan, stats: dict
                  ) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(vocabulary, serving float32 ``(V + 1,)``, out-of-fold float32 ``(V + 1, folds)``)
    of feature ``name``, read through the checked reader
    (:func:`beam_prep.io.contract.target_file.read_target`: a damaged line is one ArtifactError)."""
    table = read_target(art, name)
    tokens: list[Any] = list(table.tokens)
    oof_means = [0.0 if v is None else float(v) for v in stats["out_of_fold_means"]]
    serving = np.concatenate([[plan.global_mean], table.encoding])
    oof = np.concatenate([np.asarray(oof_means, np.float64)[None, :], table.out_of_fold])
    if not tokens:
        tokens = [EMPTY_VOCABULARY_INTEGER if plan.integer else EMPTY_VOCABULARY_TOKEN]
        serving = np.append(serving, plan.global_mean)
        oof = np.concatenate([oof, oof[:1]])
    vocabulary = pa.array(tokens, pa.int64() if plan.integer else pa.string())
    return vocabulary, serving.astype(np.float32), oof.astype(np.float32)


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
