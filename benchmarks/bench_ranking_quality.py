"""Quality benchmark: our ranker beside LightGBM lambdarank, same split, same metric, every run.

Data: the bundled LightGBM LETOR sample (``examples/data/letor/lightgbm``: 201 training lists,
50 test lists, 300 features) or any directory with ``rank.train[.query]`` /
``rank.test[.query]`` in LightGBM's text format (``benchmarks/gen_ranking.py`` writes
synthetic ones at any scale).

Two modes:

* **test** (default): train on ``rank.train`` (all of it, no validation set), score
  ``rank.test``.
* **cv** (``--cv K``): K folds of the *training* queries (fold k = queries with index % K ==
  k); train on K - 1 folds, score the held-out one. ``rank.test`` is never read. This is how
  settings are chosen (docs/training.md): never on the test lists.

For every fold and seed, both models are trained on the same lists: ours through
``beam-prep make-elwc`` + the launcher (config ``examples/train.yaml`` + overrides), LightGBM
(``lightgbm.train``, objective ``lambdarank``, the settings of LightGBM's own lambdarank
example: 100 trees (``--lgb_trees``), learning rate 0.1, 31 leaves, ``min_data_in_leaf=50``,
``min_sum_hessian_in_leaf=5``, ``seed``, one thread) on the raw text files. Without
bagging LightGBM is deterministic: its spread over seeds is 0.

**Metric** (one numpy implementation for both): NDCG@10 averaged over the scored lists, gain
``2^label - 1``, discount ``1 / log2(1 + rank)``, ties in list order. **IDCG = 0
convention**: a list with no relevant document scores **0** and counts in the mean, for both
models (LightGBM's own ``ndcg`` metric would count it as 1; we do not use it). The launcher's
keras-rs NDCG@10 of our scores is printed beside (``keras_rs``) with the number of lists
holding tied scores (``tied_lists``); the two agree to 1e-5 on rank.test.

Usage::

    nice -n 10 python benchmarks/bench_ranking_quality.py [--data DIR] [--seeds 0,1,2,3,4]
        [--cv 5] [--num_features 300] [--workdir /tmp/bench_rank] [section.key=value ...]

Prints one JSON line per (fold, seed) and a summary: mean ± std over seeds (of the
per-seed mean over folds), over (fold, seed) pairs, and the paired difference ours - LightGBM.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Bundled sample, MIT licence beside it.
DATA = os.path.join(ROOT, "examples", "data", "letor", "lightgbm")
CONFIG = os.path.join(ROOT, "examples", "train.yaml")
LGB_PARAMS = {"objective": "lambdarank", "num_iterations": 100, "learning_rate": 0.1,
              "num_leaves": 31, "min_data_in_leaf": 50, "min_sum_hessian_in_leaf": 5.0,
              "num_threads": 1, "deterministic": True, "verbose": -1}


def numpy_ndcg(labels: np.ndarray, scores: np.ndarray, k: int = 10) -> float:
    """Mean NDCG@k over lists; label < 0 = padding; gain 2^l - 1; list-order ties; IDCG=0 -> 0."""
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


def padded(values: np.ndarray, sizes: np.ndarray, fill: float) -> np.ndarray:
    """Flat per-document values -> ``[lists, max size]`` padded with ``fill``."""
    out = np.full((len(sizes), int(sizes.max())), fill, "float64")
    start = 0
    for i, n in enumerate(sizes):
        out[i, :n] = values[start:start + n]
        start += n
    return out


def split_folds(src: str, dst: str, folds: int, num_features: int) -> list[str]:
    """Writes fold directories (rank.train = other folds, rank.test = fold k); returns them."""
    try:
        from benchmarks.gen_ranking import write_lightgbm
    except ImportError:  # run as a script: benchmarks/ is on sys.path
        from gen_ranking import write_lightgbm

    x, y, sizes = read_lightgbm(os.path.join(src, "rank.train"), num_features)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    out = []
    for k in range(folds):
        d = os.path.join(dst, f"fold_{k}")
        os.makedirs(d, exist_ok=True)
        for name, held_out in (("train", False), ("test", True)):
            qs = [q for q in range(len(sizes)) if (q % folds == k) == held_out]
            idx = np.concatenate([np.arange(starts[q], starts[q + 1]) for q in qs])
            write_lightgbm(os.path.join(d, f"rank.{name}"), x[idx], y[idx], sizes[qs])
        out.append(d)
    return out


def convert(src: str, workdir: str, num_features: int) -> tuple[str, str, str]:
    """make-elwc on rank.train and rank.test; returns (feature_spec, train glob, test glob)."""
    from beam_prep.pipelines import make_elwc

    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for split in ("train", "test"):
        for suffix in ("", ".query"):
            shutil.copy(f"{src}/rank.{split}{suffix}", f"{workdir}/rank.{split}{suffix}")
        make_elwc.main(["--input", f"{workdir}/rank.{split}", "--input_format", "lightgbm",
                        "--output", f"{workdir}/elwc_{split}",
                        "--num_features", str(num_features)])
    dirs = {s: os.path.dirname(glob.glob(f"{workdir}/elwc_{s}/**/feature_spec.json",
                                         recursive=True)[0]) for s in ("train", "test")}
    return (os.path.join(dirs["train"], "feature_spec.json"),
            os.path.join(dirs["train"], "*.tfrecord*"), os.path.join(dirs["test"], "*.tfrecord*"))


def run_ours(seed: int, workdir: str, spec: str, train: str, test: str, n_test: int,
             overrides: list[str]) -> dict:
    """Trains our ranker with ``seed``; NDCG@10 on the test lists."""
    from beam_prep.ranking.train.hparams import RankingHparams
    from beam_prep.ranking.train.launcher import RankingLauncher
    from beam_prep.ranking.train.metrics import ndcg

    model_dir = f"{workdir}/model_{seed}"
    shutil.rmtree(model_dir, ignore_errors=True)
    hp = RankingHparams.load(CONFIG, overrides=[
        f"data.feature_spec={spec}", f"data.train_pattern={train}", "data.valid_pattern=null",
        "data.artifacts=null", f"training.model_dir={model_dir}", "training.export_dir=null",
        f"training.seed={seed}", *overrides, "data.drop_remainder=false"])
    launcher = RankingLauncher(hp, layers={}, vocab_rows={})
    cpu = time.process_time()
    result = launcher.run()
    cpu = time.process_time() - cpu
    metric = ndcg(10)
    labels, scores = [], []
    for features, y in launcher.datasets.build(test, 10, training=False):
        s = result.model(features, training=False)
        metric.update_state(y, s)
        labels.append(y.numpy())
        scores.append(s.numpy())
    labels_np, scores_np = np.concatenate(labels), np.concatenate(scores)
    assert labels_np.shape[0] == n_test, (labels_np.shape, n_test)
    ours = numpy_ndcg(labels_np, scores_np)
    return {"ndcg_10": ours, "keras_rs": float(metric.result()), "steps": result.steps,
            "train_cpu_s": round(cpu, 1), "tied_scores": _tied(labels_np, scores_np)}


def _tied(labels: np.ndarray, scores: np.ndarray) -> int:
    """Lists holding two real entries with equal scores (their order is then list order)."""
    n = 0
    for y, s in zip(labels, scores):
        s = s[y >= 0]
        n += int(len(np.unique(s)) < len(s))
    return n


def run_lightgbm(seed: int, src: str, num_features: int, trees: int = 100) -> dict:
    """LightGBM lambdarank on ``src``/rank.train; NDCG@10 on ``src``/rank.test."""
    import lightgbm

    x, y, sizes = read_lightgbm(os.path.join(src, "rank.train"), num_features)
    xt, yt, st = read_lightgbm(os.path.join(src, "rank.test"), num_features)
    cpu = time.process_time()
    model = lightgbm.train({**LGB_PARAMS, "seed": seed, "num_iterations": trees},
                           lightgbm.Dataset(x, y, group=sizes))
    cpu = time.process_time() - cpu
    s = model.predict(xt, num_threads=1)
    return {"ndcg_10": numpy_ndcg(padded(yt, st, -1.0), padded(s, st, 0.0)),
            "train_cpu_s": round(cpu, 1), "lists": len(st), "max_list": int(st.max())}


def _ms(vals: list[float]) -> str:
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return f"{statistics.fmean(vals):.4f} ± {sd:.4f}"


def main() -> None:  # noqa: D103
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DATA, help="dir with rank.train[.query], rank.test[.query]")
    ap.add_argument("--num_features", type=int, default=300)
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--cv", type=int, default=0, help="K folds of rank.train (0 = test mode)")
    ap.add_argument("--workdir", default="/tmp/bench_rank")
    ap.add_argument("--lgb_trees", type=int, default=100, help="LightGBM boosting rounds")
    ap.add_argument("--lgb_only", action="store_true", help="skip our model (LightGBM CV)")
    ap.add_argument("overrides", nargs="*", help="section.key=value on examples/train.yaml")
    args = ap.parse_args()
    start = time.perf_counter()
    seeds = [int(s) for s in args.seeds.split(",")]
    shutil.rmtree(args.workdir, ignore_errors=True)
    srcs = (split_folds(args.data, os.path.join(args.workdir, "folds"), args.cv,
                        args.num_features) if args.cv else [args.data])
    rows = []
    for k, src in enumerate(srcs):
        wd = os.path.join(args.workdir, f"run_{k}")
        if not args.lgb_only:
            spec, train, test = convert(src, wd, args.num_features)
        for seed in seeds:
            lgb = run_lightgbm(seed, src, args.num_features, args.lgb_trees)
            ours = ({"ndcg_10": 0.0, "keras_rs": 0.0, "steps": 0,
                     "train_cpu_s": 0.0, "tied_scores": 0} if args.lgb_only else
                    run_ours(seed, wd, spec, train, test, lgb["lists"], args.overrides))
            rows.append({"fold": k, "seed": seed, "ours": round(ours["ndcg_10"], 4),
                         "lightgbm": round(lgb["ndcg_10"], 4), "steps": ours["steps"],
                         "ours_cpu_s": ours["train_cpu_s"], "lgb_cpu_s": lgb["train_cpu_s"],
                         "test_lists": lgb["lists"], "keras_rs": round(ours["keras_rs"], 4),
                         "tied_lists": ours["tied_scores"]})
            print(json.dumps(rows[-1]), flush=True)
    by_seed = {m: [statistics.fmean(r[m] for r in rows if r["seed"] == s) for s in seeds]
               for m in ("ours", "lightgbm")}
    by_fold = {m: [statistics.fmean(r[m] for r in rows if r["fold"] == k)
                   for k in range(len(srcs))] for m in ("ours", "lightgbm")}
    diff = [r["ours"] - r["lightgbm"] for r in rows]
    print(json.dumps({
        "mode": f"cv{args.cv}" if args.cv else "test", "data": os.path.relpath(args.data, ROOT),
        "seeds": seeds, "folds": len(srcs),
        "ours_over_seeds": _ms(by_seed["ours"]),
        "lightgbm_over_seeds": _ms(by_seed["lightgbm"]),
        "ours_over_folds": _ms(by_fold["ours"]),
        "lightgbm_over_folds": _ms(by_fold["lightgbm"]),
        "ours_minus_lightgbm": _ms(diff),
        "ours_mean": round(statistics.fmean(by_seed["ours"]), 4),
        "lightgbm_mean": round(statistics.fmean(by_seed["lightgbm"]), 4),
        "ours_cpu_s_mean": round(statistics.fmean(r["ours_cpu_s"] for r in rows), 1),
        "wall_s": round(time.perf_counter() - start, 1),
        "lightgbm_trees": args.lgb_trees,
        "config": os.path.relpath(CONFIG, ROOT), "overrides": args.overrides}), flush=True)


if __name__ == "__main__":
    main()
