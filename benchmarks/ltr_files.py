"""Ranking lists in LightGBM's text format and the numpy NDCG@k the ranking benchmarks share.

One module for what ``gen_ranking.py`` (writes the files, scores the oracle),
``bench_ranking_quality.py`` (reads, splits and scores), ``tune_lightgbm.py`` and
``explore_ranking_holdout.py`` all need, so none of them imports another benchmark script.

File format (what ``beam-prep make-elwc --input_format lightgbm`` and LightGBM read):
``prefix`` holds one document a line, ``label 1:v 2:v ...`` (1-based feature indices), and
``prefix.query`` one list size a line, in file order.

Example:
    >>> y = np.array([[2.0, 0.0, 1.0, -1.0]])            # -1 = padding
    >>> round(numpy_ndcg(y, np.array([[0.9, 0.8, 0.1, 5.0]])), 4)
    0.9639
"""

from __future__ import annotations

import numpy as np


def numpy_ndcg(labels: np.ndarray, scores: np.ndarray, k: int = 10) -> float:
    """Mean NDCG@k over lists; label < 0 = padding; gain 2^l - 1; list-order ties; IDCG=0 -> 0.

    Args:
        labels: ``[lists, max size]`` graded labels, negative on padding.
        scores: ``[lists, max size]`` model scores (padding ignored).
        k: the cut-off.

    Returns:
        The mean over all lists; a list without a relevant document scores 0 and counts.
    """
    vals = []
    for y, s in zip(labels, scores):
        keep = y >= 0
        y, s = y[keep], s[keep]
        gains = (2.0 ** y[np.argsort(-s, kind="stable")] - 1)[:k]
        ideal = np.sort(2.0 ** y - 1)[::-1][:k]
        disc = 1 / np.log2(np.arange(2, k + 2))
        idcg = float((ideal * disc[:len(ideal)]).sum())
        vals.append(0.0 if idcg == 0 else float((gains * disc[:len(gains)]).sum()) / idcg)
    return float(np.mean(vals))


def padded(values: np.ndarray, sizes: np.ndarray, fill: float) -> np.ndarray:
    """Flat per-document values -> ``[lists, max size]`` padded with ``fill``."""
    out = np.full((len(sizes), int(sizes.max())), fill, "float64")
    start = 0
    for i, n in enumerate(sizes):
        out[i, :n] = values[start:start + n]
        start += n
    return out


def read_lightgbm(prefix: str, num_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LightGBM text file -> (dense features [N, D], labels [N], list sizes)."""
    rows, labels = [], []
    with open(prefix) as f:
        for line in f:
            parts = line.split()
            labels.append(float(parts[0]))
            row = np.zeros(num_features, "float32")
            for item in parts[1:]:
                j, v = item.split(":")
                row[int(j) - 1] = float(v)
            rows.append(row)
    sizes = np.loadtxt(prefix + ".query", dtype="int64", ndmin=1)
    return np.stack(rows), np.asarray(labels), sizes


def write_lightgbm(prefix: str, x: np.ndarray, labels: np.ndarray, sizes: np.ndarray) -> None:
    """``prefix`` (``label 1:v 2:v ...``) and ``prefix.query`` (one list size a line)."""
    with open(prefix, "w") as f:
        for y, row in zip(labels, x):
            f.write(f"{int(y)} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row))
                    + "\n")
    with open(prefix + ".query", "w") as f:
        f.write("".join(f"{int(s)}\n" for s in sizes))
