"""Worker of tests/ranking/test_hostile_feature_names.py: one backend per process.

``python -m tests.ranking.hostile_names_worker <backend> <tmp>`` trains the TF Ranking
sample with its features renamed ``q tokens`` / ``doc/tokens`` (all tables distributed:
``keras_rs`` DistributedEmbedding), exports it, and prints as JSON the largest difference
between the reloaded ELWC signature's scores and the trained model's.
"""

from __future__ import annotations

import json
import os
import sys


def main(backend: str, tmp: str) -> None:
    os.environ["KERAS_BACKEND"] = backend
    import keras
    import numpy as np
    import tensorflow as tf

    from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo
    from beam_prep.ranking.train.backend import make_launcher
    from beam_prep.ranking.train.hparams import RankingHparams
    from tests.ranking.test_hostile_feature_names import RENAMED, _renamed
    from tests.ranking.train_fixtures import SAMPLE, SPEC, config_yaml, copy_sample, served_like

    paths = copy_sample(tmp)
    records = [_renamed(r.numpy()) for r in tf.data.TFRecordDataset(SAMPLE)]
    with tf.io.TFRecordWriter(os.path.join(paths["dir"], "train-00000.tfrecord")) as w:
        for r in records:
            w.write(r)
    ElwcFeatureSpec(context=(FeatureInfo("q tokens", "string", (None,)),),
                    example=(FeatureInfo("doc/tokens", "string", (None,)),),
                    label=SPEC.label).save(paths["spec"])
    strategy = "data_parallel" if backend == "jax" else "default"
    overrides = ["model.distributed_embedding_min_rows=0",
                 f"training.export_dir={os.path.join(tmp, 'export')}"]
    if backend == "jax":
        overrides.append("distribution.backend=jax")
    hp = RankingHparams.from_yaml_text(
        config_yaml(paths, os.path.join(tmp, "m"), epochs=1, strategy=strategy),
        overrides=overrides)
    layers = {n: keras.layers.StringLookup(vocabulary=paths["vocab"]) for n in RENAMED.values()}
    launcher = make_launcher(hp, layers=layers)
    result = launcher.run()
    features, _ = launcher.datasets.parse_fn(tf.constant(records))
    want = served_like(result.model(launcher.preprocessor(features), training=False),
                       features["__mask__"])
    loaded = tf.saved_model.load(os.path.join(tmp, "export"))
    got = loaded.signatures["serving_default"](serialized=tf.constant(records))["scores"]
    print(json.dumps({"max_diff": float(np.abs(got.numpy() - want).max()),
                      "spread": float(np.ptp(want))}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
