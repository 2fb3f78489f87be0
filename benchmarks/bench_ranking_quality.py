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
bagging or feature sampling, and with at most ``bin_construct_sample_cnt`` (200,000)
training documents, LightGBM does not depend on its seed: it is then fit once per fold and
its spread over seeds is 0. Above that many documents its feature bins come from a seeded
sample, so it is fit once per seed like ours.

**Metric** (one numpy implementation for both): NDCG@10 averaged over the scored lists, gain
``2^label - 1``, discount ``1 / log2(1 + rank)``, ties in list order. **IDCG = 0
convention**: a list with no relevant document scores **0** and counts in the mean, for both
models (LightGBM's own ``ndcg`` metric would count it as 1; we do not use it). The launcher's
keras-rs NDCG@10 of our scores is printed beside (``keras_rs``) with the number of lists
holding tied scores (``tied_lists``); the two agree to 1e-5 on rank.test.

Usage::

    nice -n 10 python benchmarks/bench_ranking_quality.py [--data DIR] [--seeds 0,1,2,3,4]
        [--cv 5] [--num_features 300] [--workdir /tmp/bench_rank] [--config YAML]
        [--valid_every N] [--lgb_params JSON] [--lgb_trees T] [section.key=value ...]

``--valid_every N`` carves every N-th *training* list out as a validation set for early
stopping of both models (LightGBM: ``--lgb_trees`` is then the cap, ``--lgb_patience`` rounds;
ours: ``training.early_stopping_metric``, best epoch restored); ``--lgb_params`` takes the
LightGBM settings chosen by ``benchmarks/tune_lightgbm.py`` (CV on the training lists).

Prints one JSON line per (fold, seed), one ``cpu_s per training, <model>:`` line per model
(CPU seconds of one training: ``time.process_time``, all threads) and a summary: mean ± std
over seeds (of the per-seed mean over folds), over (fold, seed) pairs, and the paired
difference ours - LightGBM. The test lists are scored whole (every document, as served).
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

try:
    from benchmarks.ltr_files import numpy_ndcg, padded, read_lightgbm, write_lightgbm
except ImportError:  # run as a script: benchmarks/ is on sys.path
    from ltr_files import numpy_ndcg, padded, read_lightgbm, write_lightgbm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Bundled sample, MIT licence beside it.
DATA = os.path.join(ROOT, "examples", "data", "letor", "lightgbm")
CONFIG = os.path.join(ROOT, "examples", "train.yaml")
LGB_PARAMS = {"objective": "lambdarank", "num_iterations": 100, "learning_rate": 0.1,
              "num_leaves": 31, "min_data_in_leaf": 50, "min_sum_hessian_in_leaf": 5.0,
              "num_threads": 1, "deterministic": True, "verbose": -1}


def write_parts(src: str, dst: str, parts: dict[str, list[int]], num_features: int) -> str:
    """Writes ``dst/rank.<name>`` for each name -> query indices of ``src`` (order kept)."""
    x, y, sizes = read_lightgbm(src, num_features)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    os.makedirs(dst, exist_ok=True)
    for name, qs in parts.items():
        idx = np.concatenate([np.arange(starts[q], starts[q + 1]) for q in qs])
        write_lightgbm(os.path.join(dst, f"rank.{name}"), x[idx], y[idx], sizes[qs])
    return dst


def split_folds(src: str, dst: str, folds: int, num_features: int) -> list[str]:
    """Writes fold directories (rank.train = other folds, rank.test = fold k); returns them."""
    n = len(np.loadtxt(os.path.join(src, "rank.train.query"), dtype="int64", ndmin=1))
    return [write_parts(os.path.join(src, "rank.train"), os.path.join(dst, f"fold_{k}"),
                        {"train": [q for q in range(n) if q % folds != k],
                         "test": [q for q in range(n) if q % folds == k]}, num_features)
            for k in range(folds)]


def split_valid(src: str, dst: str, every: int, num_features: int) -> str:
    """``src`` with its training lists split: every ``every``-th one -> ``rank.valid``.

    The validation lists (for early stopping of both models) come from the training lists
    only; ``rank.test`` is copied unchanged and never used to choose anything.
    """
    n = len(np.loadtxt(os.path.join(src, "rank.train.query"), dtype="int64", ndmin=1))
    write_parts(os.path.join(src, "rank.train"), dst,
                {"train": [q for q in range(n) if q % every != 0],
                 "valid": [q for q in range(n) if q % every == 0]}, num_features)
    for suffix in ("", ".query"):
        shutil.copy(os.path.join(src, f"rank.test{suffix}"),
                    os.path.join(dst, f"rank.test{suffix}"))
    return dst


def convert(src: str, workdir: str, num_features: int) -> tuple[str, str, str, str | None]:
    """make-elwc on rank.train, rank.test (and rank.valid when present).

    Returns (feature_spec, train glob, test glob, valid glob or None).
    """
    from beam_prep.pipelines import make_elwc

    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    splits = ("train", "test", "valid") if os.path.exists(f"{src}/rank.valid") else (
        "train", "test")
    for split in splits:
        for suffix in ("", ".query"):
            shutil.copy(f"{src}/rank.{split}{suffix}", f"{workdir}/rank.{split}{suffix}")
        make_elwc.main(["--input", f"{workdir}/rank.{split}", "--input_format", "lightgbm",
                        "--output", f"{workdir}/elwc_{split}",
                        "--num_features", str(num_features)])
    files = run_files(workdir)
    return files["spec"], files["train"], files["test"], files.get("valid")


def run_files(run_dir: str) -> dict[str, str]:
    """The ELWC files of a run directory (:func:`convert`'s ``workdir``): ``spec`` and the
    ``train``, ``test`` and (when carved) ``valid`` globs.

    Raises:
        FileNotFoundError: ``run_dir`` holds no converted training or test lists.
    """
    out = {}
    for split in ("train", "valid", "test"):
        found = glob.glob(f"{run_dir}/elwc_{split}/**/feature_spec.json", recursive=True)
        if not found:
            if split == "valid":
                continue
            raise FileNotFoundError(f"{run_dir}/elwc_{split}: no feature_spec.json; pass the "
                                    "run_<fold> directory of a bench_ranking_quality.py workdir")
        out[split] = os.path.join(os.path.dirname(found[0]), "*.tfrecord*")
        if split == "train":
            out["spec"] = found[0]
    return out


#: Bench seeds map to launcher seeds this far apart: an ensemble's member ``i`` trains with
#: ``training.seed + i``, so consecutive launcher seeds would share members between seeds.
SEED_STRIDE = 1000


def launcher_seed(seed: int) -> int:
    """The ``training.seed`` of bench seed ``seed``: no two bench seeds share a member of an
    ensemble of fewer than :data:`SEED_STRIDE` members.

    Example:
        >>> [launcher_seed(s) for s in range(3)]
        [0, 1000, 2000]
    """
    return seed * SEED_STRIDE


def bench_hparams(model_dir: str, spec: str, train: str, valid: str | None,
                  training_seed: int, overrides: list[str], config: str = CONFIG) -> object:
    """The launcher config of one benchmark training: ``config`` + the run's files + overrides.

    No artifacts, no export; ``valid`` (lists carved from the training lists) or none.
    """
    from beam_prep.ranking.train.hparams import RankingHparams

    return RankingHparams.load(config, overrides=[
        f"data.feature_spec={spec}", f"data.train_pattern={train}",
        f"data.valid_pattern={valid or 'null'}", "data.valid_batch_size=null",
        "data.artifacts=null", f"training.model_dir={model_dir}", "training.export_dir=null",
        f"training.seed={training_seed}", *overrides, "data.drop_remainder=false"])


def score_lists(models, launcher, test: str, n_test: int,
                n_docs: int | None = None) -> tuple[np.ndarray, list[np.ndarray], list[float]]:
    """Every model's scores of the ``test`` lists, scored whole (as served), in one pass.

    Returns ``[lists, width]`` labels (-1 = padding), each model's scores of the same shape
    and each model's keras-rs NDCG@10 (the launcher's metric). ``n_test`` (lists) and
    ``n_docs`` (real entries, when given) are checked against what was scored.
    """
    from beam_prep.ranking.train.metrics import ndcg

    metrics = [ndcg(10) for _ in models]
    labels, scores = [], [[] for _ in models]
    for features, y in launcher.datasets.build(test, 10, training=False):
        labels.append(y.numpy())
        for model, metric, out in zip(models, metrics, scores):
            s = model(features, training=False)
            metric.update_state(y, s)
            out.append(s.numpy())
    labels_np = padded_rows(labels, -1)
    assert labels_np.shape[0] == n_test, (labels_np.shape, n_test)
    scored = int((labels_np >= 0).sum())
    assert n_docs is None or scored == n_docs, (scored, n_docs)
    return (labels_np, [padded_rows(s, 0.0) for s in scores],
            [float(m.result()) for m in metrics])


def run_ours(seed: int, workdir: str, spec: str, train: str, test: str, n_test: int,
             overrides: list[str], valid: str | None = None, config: str = CONFIG,
             n_docs: int | None = None) -> dict:
    """Trains our ranker with ``seed``; NDCG@10 on the test lists.

    With ``valid`` (lists carved from the training lists) the launcher early-stops on it
    (``training.early_stopping_metric`` of the config, best epoch restored). The test lists
    are scored whole, as served (every document, however long the list): ``n_docs``, when
    given, is checked against the number of real entries scored.
    """
    from beam_prep.ranking.train.launcher import RankingLauncher

    model_dir = f"{workdir}/model_{seed}"
    shutil.rmtree(model_dir, ignore_errors=True)
    hp = bench_hparams(model_dir, spec, train, valid, launcher_seed(seed), overrides, config)
    launcher = RankingLauncher(hp, layers={}, vocab_rows={})
    cpu = time.process_time()
    result = launcher.run()
    cpu = time.process_time() - cpu
    labels_np, (scores_np,), (keras_rs,) = score_lists([result.model], launcher, test, n_test,
                                                       n_docs)
    ours = numpy_ndcg(labels_np, scores_np)
    return {"ndcg_10": ours, "keras_rs": keras_rs, "steps": result.steps,
            "train_cpu_s": round(cpu, 1), "tied_scores": _tied(labels_np, scores_np)}


def padded_rows(batches: list[np.ndarray], fill: float) -> np.ndarray:
    """``[lists, width]`` batches of different widths (each batch is padded to its longest
    list) as one array, padded with ``fill`` to the widest.

    Example:
        >>> padded_rows([np.ones((1, 2)), np.ones((1, 3))], -1).tolist()
        [[1.0, 1.0, -1.0], [1.0, 1.0, 1.0]]
    """
    width = max(b.shape[1] for b in batches)
    return np.concatenate([np.pad(b, ((0, 0), (0, width - b.shape[1])), constant_values=fill)
                           for b in batches])


def _tied(labels: np.ndarray, scores: np.ndarray) -> int:
    """Lists holding two real entries with equal scores (their order is then list order)."""
    n = 0
    for y, s in zip(labels, scores):
        s = s[y >= 0]
        n += int(len(np.unique(s)) < len(s))
    return n


def run_lightgbm(seed: int, src: str, num_features: int, trees: int = 100,
                 params: dict | None = None, patience: int = 50) -> dict:
    """LightGBM lambdarank on ``src``/rank.train; NDCG@10 on ``src``/rank.test.

    ``params`` override :data:`LGB_PARAMS`. With ``src``/rank.valid (lists carved from the
    training lists) boosting stops ``patience`` rounds after the best validation NDCG@10
    (at most ``trees`` rounds) and the best iteration scores the test lists.
    """
    import lightgbm

    x, y, sizes = read_lightgbm(os.path.join(src, "rank.train"), num_features)
    xt, yt, st = read_lightgbm(os.path.join(src, "rank.test"), num_features)
    p = {**LGB_PARAMS, **(params or {}), "seed": seed, "num_iterations": trees}
    extra: dict = {}
    if os.path.exists(os.path.join(src, "rank.valid")):
        xv, yv, sv = read_lightgbm(os.path.join(src, "rank.valid"), num_features)
        p.update(metric="ndcg", eval_at=[10])
        extra = {"valid_sets": [lightgbm.Dataset(xv, yv, group=sv)],
                 "callbacks": [lightgbm.early_stopping(patience, verbose=False)]}
    cpu = time.process_time()
    model = lightgbm.train(p, lightgbm.Dataset(x, y, group=sizes), **extra)
    cpu = time.process_time() - cpu
    best = model.best_iteration or trees
    s = model.predict(xt, num_iteration=best, num_threads=1)
    return {"ndcg_10": numpy_ndcg(padded(yt, st, -1.0), padded(s, st, 0.0)), "trees": best,
            "train_cpu_s": round(cpu, 1), "lists": len(st), "docs": int(st.sum()),
            "max_list": int(st.max()), "train_docs": len(y)}


# LightGBM settings that draw random numbers; without them a fit does not depend on its seed.
_LGB_RANDOM = ("bagging_fraction", "bagging_freq", "feature_fraction",
               "feature_fraction_bynode", "pos_bagging_fraction", "neg_bagging_fraction",
               "extra_trees")
# LightGBM's default ``bin_construct_sample_cnt``: with more training rows than this, the
# feature bins are built from a random sample drawn with the seed (``data_random_seed``).
LGB_BIN_SAMPLE = 200_000


def lgb_depends_on_seed(params: dict, rows: int = 0) -> bool:
    """True when ``params`` turn on a random LightGBM option (bagging, feature sampling), or
    when the ``rows`` training documents exceed the sample its feature bins are built from."""
    sample = int(params.get("bin_construct_sample_cnt", LGB_BIN_SAMPLE))
    return rows > sample or any(
        k in params and params[k] not in (1.0, 0, False) for k in _LGB_RANDOM)


def _ms(vals: list[float], digits: int = 4) -> str:
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return f"{statistics.fmean(vals):.{digits}f} ± {sd:.{digits}f}"


def cpu_lines(ours: list[float], lgb: list[float]) -> list[str]:
    """One line per model: CPU seconds per training (mean ± std, min-max, how many)."""
    return [f"cpu_s per training, {name}: {_ms(v, 1)} (min {min(v):.1f}, max {max(v):.1f}, "
            f"{len(v)} training{'s' * (len(v) != 1)})"
            for name, v in (("ours", ours), ("lightgbm", lgb)) if v]


def main() -> None:  # noqa: D103
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DATA, help="dir with rank.train[.query], rank.test[.query]")
    ap.add_argument("--num_features", type=int, default=300)
    ap.add_argument("--config", default=CONFIG, help="launcher config (examples/train.yaml)")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--cv", type=int, default=0, help="K folds of rank.train (0 = test mode)")
    ap.add_argument("--workdir", default="/tmp/bench_rank")
    ap.add_argument("--lgb_trees", type=int, default=100, help="LightGBM boosting rounds")
    ap.add_argument("--lgb_only", action="store_true", help="skip our model (LightGBM CV)")
    ap.add_argument("--lgb_params", default="{}",
                    help='JSON overriding LightGBM settings, e.g. \'{"num_leaves": 15}\'')
    ap.add_argument("--lgb_patience", type=int, default=50, help="early-stopping rounds")
    ap.add_argument("--valid_every", type=int, default=0,
                    help="N > 0: every N-th training list -> validation (early stopping, both)")
    ap.add_argument("overrides", nargs="*", help="section.key=value on examples/train.yaml")
    args = ap.parse_args()
    start = time.perf_counter()
    seeds = [int(s) for s in args.seeds.split(",")]
    shutil.rmtree(args.workdir, ignore_errors=True)
    srcs = (split_folds(args.data, os.path.join(args.workdir, "folds"), args.cv,
                        args.num_features) if args.cv else [args.data])
    if args.valid_every:
        srcs = [split_valid(s, os.path.join(args.workdir, f"valid_{k}"), args.valid_every,
                            args.num_features) for k, s in enumerate(srcs)]
    lgb_params = json.loads(args.lgb_params)
    rows, lgb_cpu = [], []
    for k, src in enumerate(srcs):
        wd = os.path.join(args.workdir, f"run_{k}")
        if not args.lgb_only:
            spec, train, test, valid = convert(src, wd, args.num_features)
        lgb = None
        for seed in seeds:
            # Without bagging, feature sampling or a sampled binning LightGBM ignores the
            # seed: fit once a fold.
            if lgb is None or lgb_depends_on_seed(lgb_params, lgb["train_docs"]):
                lgb = run_lightgbm(seed, src, args.num_features, args.lgb_trees, lgb_params,
                                   args.lgb_patience)
                lgb_cpu.append(lgb["train_cpu_s"])
            ours = ({"ndcg_10": 0.0, "keras_rs": 0.0, "steps": 0,
                     "train_cpu_s": 0.0, "tied_scores": 0} if args.lgb_only else
                    run_ours(seed, wd, spec, train, test, lgb["lists"], args.overrides, valid,
                             args.config, lgb["docs"]))
            rows.append({"fold": k, "seed": seed, "ours": round(ours["ndcg_10"], 4),
                         "lightgbm": round(lgb["ndcg_10"], 4), "steps": ours["steps"],
                         "lgb_trees": lgb["trees"],
                         "ours_cpu_s": ours["train_cpu_s"], "lgb_cpu_s": lgb["train_cpu_s"],
                         "test_lists": lgb["lists"], "keras_rs": round(ours["keras_rs"], 4),
                         "tied_lists": ours["tied_scores"]})
            print(json.dumps(rows[-1]), flush=True)
    by_seed = {m: [statistics.fmean(r[m] for r in rows if r["seed"] == s) for s in seeds]
               for m in ("ours", "lightgbm")}
    by_fold = {m: [statistics.fmean(r[m] for r in rows if r["fold"] == k)
                   for k in range(len(srcs))] for m in ("ours", "lightgbm")}
    diff = [r["ours"] - r["lightgbm"] for r in rows]
    ours_cpu = [] if args.lgb_only else [r["ours_cpu_s"] for r in rows]
    for line in cpu_lines(ours_cpu, lgb_cpu):
        print(line, flush=True)
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
        "ours_cpu_s_mean": round(statistics.fmean(ours_cpu), 1) if ours_cpu else 0.0,
        "lightgbm_cpu_s_mean": round(statistics.fmean(lgb_cpu), 1),
        "wall_s": round(time.perf_counter() - start, 1),
        "lightgbm_trees": args.lgb_trees, "lightgbm_params": lgb_params,
        "valid_every": args.valid_every,
        "config": os.path.relpath(args.config, ROOT), "overrides": args.overrides}), flush=True)


if __name__ == "__main__":
    main()
