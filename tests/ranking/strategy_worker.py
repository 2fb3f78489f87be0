"""Subprocess body for the strategy tests (logical devices must be set before TF starts).

Usage: python -m tests.ranking.strategy_worker <mode> <tmp_dir>
modes: mirrored (2 logical CPUs, fit vs single device after one SGD step, and after three
with weight averaging), multi_worker
(TF_CONFIG from the environment, custom loop). Prints one JSON line prefixed by RESULT.
"""

from __future__ import annotations

import json
import sys


def main(mode: str, tmp: str) -> None:
    import tensorflow as tf

    from beam_prep.ranking.train.strategy import make_strategy

    if mode == "mirrored":
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
        mwms = None
    else:
        mwms = make_strategy("multi_worker")  # before any other TensorFlow op
    import numpy as np

    from beam_prep.ranking.train.hparams import RankingHparams
    from beam_prep.ranking.train.launcher import RankingLauncher
    from tests.ranking.train_fixtures import (
        SPEC,
        config_yaml,
        copy_sample,
        elwc_parse_fn,
        sample_layers,
    )

    paths = copy_sample(tmp + "/data_" + mode)
    out = {}
    # "<strategy>_ema": 3 steps with weight averaging (training.ema_momentum), 1 step a pass.
    strategies = (["mirrored", "default", "mirrored_ema", "default_ema"] if mode == "mirrored"
                  else ["multi_worker"])
    for run in strategies:
        name = run.removesuffix("_ema")
        ema = name != run
        text = config_yaml(paths, f"{tmp}/model_{run}", strategy=name,
                           epochs=3 if ema else 1, steps=1)
        hp = RankingHparams.from_yaml_text(
            text, overrides=["training.optimizer=sgd", "training.learning_rate=0.1",
                             "data.valid_pattern=null",
                             f"training.ema_momentum={0.6 if ema else 'null'}"])
        launcher = RankingLauncher(hp, layers=sample_layers(), vocab_rows={},
                                   parse_fn=elwc_parse_fn(SPEC, 4),
                                   strategy=mwms if name == "multi_worker" else None)
        res = launcher.run()
        out[run] = {"replicas": launcher.strategy.num_replicas_in_sync, "steps": res.steps,
                     "loop": launcher.loop, "chief": launcher.chief,
                     "averaging": res.state.settings["training.ema_momentum"],
                     "weights": [np.asarray(w).tolist() for w in res.model.get_weights()]}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
