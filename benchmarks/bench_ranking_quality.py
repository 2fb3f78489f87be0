"""Quality benchmark: LightGBM LETOR sample -> make-elwc -> train -> NDCG@10 on rank.test.

The training config is ``examples/train.yaml`` (the committed default) with the data paths,
``model_dir`` and seed replaced; no validation set (the benchmark trains a fixed number of
steps on all 201 training lists, a number chosen by 5-fold cross-validation on rank.train,
never on rank.test: see docs/training.md). Test lists are scored by the trained Keras model on
raw features (no preprocessing layer: the sample's values already lie in [0, 1]).

NDCG@10 = mean over the 50 test lists, gain 2^label - 1, computed twice: by the launcher's
metric (keras-rs) and by an independent numpy implementation (they must agree). References on
the same split: LightGBM lambdarank 0.757, random order 0.581. Target: >= 0.73.

Usage::

    nice python benchmarks/bench_ranking_quality.py [--seeds 0,1,2] [--workdir /tmp/bench_rank]
        [section.key=value ...]          # overrides of examples/train.yaml

Prints one JSON line per seed and a summary line (mean, min, max over seeds).
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
LIGHTGBM_LAMBDARANK = 0.757
RANDOM_ORDER = 0.581


def numpy_ndcg(labels: np.ndarray, scores: np.ndarray, k: int = 10) -> float:
    """Mean NDCG@k over lists; label < 0 is padding; gain 2^l - 1; ties in list order."""
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


def convert(workdir: str) -> tuple[str, str, str]:
    """make-elwc on rank.train and rank.test; returns (feature_spec, train glob, test glob)."""
    from beam_prep.pipelines import make_elwc

    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for split in ("train", "test"):
        for suffix in ("", ".query"):
            shutil.copy(f"{DATA}/rank.{split}{suffix}", f"{workdir}/rank.{split}{suffix}")
        make_elwc.main(["--input", f"{workdir}/rank.{split}", "--input_format", "lightgbm",
                        "--output", f"{workdir}/elwc_{split}", "--num_features", "300"])
    dirs = {s: os.path.dirname(glob.glob(f"{workdir}/elwc_{s}/**/feature_spec.json",
                                         recursive=True)[0]) for s in ("train", "test")}
    return (os.path.join(dirs["train"], "feature_spec.json"),
            os.path.join(dirs["train"], "*.tfrecord*"), os.path.join(dirs["test"], "*.tfrecord*"))


def run_seed(seed: int, workdir: str, spec: str, train: str, test: str,
             overrides: list[str]) -> dict:
    """Trains with ``seed`` and evaluates on the test lists."""
    from beam_prep.ranking.train.hparams import RankingHparams
    from beam_prep.ranking.train.launcher import RankingLauncher
    from beam_prep.ranking.train.metrics import ndcg

    model_dir = f"{workdir}/model_{seed}"
    shutil.rmtree(model_dir, ignore_errors=True)
    hp = RankingHparams.load(CONFIG, overrides=[
        f"data.feature_spec={spec}", f"data.train_pattern={train}", "data.valid_pattern=null",
        "data.artifacts=null", f"training.model_dir={model_dir}", "training.export_dir=null",
        f"training.seed={seed}", *overrides])
    launcher = RankingLauncher(hp, layers={}, vocab_rows={})
    result = launcher.run()
    metric = ndcg(10)
    labels, scores = [], []
    for features, y in launcher.datasets.build(test, 10, training=False):  # 50 lists
        s = result.model(features, training=False)
        metric.update_state(y, s)
        labels.append(y.numpy())
        scores.append(s.numpy())
    labels_np, scores_np = np.concatenate(labels), np.concatenate(scores)
    assert labels_np.shape[0] == 50, labels_np.shape
    ours = numpy_ndcg(labels_np, scores_np)
    assert abs(ours - float(metric.result())) < 1e-5, (ours, float(metric.result()))
    return {"seed": seed, "ndcg_10": round(ours, 4), "steps": result.steps,
            "train_seconds": round(result.seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--workdir", default="/tmp/bench_rank")
    ap.add_argument("overrides", nargs="*", help="section.key=value on examples/train.yaml")
    args = ap.parse_args()
    start = time.perf_counter()
    spec, train, test = convert(args.workdir)
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        runs.append(run_seed(seed, args.workdir, spec, train, test, args.overrides))
        print(json.dumps(runs[-1]), flush=True)
    vals = [r["ndcg_10"] for r in runs]
    print(json.dumps({
        "ndcg_10_mean": round(statistics.fmean(vals), 4), "ndcg_10_min": min(vals),
        "ndcg_10_max": max(vals),
        "ndcg_10_stdev": round(statistics.stdev(vals), 4) if len(vals) > 1 else 0.0,
        "seeds": len(vals), "steps": runs[0]["steps"],
        "train_seconds_mean": round(statistics.fmean(r["train_seconds"] for r in runs), 1),
        "wall_seconds": round(time.perf_counter() - start, 1),
        "lightgbm_lambdarank": LIGHTGBM_LAMBDARANK, "random_order": RANDOM_ORDER,
        "config": os.path.relpath(CONFIG, ROOT), "overrides": args.overrides}))


if __name__ == "__main__":
    main()
