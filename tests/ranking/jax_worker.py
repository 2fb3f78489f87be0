"""Subprocess body of the JAX backend tests (KERAS_BACKEND and XLA_FLAGS are set by the caller).

Usage: python -m tests.ranking.jax_worker <mode> <tmp_dir>

modes:
  step       one SGD step on the sample, single device vs DataParallel vs ModelParallel (tables
             sharded by rows) from the same initial weights; the JAX-only config errors; every
             loss and metric on fixed values
  launcher   the launcher (data_parallel, early stopping, TensorBoard, export) on the synthetic
             early-stopping data of test_launcher, then the sample with its vocabulary copied
             into tmp (export + the JAX model's scores); then a resume run; then
             test_launcher's exact-validation case (val_loss / NDCG vs numpy)
  ema        weight averaging in fit: the model against a numpy average of the checkpointed
             trajectory, a resume against one run, a refused optimizer switch
  multi      one process of a 2-process data_parallel run (KERAS_DISTRIBUTION_* in the env)
  module     the generated preprocessing module of tests' artifacts, in tf.data, on this backend
  device_loop  DeviceLoop (several train steps per jitted program) vs one step per call;
             compile counts; the finite guard inside an execution
  stream_loop  StreamLoop (superbatches of a streamed set) vs one streamed step per call;
             the stacks against the stream; compile counts; the finite guard

Prints one JSON line prefixed by RESULT.
"""

from __future__ import annotations

import json
import os
import shutil
import sys


def _sample_launcher_hp(tmp: str, strategy: str, **over):
    from beam_prep.ranking.train.hparams import RankingHparams
    from tests.ranking.train_fixtures import config_yaml, copy_sample

    paths = copy_sample(os.path.join(tmp, "data"))
    text = config_yaml(paths, os.path.join(tmp, "model"), strategy=strategy, **over)
    return paths, RankingHparams.from_yaml_text(text, overrides=[
        "distribution.backend=jax", "model.distributed_embedding_min_rows=0"])


def step(tmp: str) -> dict:
    import keras
    import numpy as np

    from beam_prep.ranking.train.jax_backend import JaxRankingLauncher
    from beam_prep.ranking.train.losses import get_loss

    out: dict = {}
    weights0 = None
    features = labels = None
    for strategy in ("default", "data_parallel", "model_parallel"):
        paths, hp = _sample_launcher_hp(os.path.join(tmp, strategy), strategy)
        keras.distribution.set_distribution(None)
        launcher = JaxRankingLauncher(hp, layers=_vocab_layers(paths["vocab"]))
        ds = launcher.datasets.train_dataset()
        model = launcher.build_model(ds.element_spec)
        if features is None:
            features, labels = next(iter(ds))
            features = {k: v.numpy() for k, v in features.items()}
            labels = labels.numpy()
        if weights0 is None:
            weights0 = [np.asarray(w) for w in model.get_weights()]
        # Padded (sharded) tables have extra rows: copy the common ones.
        model.set_weights([_fit(w0, w.shape) for w0, w in zip(weights0, model.get_weights())])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss=get_loss("softmax"),
                      jit_compile=True)
        loss = float(model.train_on_batch(features, labels, return_dict=True)["loss"])
        out[strategy] = {
            "loss": loss,
            "weights": [np.asarray(w)[:weights0[i].shape[0]].tolist()
                        for i, w in enumerate(model.get_weights())],
            "specs": {v.path: str(getattr(v.value.sharding, "spec", None)) for v in model.weights},
            "rows": dict(launcher.preprocessor.id_rows),
            "mesh": (list(launcher.distribution.device_mesh.shape)
                     if launcher.distribution is not None else None),
        }
    out["errors"] = _config_errors(tmp)
    out["losses"] = losses_and_metrics()
    return out


def _config_errors(tmp: str) -> dict:
    """Messages of the JAX-only checks: batch over the data replicas, mesh size, custom loop."""
    from beam_prep.errors import SpecError
    from beam_prep.ranking.train.jax_backend import JaxRankingLauncher

    cases = {"odd_batch": ("data_parallel", {"batch": 3}, []),
             "mesh": ("model_parallel", {}, ["distribution.model_parallel_size=3"]),
             "custom_loop": ("data_parallel", {"loop": "custom"}, [])}
    out = {}
    for name, (strategy, over, extra) in cases.items():
        paths, hp = _sample_launcher_hp(os.path.join(tmp, "err_" + name), strategy, **over)
        hp = type(hp).from_dict(hp.to_dict(), overrides=extra)
        try:
            JaxRankingLauncher(hp, layers=_vocab_layers(paths["vocab"])).validate(None)
            out[name] = None
        except SpecError as e:
            out[name] = str(e)
    out["notices"] = _model_parallel_notices()
    return out


def _model_parallel_notices() -> dict:
    """The warnings of ``model_parallel`` with and without tables to shard."""
    import warnings

    from beam_prep.ranking.train.jax_distribution import make_distribution

    out = {}
    for name, tables in (("no_tables", {}), ("tables", {"doc_id": 8}), ("again", {})):
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            make_distribution("model_parallel", tables=tables)
        out[name] = [(type(w.message).__name__, str(w.message)) for w in shown]
    return out


def _fit(w0, shape):
    import numpy as np

    if w0.shape == shape:
        return w0
    out = np.zeros(shape, w0.dtype)
    out[:w0.shape[0]] = w0
    return out


def _vocab_layers(vocab: str) -> dict:
    import keras

    return {"query_tokens": keras.layers.StringLookup(vocabulary=vocab),
            "document_tokens": keras.layers.StringLookup(vocabulary=vocab)}


def launcher(tmp: str) -> dict:
    import numpy as np
    import tensorflow as tf

    from beam_prep.ranking.train.backend import make_launcher as build_launcher
    from tests.ranking import test_launcher as tl
    from tests.ranking.train_fixtures import served_like

    out: dict = {}
    # 1. Early stopping + TensorBoard on the synthetic data (fit on data_parallel).
    paths = tl._write_data(os.path.join(tmp, "es_data"))
    hp = tl._hparams(paths, os.path.join(tmp, "es_model"))
    hp = type(hp).from_dict({**hp.to_dict(), "distribution": {
        "backend": "jax", "strategy": "data_parallel"}})
    lau = build_launcher(hp)
    res = lau.run()
    labels, scores = [], []
    for features, y in lau.datasets.valid_dataset():
        labels.append(y.numpy())
        scores.append(np.asarray(res.model(features, training=False)))
    out["es"] = {"history": res.history, "steps": res.steps, "type": type(lau).__name__,
                 "ndcg_of_returned_model": tl._numpy_ndcg(np.concatenate(labels),
                                                          np.concatenate(scores), 2),
                 "train_scalars": tl._scalars(os.path.join(tmp, "es_model", "logs", "train")),
                 "valid_scalars": tl._scalars(os.path.join(tmp, "es_model", "logs",
                                                           "validation"))}
    # 2. The sample (string lookups over a vocabulary copied here), exported.
    sample_tmp = os.path.join(tmp, "sample")
    paths, hp = _sample_launcher_hp(sample_tmp, "data_parallel", epochs=2)
    hp = type(hp).from_dict(hp.to_dict(), overrides=[
        f"training.export_dir={os.path.join(sample_tmp, 'export')}"])
    lau = build_launcher(hp, layers=_vocab_layers(paths["vocab"]))
    res = lau.run()
    records = [r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(paths["train"]))]
    feats, _ = lau.datasets.parse_fn(tf.constant(records))
    scores = np.asarray(res.model(lau.preprocessor(feats), training=False))
    np.save(os.path.join(sample_tmp, "jax_scores.npy"), served_like(scores, feats["__mask__"]))
    shutil.copytree(paths["dir"], os.path.join(sample_tmp, "records"))
    out["sample"] = {"history": res.history, "steps": res.steps, "export": res.export_path,
                     "ckpts": sorted(os.listdir(os.path.join(sample_tmp, "model", "ckpt")))}
    # 3. Resume: two more epochs over the same model_dir continue from step 6.
    hp2 = type(hp).from_dict(hp.to_dict(), overrides=["training.epochs=4",
                                                      "training.export_dir=null"])
    res2 = build_launcher(hp2, layers=_vocab_layers(paths["vocab"])).run()
    out["resumed"] = {"history": res2.history, "steps": res2.steps}
    shutil.rmtree(paths["dir"])  # the artifacts (vocabulary) are gone: the export must not care
    out["validation"] = validation(os.path.join(tmp, "validation"))
    out["ensemble"] = ensemble(os.path.join(tmp, "ensemble"))
    out["sharded_ensemble"] = sharded_ensemble(os.path.join(tmp, "sharded_ensemble"))
    return out


def ensemble(tmp: str) -> dict:
    """``model.ensemble: 2`` on JAX, exported: its members' and the averaged model's scores
    on the validation lists, and what the run record says the export scores there."""
    import numpy as np

    from beam_prep.ranking.train.backend import make_launcher as build_launcher
    from beam_prep.ranking.train.run_state import load_state
    from beam_prep.ranking.train.scorers.ensemble import member_models
    from tests.ranking import test_launcher as tl

    paths = tl._write_data(os.path.join(tmp, "data"))
    hp = tl._hparams(paths, os.path.join(tmp, "model"), epochs=2, steps_per_epoch=1,
                     early_stopping_metric="val_ndcg_2",
                     export_dir=os.path.join(tmp, "export"))
    hp = type(hp).from_dict(hp.to_dict(), overrides=["distribution.backend=jax",
                                                     "model.ensemble=2"])
    launcher = build_launcher(hp)
    result = launcher.run()
    members = member_models(result.model)
    member_scores, served = [], []
    for features, _ in launcher.datasets.valid_dataset():
        member_scores.append([np.asarray(m(features, training=False)) for m in members])
        served.append(np.asarray(result.model(features, training=False)))
    mean = np.concatenate([np.mean(s, axis=0) for s in member_scores])
    return {"type": type(launcher).__name__, "members": len(members),
            "mean_vs_served": float(np.abs(mean - np.concatenate(served)).max()),
            "members_differ": float(np.abs(np.concatenate([s[0] - s[1]
                                                           for s in member_scores])).max()),
            "export": result.export_path, "valid": paths["valid"],
            "export_metrics": load_state(hp.training.model_dir).export["metrics"],
            "member_dirs": sorted(os.listdir(hp.training.model_dir))}


def sharded_ensemble(tmp: str) -> dict:
    """``model.ensemble: 2`` with ``model_parallel`` (id tables sharded by rows over the 2
    devices), exported: the members' and the model's scores on the sample's lists (saved as
    ``jax_scores.npy`` beside ``records/`` and ``export/``, for a TensorFlow-only process),
    and the sharding of every member's tables."""
    import numpy as np
    import tensorflow as tf

    from beam_prep.ranking.train.backend import make_launcher as build_launcher
    from beam_prep.ranking.train.scorers.ensemble import member_models
    from tests.ranking.train_fixtures import served_like

    paths, hp = _sample_launcher_hp(tmp, "model_parallel", epochs=1)
    hp = type(hp).from_dict(hp.to_dict(), overrides=[
        "model.ensemble=2", f"training.export_dir={os.path.join(tmp, 'export')}"])
    lau = build_launcher(hp, layers=_vocab_layers(paths["vocab"]))
    res = lau.run()
    records = [r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(paths["train"]))]
    feats, _ = lau.datasets.parse_fn(tf.constant(records))
    inputs = lau.preprocessor(feats)
    members = member_models(res.model)
    member_scores = [np.asarray(m(inputs, training=False)) for m in members]
    served = np.asarray(res.model(inputs, training=False))
    np.save(os.path.join(tmp, "jax_scores.npy"), served_like(served, feats["__mask__"]))
    shutil.copytree(paths["dir"], os.path.join(tmp, "records"))
    return {"type": type(lau).__name__, "members": len(members), "export": res.export_path,
            "mean_vs_served": float(np.abs(np.mean(member_scores, axis=0) - served).max()),
            "members_differ": float(np.abs(member_scores[0] - member_scores[1]).max()),
            "table_specs": sorted({str(getattr(v.value.sharding, "spec", None))
                                   for m in members for v in m.weights
                                   if v.path.endswith("_table/embeddings")}),
            "tables": sum(v.path.endswith("_table/embeddings")
                          for m in members for v in m.weights)}


def ema(tmp: str) -> dict:
    """test_weight_averaging's fit cases on this backend: a plain and an averaged run (the
    trajectory read back from the checkpoints), 3 epochs against 2 and a resumed third, and a
    resume that switches the optimizer (refused)."""
    import numpy as np

    from beam_prep.errors import SpecError
    from beam_prep.ranking.train.backend import make_launcher as build_launcher
    from tests.ranking import test_launcher as tl
    from tests.ranking import test_weight_averaging as twa

    paths = tl._write_data(os.path.join(tmp, "data"))
    settings = dict(optimizer="sgd", learning_rate=0.3, steps_per_epoch=1,
                    steps_per_execution=1, early_stopping_metric=None)

    def run(name, **training):
        hp = tl._hparams(paths, os.path.join(tmp, name), **{**settings, **training})
        hp = type(hp).from_dict(hp.to_dict(), overrides=["distribution.backend=jax"])
        return build_launcher(hp).run()

    def weights(model):
        return [np.asarray(v).tolist() for v in model.trainable_variables]

    out: dict = {"plain": weights(run("plain", epochs=twa.EPOCHS).model)}
    averaged = run("ema", epochs=twa.EPOCHS, ema_momentum=twa.MOMENTUM)
    out["averaged"] = weights(averaged.model)
    out["trajectory"] = [[w.tolist() for w in step] for step in twa._trajectory(
        "fit", os.path.join(tmp, "ema"), averaged.model)]
    out["whole"] = weights(run("a", epochs=3, ema_momentum=twa.MOMENTUM).model)
    run("b", epochs=2, ema_momentum=twa.MOMENTUM)
    resumed = run("b", epochs=3, ema_momentum=twa.MOMENTUM)
    out["resumed"], out["resumed_steps"] = weights(resumed.model), resumed.steps
    try:
        run("b", epochs=4, optimizer="adam", ema_momentum=twa.MOMENTUM)
        out["refused"] = None
    except SpecError as e:
        out["refused"] = str(e)
    return out


def multi(tmp: str) -> dict:
    import jax
    import numpy as np

    from beam_prep.ranking.train.backend import make_launcher as build_launcher

    pid = int(os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID", "0"))
    multi_host = "KERAS_DISTRIBUTION_NUM_PROCESSES" in os.environ
    paths, hp = _sample_launcher_hp(os.path.join(tmp, f"p{pid}"), "data_parallel",
                                    batch=4, epochs=2)
    hp = type(hp).from_dict(hp.to_dict(), overrides=[
        f"distribution.multi_host={str(multi_host).lower()}",
        f"training.model_dir={os.path.join(tmp, 'model')}",
        f"training.export_dir={os.path.join(tmp, 'export')}"])
    lau = build_launcher(hp, layers=_vocab_layers(paths["vocab"]))
    res = lau.run()
    return {"process_index": jax.process_index(), "process_count": jax.process_count(),
            "devices": jax.device_count(), "history": res.history, "steps": res.steps,
            "chief": lau.chief, "export": res.export_path,
            "weights_sum": float(sum(np.abs(np.asarray(w)).sum() for w in res.model.get_weights()))}


def validation(tmp: str) -> dict:
    from beam_prep.ranking.train.backend import make_launcher
    from tests.ranking import test_launcher as tl

    return tl.exact_validation_case(
        make_launcher, tmp, batch=4, drop=True, loop="fit",
        overrides=("distribution.backend=jax", "distribution.strategy=data_parallel"),
        other_batchings=((10, True), (6, False), (2, True)))


LOSS_LABELS = [[2.0, 1.0, 0.0, -1.0], [0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, -1.0]]
LOSS_SCORES = [[0.5, 1.5, -0.2, 9.0], [0.1, 0.0, 0.3, -0.4], [1.0, 2.0, 3.0, 4.0]]


def losses_and_metrics() -> dict:
    """Every loss (per list) and metric of the launcher on fixed labels/scores.

    On JAX each is computed in one jitted program, as the train step runs it (op by op,
    eager JAX compiles every op: ~7 s for these, against ~1 s jitted). On TensorFlow (the
    oracle side, this test's own process) eagerly."""
    import keras
    import numpy as np

    from beam_prep.ranking.train.hparams import LOSSES
    from beam_prep.ranking.train.losses import get_loss
    from beam_prep.ranking.train.metrics import ranking_metrics

    on_jax = keras.backend.backend() == "jax"
    if on_jax:
        from jax import jit
    else:
        def jit(fn):
            return fn

    y, s = np.array(LOSS_LABELS, np.float32), np.array(LOSS_SCORES, np.float32)
    losses = {name: get_loss(name, reduction=None) for name in LOSSES}
    losses["softmax_gains"] = get_loss("softmax", softmax_targets="gains", reduction=None)
    out = {name: np.asarray(jit(loss)(y, s)).tolist() for name, loss in losses.items()}
    for m in ranking_metrics([2, 4]):
        if on_jax:
            def result(values, labels, scores, m=m):
                return m.stateless_result(m.stateless_update_state(values, labels, scores))

            out[m.name] = float(jit(result)([v.value for v in m.variables], y, s))
        else:
            m.update_state(y, s)
            out[m.name] = float(m.result())
    return out


def device_feed(tmp: str) -> dict:
    """DeviceDataset on 2 CPU devices under data_parallel: passes, order, values, sharding."""
    import keras
    import numpy as np

    from beam_prep.ranking.train.jax_distribution import make_distribution
    from beam_prep.ranking.train.jax_feed import DeviceDataset, use_device_cache

    keras.distribution.set_distribution(make_distribution("data_parallel"))
    n, b = 23, 4
    x = np.arange(n * 3 * 2, dtype="float32").reshape(n, 3, 2)
    y = np.arange(n, dtype="float32")[:, None] * np.ones((1, 3), "float32")
    data = DeviceDataset(({"x": x}, y), batch_size=b, seed=5, chunk_bytes=100)
    it = iter(data)
    seen = []
    for _ in range(3 * data.steps_per_pass):
        feats, labels = next(it)
        rows = np.asarray(labels)[:, 0].astype(int)
        assert np.array_equal(np.asarray(feats["x"]), x[rows])
        seen.append(rows.tolist())
    again = DeviceDataset(({"x": x}, y), batch_size=b, seed=5)
    other = DeviceDataset(({"x": x}, y), batch_size=b, seed=6)
    first = [np.asarray(lab)[:, 0].astype(int).tolist()
             for d in (again, other) for lab in (next(iter(d))[1],)]
    out = {"steps_per_pass": data.steps_per_pass, "seen": seen,
           "same_seed_first": first[0], "other_seed_first": first[1],
           "batch_devices": len(feats["x"].sharding.device_set),
           "auto_on_cpu": use_device_cache("auto", 1),
           "true": use_device_cache(True, 1 << 60), "false": use_device_cache(False, 1)}
    keras.distribution.set_distribution(None)
    return out


def device_cache(tmp: str) -> dict:
    """The launcher with data.device_cache true and false on the same data and seed, and
    both with 3 steps per execution (DeviceLoop, StreamLoop)."""
    from beam_prep.ranking.train.backend import make_launcher as build_launcher
    from tests.ranking import test_launcher as tl

    paths = tl._write_data(os.path.join(tmp, "data"), n_train=16)
    out = {}
    for setting, per_call in ((True, 1), (False, 1), (True, 3), (False, 3)):
        name = str(setting).lower() + ("" if per_call == 1 else f"_x{per_call}")
        hp = tl._hparams(paths, os.path.join(tmp, f"model_{name}"), epochs=6,
                         steps_per_epoch=4, early_stopping_metric=None)
        hp = type(hp).from_dict({**hp.to_dict(), "distribution": {
            "backend": "jax", "strategy": "data_parallel"}},
            overrides=[f"data.device_cache={str(setting).lower()}",
                       f"training.steps_per_execution={per_call}"])
        lau = build_launcher(hp)
        loops: list = []
        fit_input = lau.fit_input

        def spy(train_ds, model, fit_input=fit_input, loops=loops):
            source = fit_input(train_ds, model)
            loops.append(type(model.train_function).__name__)  # the fused loop, if installed
            return source

        lau.fit_input = spy
        res = lau.run()
        out[name] = {"used": lau.device_cache_used, "history": res.history,
                     "steps": res.steps, "per_call": lau.steps_per_execution_used,
                     "loop": loops[0]}
    return out


def _fit_small(strategy: str, steps: int, *, epochs: int = 3, steps_per_epoch: int = 5,
               bad_list: int | None = None, stream: bool = False) -> dict:
    """A 2-layer regressor trained from a DeviceDataset (48 lists of 8, seed 3) with the
    launcher's ConsistentShardings and finite guard, one step per call (``steps`` 1) or
    ``steps`` per DeviceLoop execution. ``bad_list``: that list's features are NaN.
    ``stream``: the same batches in the same order (the cache's pass orders) streamed from the
    host instead, through a DevicePrefetcher (1 step per call) or a StreamLoop."""
    import keras
    import numpy as np
    from keras.src.backend.jax import trainer

    from beam_prep.ranking.train import guard
    from beam_prep.ranking.train.feed import pass_orders
    from beam_prep.ranking.train.jax_distribution import ConsistentShardings, make_distribution
    from beam_prep.ranking.train.jax_feed import (
        DeviceDataset,
        DeviceLoop,
        DevicePrefetcher,
        StreamLoop,
    )

    keras.distribution.set_distribution(make_distribution(strategy))
    jitted = []
    original = trainer.jit

    def spy(fn, *args, **kwargs):
        out = original(fn, *args, **kwargs)
        jitted.append(out)
        return out

    trainer.jit = spy
    try:
        keras.utils.set_random_seed(0)
        rng = np.random.default_rng(1)
        x = rng.normal(size=(48, 6)).astype("float32")
        y = (x @ rng.normal(size=(6, 1))).astype("float32")
        if bad_list is not None:
            x[bad_list] = np.nan
        model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(1)])
        model.compile("adam", "mse", metrics=["mae"], jit_compile=True)
        loop = None
        if stream:
            host = ((x[idx], y[idx]) for idx in pass_orders(48, 8, 3))
            if steps > 1:
                loop = StreamLoop(model, host, steps=steps, steps_per_epoch=steps_per_epoch)
            else:
                source = DevicePrefetcher(host, depth=2).generator()
        else:
            data = DeviceDataset((x, y), batch_size=8, seed=3)
            source = data.generator()
            if steps > 1:
                loop = DeviceLoop(model, data, steps=steps, steps_per_epoch=steps_per_epoch)
        if loop is not None:
            loop.install()
            source = loop.data()
        out: dict = {}
        try:
            hist = model.fit(source, epochs=epochs, steps_per_epoch=steps_per_epoch,
                             callbacks=[guard.keras_callback(), ConsistentShardings()],
                             verbose=0, shuffle=False)
            out["history"] = hist.history
        except guard.Diverged as e:
            out["diverged"] = {"name": e.name, "step": e.step, "epoch": e.epoch}
        out["iterations"] = int(model.optimizer.iterations.numpy())
        out["weights"] = [np.asarray(w).tolist() for w in model.get_weights()]
        out["train_compiles"] = sum(f._cache_size() for f in jitted
                                    if hasattr(f, "_cache_size"))
        if loop is not None:
            out["train_compiles"] += loop.compiles()
            out["executions"] = loop.executions
        return out
    finally:
        trainer.jit = original
        keras.distribution.set_distribution(None)


def device_loop(tmp: str) -> dict:
    """One step per call vs DeviceLoop executions (3 steps; 5-step epochs end mid-execution),
    without and with a distribution; then a NaN list under both, for the guard."""
    import numpy as np

    from beam_prep.ranking.train.feed import pass_order

    out: dict = {}
    for strategy in ("default", "data_parallel"):
        out[strategy] = {str(k): _fit_small(strategy, k) for k in (1, 3)}
    order = np.concatenate([pass_order(48, 8, 3, p) for p in range(3)])
    bad = int(order[7][0])  # a list of step 8 (0-based 7), the second step of epoch 2
    first = min(i for i, rows in enumerate(order) if bad in rows)
    out["nan"] = {"first_step": first + 1,
                  **{str(k): _fit_small("default", k, bad_list=bad) for k in (1, 3)}}
    return out


def stream_loop(tmp: str) -> dict:
    """Superbatches: the streamed feed one step per call vs StreamLoop executions (3 steps;
    5-step epochs end with a padded 2-step execution), without and with a distribution; the
    stacks themselves against the stream; then a NaN list, for the guard."""
    import keras
    import numpy as np

    from beam_prep.ranking.train.feed import pass_order
    from beam_prep.ranking.train.jax_distribution import make_distribution
    from beam_prep.ranking.train.jax_feed import StreamLoop

    out: dict = {}
    for strategy in ("default", "data_parallel"):
        out[strategy] = {str(k): _fit_small(strategy, k, stream=True) for k in (1, 3)}
    order = np.concatenate([pass_order(48, 8, 3, p) for p in range(3)])
    bad = int(order[7][0])
    first = min(i for i, rows in enumerate(order) if bad in rows)
    # The one-step guard is device_loop's "nan"/"1" (the same callback whatever the feed).
    out["nan"] = {"first_step": first + 1,
                  "3": _fit_small("default", 3, bad_list=bad, stream=True)}
    # The stacks: 23 lists, batches of 4 (5 steps a pass), stream = 3 passes of the pass
    # orders; 4 steps per execution over 5-step epochs: 4 + 1 (padded) per epoch.
    keras.distribution.set_distribution(make_distribution("data_parallel"))
    ids = np.arange(23, dtype="float32")
    stream = [order_ for p in range(3) for order_ in pass_order(23, 4, 9, p)]
    host = iter([({"x": ids[o][:, None] * np.ones((1, 3), "float32")}, ids[o]) for o in stream])
    loop = StreamLoop(None, host, steps=4, steps_per_epoch=5)
    stacks = []
    for _ in range(6):
        feats, labels = next(loop.feed)
        stacks.append({"x": np.asarray(feats["x"]).tolist(),
                       "labels": np.asarray(labels).tolist(),
                       "devices": len(labels.sharding.device_set),
                       "step_axis_split": labels.sharding.shard_shape(labels.shape)[0] != 4})
    loop.feed.close()
    keras.distribution.set_distribution(None)
    out["stacks"] = stacks
    out["stream"] = [o.tolist() for o in stream]
    return out


MODES = {"step": step, "launcher": launcher, "multi": multi, "device_feed": device_feed,
         "device_cache": device_cache, "device_loop": device_loop, "stream_loop": stream_loop,
         "ema": ema}


def main(mode: str, tmp: str) -> None:
    """Runs one mode, or several named with commas (one process: one JAX start-up), each in
    its own folder under ``tmp``; prints one ``RESULT`` line (a mode's result, or a mapping of
    mode to result for several)."""
    modes = mode.split(",")
    if len(modes) == 1:
        result = MODES[mode](tmp)
    else:
        result = {}
        for name in modes:
            os.makedirs(os.path.join(tmp, name), exist_ok=True)
            result[name] = MODES[name](os.path.join(tmp, name))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
