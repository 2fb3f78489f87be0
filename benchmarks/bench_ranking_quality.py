"""Quality benchmark: LightGBM LETOR sample -> make-elwc -> train -> NDCG@10 on rank.test.

References on the same split (mean over the 50 test queries, gain 2^l - 1): LightGBM
lambdarank 0.757, random order 0.581. Target: >= 0.73.

Usage: python benchmarks/bench_ranking_quality.py [--steps 600] [--workdir /tmp/bench_rank]
Prints one JSON line: ndcg_10 (mean over test lists), steps, train seconds.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil

DATA = "/work/shared/data/letor/lightgbm"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--workdir", default="/tmp/bench_rank")
    ap.add_argument("--loss", default="softmax")
    args = ap.parse_args()
    w = args.workdir
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    for split in ("train", "test"):
        for suffix in ("", ".query"):
            shutil.copy(f"{DATA}/rank.{split}{suffix}", f"{w}/rank.{split}{suffix}")
    from pipelines import make_elwc

    for split in ("train", "test"):
        make_elwc.main(["--input", f"{w}/rank.{split}", "--input_format", "lightgbm",
                        "--output", f"{w}/elwc_{split}", "--num_features", "300"])
    spec = (glob.glob(f"{w}/elwc_train/**/feature_spec.json", recursive=True) or
            glob.glob(f"{w}/elwc_train/feature_spec.json"))[0]
    train = os.path.join(os.path.dirname(spec), "*.tfrecord*")
    test_dir = os.path.dirname(glob.glob(f"{w}/elwc_test/**/feature_spec.json",
                                         recursive=True)[0])
    from beam_prep.ranking.hparams import RankingHparams
    from beam_prep.ranking.launcher import RankingLauncher
    from beam_prep.ranking.metrics import ndcg

    hp = RankingHparams.from_dict({
        "data": {"feature_spec": spec, "train_pattern": train, "list_size": 32,
                 "train_batch_size": 16, "shuffle_buffer": 256},
        "model": {"hidden_sizes": [64, 32, 16], "batch_norm": False, "dropout": 0.0},
        "training": {"model_dir": f"{w}/model", "loss": args.loss, "learning_rate": 0.001,
                     "epochs": 1, "steps_per_epoch": args.steps},
    })
    import tensorflow as tf

    from beam_prep.ranking.feature_spec import ElwcFeatureSpec

    def log1p(x):  # signed log1p: LETOR features span several orders of magnitude
        return tf.math.log1p(tf.abs(x)) * tf.sign(x)

    names = [f.name for f in ElwcFeatureSpec.load(spec).example]
    launcher = RankingLauncher(hp, layers={n: log1p for n in names}, vocab_rows={})
    result = launcher.run()
    test = launcher.datasets.build(os.path.join(test_dir, "*.tfrecord*"), 10, training=False)
    m = ndcg(10)
    for features, labels in test:
        m.update_state(labels, result.model(features, training=False))
    print(json.dumps({"ndcg_10": round(float(m.result()), 4), "steps": result.steps,
                      "train_seconds": round(result.seconds, 1), "loss": args.loss}))


if __name__ == "__main__":
    main()
