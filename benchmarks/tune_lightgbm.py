"""Cross-validated grid search of LightGBM lambdarank on the training lists only (a fair baseline).

For every setting of the grid (``num_leaves`` x ``learning_rate`` x ``min_data_in_leaf``) and
every fold k of ``--cv K`` over ``rank.train`` (fold k = queries with index % K == k): the
other folds are split again — every ``--valid_every``-th list for early stopping (at most
``--max_trees`` rounds, ``--patience`` rounds without a better validation NDCG@10), the rest
to fit — and the held-out fold is scored with the numpy NDCG@10 of
``ltr_files.py`` (IDCG = 0 -> 0). ``rank.test`` is never read.

Prints one JSON line per setting (mean ± std over folds, mean best iteration) and the best
setting last, ready for ``bench_ranking_quality.py --lgb_params '<json>'``.

Usage::

    nice -n 10 python benchmarks/tune_lightgbm.py --data /tmp/synth5k --num_features 24
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ranking_quality import LGB_PARAMS  # noqa: E402
from ltr_files import numpy_ndcg, padded, read_lightgbm  # noqa: E402


def _rows(starts: np.ndarray, queries: np.ndarray) -> np.ndarray:
    return np.concatenate([np.arange(starts[q], starts[q + 1]) for q in queries])


def cv_score(x: np.ndarray, y: np.ndarray, sizes: np.ndarray, params: dict, *, folds: int,
             valid_every: int, max_trees: int, patience: int) -> tuple[list[float], list[int]]:
    """NDCG@10 of each held-out fold and the early-stopped number of trees of each fold."""
    import lightgbm

    starts = np.concatenate([[0], np.cumsum(sizes)])
    q = np.arange(len(sizes))
    scores, trees = [], []
    for k in range(folds):
        rest, held = q[q % folds != k], q[q % folds == k]
        valid, fit = rest[np.arange(len(rest)) % valid_every == 0], rest[
            np.arange(len(rest)) % valid_every != 0]
        rf, rv, rh = _rows(starts, fit), _rows(starts, valid), _rows(starts, held)
        model = lightgbm.train(
            {**LGB_PARAMS, **params, "num_iterations": max_trees, "metric": "ndcg",
             "eval_at": [10], "seed": 0},
            lightgbm.Dataset(x[rf], y[rf], group=sizes[fit]),
            valid_sets=[lightgbm.Dataset(x[rv], y[rv], group=sizes[valid])],
            callbacks=[lightgbm.early_stopping(patience, verbose=False)])
        s = model.predict(x[rh], num_iteration=model.best_iteration, num_threads=1)
        scores.append(numpy_ndcg(padded(y[rh], sizes[held], -1.0), padded(s, sizes[held], 0.0)))
        trees.append(int(model.best_iteration))
    return scores, trees


def main(argv: list[str] | None = None) -> None:  # noqa: D103
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="dir with rank.train[.query]")
    ap.add_argument("--num_features", type=int, default=300)
    ap.add_argument("--cv", type=int, default=3)
    ap.add_argument("--valid_every", type=int, default=10)
    ap.add_argument("--max_trees", type=int, default=2000)
    ap.add_argument("--patience", type=int, default=50)
    ap.add_argument("--num_leaves", default="7,15,31,63")
    ap.add_argument("--learning_rate", default="0.03,0.1")
    ap.add_argument("--min_data_in_leaf", default="20,50,100")
    args = ap.parse_args(argv)
    x, y, sizes = read_lightgbm(os.path.join(args.data, "rank.train"), args.num_features)
    grid = itertools.product([int(v) for v in args.num_leaves.split(",")],
                             [float(v) for v in args.learning_rate.split(",")],
                             [int(v) for v in args.min_data_in_leaf.split(",")])
    best: tuple[float, dict] = (-1.0, {})
    for leaves, lr, min_data in grid:
        params = {"num_leaves": leaves, "learning_rate": lr, "min_data_in_leaf": min_data}
        scores, trees = cv_score(x, y, sizes, params, folds=args.cv,
                                 valid_every=args.valid_every, max_trees=args.max_trees,
                                 patience=args.patience)
        mean = statistics.fmean(scores)
        print(json.dumps({**params, "cv_ndcg_10": round(mean, 4),
                          "std": round(statistics.stdev(scores), 4),
                          "trees": round(statistics.fmean(trees))}), flush=True)
        if mean > best[0]:
            best = (mean, params)
    print(json.dumps({"best": best[1], "cv_ndcg_10": round(best[0], 4)}), flush=True)


if __name__ == "__main__":
    main()
