"""Fast exploration of neural-ranker settings on a holdout of the TRAINING lists (no test lists).

The launcher's own pieces (``PiecewiseLinear`` + numpy quantile edges, ``FeatureEmbedding``,
the masked softmax loss) on padded numpy arrays instead of ELWC + ``tf.data``, so one setting
trains in seconds: every 5th list of ``rank.train`` is held out, the rest trains; NDCG@10
(``ltr_files.numpy_ndcg``) of the holdout is printed after each of ``evals``
equal slices of ``steps``, plus the NDCG of 1,000 training lists at the end (train vs
holdout = over- or under-fitting). ``ens: N`` averages N seeds' scores. Settings found here
are then confirmed through the launcher with ``bench_ranking_quality.py``.

Usage (one JSON of overrides per setting; keys: seed, bins, fdim, hidden, drop, lr, bs,
steps, evals, targets, loss, sched, ens, ema, wd, fdrop; ``ema: m`` scores an exponential
moving average of the weights (decay ``m`` per step) instead of the last weights; ``wd``:
AdamW decoupled weight decay; ``fdrop``: drops whole features of a list (after the
embedding) with that rate while training)::

    nice -n 10 python benchmarks/explore_ranking_holdout.py /tmp/synth5k '{}' '{"fdim": 8}'
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ltr_files import numpy_ndcg, read_lightgbm  # noqa: E402

L = 32
BASE = {"seed": 0, "bins": 8, "fdim": 0, "hidden": [64, 32], "drop": 0.0, "lr": 1e-3,
        "bs": 32, "steps": 800, "evals": 8, "targets": "gains", "loss": "softmax",
        "sched": None, "ens": 1, "ema": 0.0, "wd": 0.0, "fdrop": 0.0}


def as_lists(x: np.ndarray, y: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[Q, L, D]`` features and ``[Q, L]`` labels (-1 on padding)."""
    xs = np.zeros((len(sizes), L, x.shape[1]), "float32")
    ys = np.full((len(sizes), L), -1.0, "float32")
    start = 0
    for i, n in enumerate(sizes):
        xs[i, :n], ys[i, :n] = x[start:start + n], y[start:start + n]
        start += n
    return xs, ys


def build(cfg: dict, edges: np.ndarray | None, dim: int):  # noqa: ANN201
    import keras

    from beam_prep.codegen.numeric_layers import PiecewiseLinear
    from beam_prep.ranking.train.scorers.feature_embedding import FeatureEmbedding

    keras.utils.set_random_seed(cfg["seed"])
    inp = keras.Input((L, dim))
    h = inp
    if edges is not None:
        h = PiecewiseLinear(edges)(h)
    if cfg["fdim"]:
        h = FeatureEmbedding(cfg["fdim"], expand=edges is None)(h)
    if cfg["fdrop"]:
        shape = (None, 1, dim, 1) if (edges is not None or cfg["fdim"]) else (None, 1, dim)
        h = keras.layers.Dropout(cfg["fdrop"], noise_shape=shape, seed=cfg["seed"])(h)
    h = keras.layers.Reshape((L, -1))(h)
    for units in cfg["hidden"]:
        h = keras.layers.Dense(units, activation="relu")(h)
        if cfg["drop"]:
            h = keras.layers.Dropout(cfg["drop"])(h)
    return keras.Model(inp, keras.layers.Reshape((L,))(keras.layers.Dense(1)(h)))


class _Ema:
    """Keras callback: numpy exponential moving average of the weights after every step."""

    def __new__(cls, model, decay):  # noqa: ANN001, ANN204, D102
        import keras

        class Ema(keras.callbacks.Callback):
            def __init__(self) -> None:
                super().__init__()
                self.avg = [w.copy() for w in model.get_weights()]

            def on_train_batch_end(self, batch, logs=None) -> None:  # noqa: ANN001
                for a, w in zip(self.avg, model.get_weights()):
                    a *= decay
                    a += (1.0 - decay) * w

            def swap_in(self) -> list:
                raw = model.get_weights()
                model.set_weights(self.avg)
                return raw

        return Ema()


def train_one(cfg: dict, xtr, ytr, xva, yva) -> tuple[dict, np.ndarray]:  # noqa: ANN001
    """One seed: history of holdout NDCG, train NDCG, holdout scores."""
    import keras
    import tensorflow as tf

    from beam_prep.codegen.numeric_layers import numpy_stats
    from beam_prep.ranking.train.losses import get_loss

    edges = (numpy_stats(xtr[ytr >= 0].astype("float64"), cfg["bins"])["edges"]
             if cfg["bins"] else None)
    model = build(cfg, edges, xtr.shape[-1])
    lr = cfg["lr"]
    if cfg["sched"] == "cosine":
        lr = keras.optimizers.schedules.CosineDecay(cfg["lr"], cfg["steps"], alpha=0.01)
    loss = (get_loss("softmax", softmax_targets=cfg["targets"]) if cfg["loss"] == "softmax"
            else get_loss(cfg["loss"]))
    opt = (keras.optimizers.AdamW(lr, weight_decay=cfg["wd"]) if cfg["wd"]
           else keras.optimizers.Adam(lr))
    model.compile(opt, loss=loss)
    ema = _Ema(model, cfg["ema"]) if cfg["ema"] else None
    ds = tf.data.Dataset.from_tensor_slices((xtr, ytr)).shuffle(10_000, seed=cfg["seed"])
    ds = ds.repeat().batch(cfg["bs"])
    hist, cpu = [], time.process_time()
    for i in range(cfg["evals"]):
        model.fit(ds, epochs=1, steps_per_epoch=cfg["steps"] // cfg["evals"], verbose=0,
                  callbacks=[ema] if ema else None)
        raw = ema.swap_in() if ema else None
        s = model.predict(xva, batch_size=512, verbose=0)
        if ema and i != cfg["evals"] - 1:
            model.set_weights(raw)
        hist.append(round(numpy_ndcg(yva.astype("float64"), s.astype("float64")), 4))
    tr = numpy_ndcg(ytr[:1000].astype("float64"),
                    model.predict(xtr[:1000], batch_size=512, verbose=0).astype("float64"))
    return ({"train_ndcg_1k": round(tr, 4), "holdout_last": hist[-1], "holdout_best": max(hist),
             "hist": hist, "cpu_s": round(time.process_time() - cpu, 1)}, s)


def main(argv: list[str]) -> None:  # noqa: D103
    x, y, sizes = read_lightgbm(os.path.join(argv[0], "rank.train"), 24)
    xs, ys = as_lists(x, y, sizes)
    hold = np.arange(len(xs)) % 5 == 0
    for text in argv[1:] or ["{}"]:
        cfg = {**BASE, **json.loads(text)}
        runs = [train_one({**cfg, "seed": cfg["seed"] + i}, xs[~hold], ys[~hold], xs[hold],
                          ys[hold]) for i in range(cfg["ens"])]
        out = {"cfg": cfg, **runs[0][0]}
        if cfg["ens"] > 1:
            mean = np.mean([s for _, s in runs], axis=0).astype("float64")
            out["members_last"] = [r["holdout_last"] for r, _ in runs]
            out["ensemble_holdout"] = round(numpy_ndcg(ys[hold].astype("float64"), mean), 4)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
