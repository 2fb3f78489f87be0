"""Test NDCG@10 against ensemble size, from one run of ``bench_ranking_quality.py``.

``model.ensemble: N`` averages N members, each trained with its own seed
(``training.seed + i``). This script answers how many members are worth their CPU: it reopens
a benchmark run directory (``<workdir>/run_<fold>``, which holds the run's ELWC files and
``model_<seed>``), raises the ensemble to ``--members`` (members already trained there are
loaded from their best weights, not retrained; the missing ones are trained with the same
config), scores the test lists whole with every member, and prints the NDCG@10 of each member
alone and of the mean of the first k members, for every k. Only the run's own validation
carve decides each member's epochs, as in the benchmark; the test lists choose nothing.

Usage::

    nice -n 10 python benchmarks/ensemble_curve.py --run /tmp/q36/w_pointwise5k/run_0 \\
        --seed 0 --members 5 --config examples/train_synthetic.yaml [section.key=value ...]

The overrides must be those of the benchmark run (its members' architecture). Prints one JSON
line per member and a summary line with ``mean_of_first_k``.

Example:
    >>> mean_of_first([np.array([[1.0, 0.0]]), np.array([[0.0, 3.0]])], 2).tolist()
    [[0.5, 1.5]]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

try:
    from benchmarks.bench_ranking_quality import (
        CONFIG,
        bench_hparams,
        launcher_seed,
        run_files,
        score_lists,
    )
    from benchmarks.ltr_files import numpy_ndcg
except ImportError:  # run as a script: benchmarks/ is on sys.path
    from bench_ranking_quality import CONFIG, bench_hparams, launcher_seed, run_files, score_lists
    from ltr_files import numpy_ndcg


def mean_of_first(scores: list[np.ndarray], k: int) -> np.ndarray:
    """The mean of the first ``k`` members' ``[lists, width]`` scores (the served score of
    ``model.ensemble: k``)."""
    return np.mean(np.stack(scores[:k]), axis=0)


def main() -> None:  # noqa: D103
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="a bench workdir's run_<fold> directory")
    ap.add_argument("--seed", type=int, default=0, help="the bench seed (model_<seed>)")
    ap.add_argument("--training_seed", type=int, default=None,
                    help="member 0's training.seed (default: the bench's 1000 * seed)")
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--config", default=CONFIG)
    ap.add_argument("overrides", nargs="*", help="the benchmark run's section.key=value")
    args = ap.parse_args()
    from beam_prep.ranking.train.launcher import RankingLauncher
    from beam_prep.ranking.train.scorers.ensemble import member_models

    files = run_files(args.run)
    sizes = np.loadtxt(os.path.join(args.run, "rank.test.query"), dtype="int64", ndmin=1)
    seed = launcher_seed(args.seed) if args.training_seed is None else args.training_seed
    hp = bench_hparams(os.path.join(args.run, f"model_{args.seed}"), files["spec"],
                       files["train"], files.get("valid"), seed,
                       [*args.overrides, f"model.ensemble={args.members}"], args.config)
    launcher = RankingLauncher(hp, layers={}, vocab_rows={})
    cpu = time.process_time()
    result = launcher.run()
    cpu = time.process_time() - cpu
    members = member_models(result.model)
    assert len(members) == args.members, [m.name for m in members]
    labels, (*scores, served), _ = score_lists([*members, result.model], launcher,
                                               files["test"], len(sizes), int(sizes.sum()))
    for i, s in enumerate(scores):
        with open(os.path.join(hp.training.model_dir, f"member_{i}", "run_state.json")) as f:
            best = json.load(f).get("best") or {}  # none without validation lists
        print(json.dumps({"member": i, "training_seed": seed + i,
                          "ndcg_10": round(numpy_ndcg(labels, s), 4),
                          "val_ndcg_10": (None if best.get("value") is None
                                          else round(best["value"], 4)),
                          "best_epoch": best.get("epoch")}), flush=True)
    assert np.allclose(served, mean_of_first(scores, len(scores)), atol=1e-5)
    curve = [round(numpy_ndcg(labels, mean_of_first(scores, k)), 4)
             for k in range(1, len(scores) + 1)]
    print(json.dumps({"run": args.run, "seed": args.seed, "members": args.members,
                      "mean_of_first_k": curve, "cpu_s_new_members": round(cpu, 1),
                      "config": args.config, "overrides": args.overrides}), flush=True)


if __name__ == "__main__":
    main()
