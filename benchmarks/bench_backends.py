"""Quality parity of the Keras backends: the LightGBM sample on TensorFlow and on JAX.

Same data, config and seeds as ``bench_ranking_quality.py`` (``examples/train.yaml`` with one
member, ``model.ensemble=1``; 300 steps, NDCG@10 on the 50 ``rank.test`` lists, numpy
oracle); each backend runs in its own
process (Keras picks its backend once per process) through ``build_launcher``, i.e. the
TensorFlow launcher or the JAX one (``fit`` compiled with XLA, no distribution: one CPU).

Usage::

    nice -n 10 python benchmarks/bench_backends.py [--seeds 0,1,2,3,4] [--workdir DIR]

Prints one JSON line per (backend, seed), one summary line per backend (NDCG@10 mean and
stdev, training wall and CPU seconds per step), then the NDCG@10 gap.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.bench_ranking_quality import CONFIG, convert  # noqa: E402
from benchmarks.ltr_files import numpy_ndcg  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_seed(seed: int, workdir: str, spec: str, train: str, test: str) -> dict:
    """One seed on the backend of this process (KERAS_BACKEND)."""
    import keras

    from beam_prep.ranking.train.backend import make_launcher as build_launcher
    from beam_prep.ranking.train.hparams import RankingHparams

    backend = keras.backend.backend()
    model_dir = f"{workdir}/model_{backend}_{seed}"
    hp = RankingHparams.load(CONFIG, overrides=[
        f"data.feature_spec={spec}", f"data.train_pattern={train}", "data.valid_pattern=null",
        "data.artifacts=null", f"training.model_dir={model_dir}", "training.export_dir=null",
        f"training.seed={seed}", f"distribution.backend={backend}",
        "model.ensemble=1"])  # one model per backend, as the recorded results
    launcher = build_launcher(hp, layers={}, vocab_rows={})
    cpu = _cpu()
    result = launcher.run()
    cpu = _cpu() - cpu
    labels, scores = [], []
    for features, y in launcher.datasets.build(test, 10, training=False):  # 50 lists
        labels.append(np.asarray(y))
        scores.append(np.asarray(result.model(features, training=False)))
    labels_np, scores_np = np.concatenate(labels), np.concatenate(scores)
    assert labels_np.shape[0] == 50, labels_np.shape
    return {"backend": backend, "seed": seed, "ndcg_10": round(numpy_ndcg(labels_np, scores_np), 4),
            "steps": result.steps, "train_seconds": round(result.seconds, 2),
            "ms_per_step": round(1000 * result.seconds / result.steps, 2),
            "cpu_ms_per_step": round(1000 * cpu / result.steps, 2)}


def child(args: argparse.Namespace) -> None:
    """Runs every seed on this process's backend; one JSON line each."""
    spec, train, test = args.paths.split(",")
    for seed in (int(s) for s in args.seeds.split(",")):
        print(json.dumps(run_seed(seed, args.workdir, spec, train, test)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--workdir", default="/tmp/bench_backends")
    ap.add_argument("--paths", help=argparse.SUPPRESS)   # child mode: spec,train,test
    args = ap.parse_args()
    if args.paths:
        child(args)
        return
    start = time.perf_counter()
    spec, train, test = convert(args.workdir)
    summary = {}
    for backend in ("tensorflow", "jax"):
        env = {**os.environ, "KERAS_BACKEND": backend}
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--seeds", args.seeds,
                              "--workdir", args.workdir, "--paths", f"{spec},{train},{test}"],
                             env=env, check=True, capture_output=True, text=True).stdout
        runs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        for r in runs:
            print(json.dumps(r), flush=True)
        vals = [r["ndcg_10"] for r in runs]
        summary[backend] = {
            "ndcg_10_mean": round(statistics.fmean(vals), 4),
            "ndcg_10_stdev": round(statistics.stdev(vals), 4) if len(vals) > 1 else 0.0,
            "ms_per_step_mean": round(statistics.fmean(r["ms_per_step"] for r in runs), 2),
            "cpu_ms_per_step_mean": round(statistics.fmean(r["cpu_ms_per_step"] for r in runs),
                                          2),
            "seeds": len(vals), "steps": runs[0]["steps"]}
        print(json.dumps({"backend": backend, **summary[backend]}), flush=True)
    gap = summary["jax"]["ndcg_10_mean"] - summary["tensorflow"]["ndcg_10_mean"]
    print(json.dumps({"ndcg_10_gap_jax_minus_tf": round(gap, 4), "within_0.01": abs(gap) <= 0.01,
                      "wall_seconds": round(time.perf_counter() - start, 1)}), flush=True)


if __name__ == "__main__":
    main()
