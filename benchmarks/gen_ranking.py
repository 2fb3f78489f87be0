"""Synthetic learning-to-rank data in LightGBM's text format (labels from a nonlinear function).

Every query has 5..30 documents (``--list_sizes MIN,MAX``) with ``--features`` (default 24)
features of three kinds, as in web-search feature sets: heavy-tailed counts (log-normal,
like click or link counts), bounded scores in [0, 1] (like BM25 normalised) and signed
Gaussian values. A document's relevance is a nonlinear function of its features —
products, a sine, a threshold and a term relative to the list's mean (what a listwise model
can see and a pointwise one cannot) — plus a per-query offset and Gaussian noise; graded
labels 0..4 cut the relevance at fixed global quantiles (50 %, 75 %, 90 %, 97 %).
Deterministic for a seed. ``--family`` swaps the relevance function (:data:`FAMILIES`) to
check that a result is not specific to this one: ``pointwise`` drops the listwise term,
``mixed`` uses other features, other shapes and a within-list rank. ``--list_ranks`` appends
each feature's rank within its list as a further feature (query-level normalisation done
before the models see the data), to measure what list-relative inputs are worth to each model.

Writes ``rank.train`` / ``rank.train.query`` / ``rank.test`` / ``rank.test.query`` (the files
``beam-prep make-elwc --input_format lightgbm`` and LightGBM read) into ``--out``.

Usage::

    python benchmarks/gen_ranking.py --out /tmp/synth --train_queries 5000 --test_queries 1000

Example:
    >>> x, y, sizes = generate(20, seed=0)                  # doctest: +SKIP
    >>> x.shape[0] == sizes.sum() == y.shape[0]             # doctest: +SKIP
    True
"""

from __future__ import annotations

import argparse
import os

import numpy as np

try:
    from benchmarks.ltr_files import numpy_ndcg, padded, write_lightgbm
except ImportError:  # run as a script: benchmarks/ is on sys.path
    from ltr_files import numpy_ndcg, padded, write_lightgbm

CUTS = (0.50, 0.75, 0.90, 0.97)


def _parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(log1p(counts), bounded, signed)``: the three kinds of feature."""
    n_heavy = x.shape[1] // 3
    return np.log1p(x[:, :n_heavy]), x[:, n_heavy:2 * n_heavy], x[:, 2 * n_heavy:]


def _list_ids(sizes: np.ndarray) -> np.ndarray:
    """Each document's list index (lists are consecutive runs of ``sizes`` documents)."""
    return np.repeat(np.arange(len(sizes)), sizes)


def _list_mean(v: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each document's list mean of ``v``."""
    q = _list_ids(sizes)
    return (np.bincount(q, weights=v) / sizes)[q]


def _list_percentile(v: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each document's rank of ``v`` within its list, scaled to [0, 1] (0 = lowest)."""
    q = _list_ids(sizes)
    order = np.lexsort((v, q))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank = np.empty(len(v))
    rank[order] = np.arange(len(v)) - np.repeat(starts, sizes)
    return rank / np.maximum(sizes - 1, 1)[q]


def _shared_terms(x: np.ndarray) -> np.ndarray:
    """Products, a sine, a threshold and an absolute value, per document."""
    logc, bounded, signed = _parts(x)
    return (1.2 * np.tanh(logc[:, 0] - 1.0) * bounded[:, 1]
            + 0.8 * np.sin(2.0 * signed[:, 0]) * (signed[:, 1] > 0)
            + 0.6 * logc[:, 1] * (bounded[:, 2] > 0.5)
            - 0.4 * np.abs(signed[:, 2]) + 0.5 * bounded[:, 3] * bounded[:, 4])


def _clean_listwise(x: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The shared terms plus a bounded score relative to its list's mean."""
    b0 = _parts(x)[1][:, 0]
    return _shared_terms(x) + 2.0 * (b0 - _list_mean(b0, sizes))


def _clean_pointwise(x: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The shared terms plus the same score centred on 0.5, not on its list: nothing listwise."""
    return _shared_terms(x) + 2.0 * (_parts(x)[1][:, 0] - 0.5)


def _clean_mixed(x: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Other features and shapes than ``listwise``; the list term is a within-list rank.

    A count's rank among its list's documents (as "most cited in this result set"), a
    smooth interaction, a maximum, a log ratio and a step; 14 of the 24 features are
    not used at all.
    """
    logc, bounded, signed = _parts(x)
    return (1.5 * _list_percentile(logc[:, 4], sizes)
            + 0.9 * logc[:, 2] / (1.0 + logc[:, 2]) * np.tanh(signed[:, 3])
            + 1.0 * np.maximum(bounded[:, 5], bounded[:, 6]) ** 2
            + 0.5 * (logc[:, 3] - logc[:, 5])
            + 0.7 * np.sin(np.pi * bounded[:, 7]) * signed[:, 4]
            - 0.6 * (signed[:, 5] > 1.0))


#: Relevance families (``--family``): the noise-free relevance and the label noise's std.
FAMILIES = {
    "listwise": (_clean_listwise, 1.0),
    "pointwise": (_clean_pointwise, 1.0),
    "mixed": (_clean_mixed, 0.7),
}


def _relevance(x: np.ndarray, sizes: np.ndarray, rng: np.random.Generator | None,
               family: str = "listwise") -> np.ndarray:
    """The relevance before the label cut; ``rng=None``: without the two noise terms."""
    clean, noise = FAMILIES[family]
    r = clean(x, sizes)
    if rng is None:
        return r
    q = _list_ids(sizes)
    r = r + rng.normal(0.0, 0.5, len(sizes))[q]     # query difficulty
    return r + rng.normal(0.0, noise, len(r))       # label noise


def generate(queries: int, *, features: int = 24, seed: int = 0,
             list_sizes: tuple[int, int] = (5, 30), family: str = "listwise"
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(features [N, D], labels [N] in 0..4, list sizes [queries])``.

    List sizes are uniform in ``list_sizes`` (both ends included); the default draws the
    same random stream as before the option existed, so the files are unchanged.
    ``family`` names the relevance function (:data:`FAMILIES`); the features are drawn the
    same way for every family.
    """
    if family not in FAMILIES:
        raise ValueError(f"family: {family!r} is not one of {sorted(FAMILIES)}")
    if family == "mixed" and features < 24:
        raise ValueError(f"features: {features} is too few for family 'mixed'; "
                         "it reads 8 of each kind, pass at least 24")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(list_sizes[0], list_sizes[1] + 1, queries)
    n, third = int(sizes.sum()), features // 3
    heavy = rng.lognormal(1.0, 1.5, (n, third))
    bounded = rng.uniform(0.0, 1.0, (n, third))
    signed = rng.normal(0.0, 1.0, (n, features - 2 * third))
    x = np.concatenate([heavy, bounded, signed], axis=1)
    r = _relevance(x, sizes, rng, family)
    labels = np.searchsorted(np.quantile(r, CUTS), r, side="right")
    return x, labels, sizes


def with_list_ranks(x: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``x`` followed by each column's rank within its list, scaled to [0, 1]: ``[N, 2 D]``.

    Example:
        >>> with_list_ranks(np.array([[3.0], [1.0], [2.0]]), np.array([3])).tolist()
        [[3.0, 1.0], [1.0, 0.0], [2.0, 0.5]]
    """
    ranks = [_list_percentile(x[:, j], sizes) for j in range(x.shape[1])]
    return np.concatenate([x, np.stack(ranks, axis=1)], axis=1)


def oracle_ndcg(x: np.ndarray, labels: np.ndarray, sizes: np.ndarray,
                family: str = "listwise") -> float:
    """NDCG@10 of ranking by the noise-free relevance: about the best any model can score.

    (The noise is the same for every document of a list or independent of the features, so
    ranking by the noise-free relevance maximises the expected gain at every position.)
    """
    clean = _relevance(x, sizes, None, family)
    return numpy_ndcg(padded(labels, sizes, -1.0), padded(clean, sizes, 0.0))


def main(argv: list[str] | None = None) -> None:  # noqa: D103
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--train_queries", type=int, default=5000)
    ap.add_argument("--test_queries", type=int, default=1000)
    ap.add_argument("--features", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list_sizes", default="5,30",
                    help="MIN,MAX documents per query (uniform, both included), e.g. 20,200")
    ap.add_argument("--family", default="listwise", choices=sorted(FAMILIES),
                    help="relevance function: listwise (default; a term relative to the "
                    "list's mean), pointwise (the same without it), mixed (other features "
                    "and shapes, a within-list rank, 14 of 24 features unused)")
    ap.add_argument("--oracle", action="store_true",
                    help="print the NDCG@10 of the noise-free relevance on the test lists")
    ap.add_argument("--list_ranks", action="store_true",
                    help="append each feature's rank within its list, scaled to [0, 1], as "
                    "features D+1..2D (the labels and the oracle are unchanged)")
    args = ap.parse_args(argv)
    lo, hi = (int(v) for v in args.list_sizes.split(","))
    if not 1 <= lo <= hi:
        raise SystemExit(f"--list_sizes: {args.list_sizes!r} is not MIN,MAX with "
                         "1 <= MIN <= MAX; pass e.g. 20,200")
    os.makedirs(args.out, exist_ok=True)
    total = args.train_queries + args.test_queries
    x, y, sizes = generate(total, features=args.features, seed=args.seed,
                           list_sizes=(lo, hi), family=args.family)
    cut = int(sizes[:args.train_queries].sum())
    inputs = with_list_ranks(x, sizes) if args.list_ranks else x
    write_lightgbm(os.path.join(args.out, "rank.train"), inputs[:cut], y[:cut],
                   sizes[:args.train_queries])
    write_lightgbm(os.path.join(args.out, "rank.test"), inputs[cut:], y[cut:],
                   sizes[args.train_queries:])
    if args.oracle:
        print(f"oracle NDCG@10 on the test lists: "
              f"{oracle_ndcg(x[cut:], y[cut:], sizes[args.train_queries:], args.family):.4f}")


if __name__ == "__main__":
    main()
