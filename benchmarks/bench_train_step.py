"""Training-step benchmark of the ranking launcher: is the accelerator kept busy?

Runs with keras + jax + numpy alone (no TensorFlow, Beam or tfx-bsl; the TensorFlow backend
is measured too when TensorFlow is importable, and skipped cleanly when it is not). Synthetic
batches shaped like MSLR-WEB30K: ``batch`` lists x ``list_size`` documents x 136 float
features (``f1`` .. ``f136``, as ``make-elwc`` names LETOR features), labels 0-4, 20% of the
entries padding (label -1, features 0, mask 0). The model is the launcher's own
(``RankingModelBuilder`` + ``scorers.input_transforms`` + ``model.compile_ranker``), trained
with Keras ``fit`` as the launcher does (JAX: under ``keras.distribution.DataParallel``).

Cases (``--cases``, comma-separated):

===============  ==========================================================================
``dnn``          ``examples/train.yaml``'s model (one member), batch 256, list size 32
``dasalc``       the same with ``scorer: dasalc`` (input transform ``auto``: log1p)
``synthetic``    ``examples/train_synthetic.yaml``'s model (one member: ``ensemble: 1``)
``dasalc_l128``  ``dasalc`` at list size 128
``dnn_b1024``    ``dnn`` at batch 1024
===============  ==========================================================================

Feeds (``--feeds``): ``keras`` hands host (numpy) batches to ``fit``, which moves them to the
device leaf by leaf (the launcher before the device prefetch); ``prefetch`` is the launcher's
:class:`beam_prep.ranking.train.jax_feed.DevicePrefetcher` (one ``device_put`` per batch, two
batches ahead, on a background thread); ``device_cache`` is the launcher's
``data.device_cache: true``, :class:`beam_prep.ranking.train.jax_feed.DeviceDataset` (the
``--pool`` batches put on the device once, each step gathers its batch there from a seeded
per-pass permutation: no host work per step); ``device_loop`` is ``device_cache`` with
``training.steps_per_execution`` > 1, :class:`beam_prep.ranking.train.jax_feed.DeviceLoop`
(``--per_call`` steps per jitted ``lax.fori_loop``, at most ``--steps``; Keras calls the batch
callbacks once per execution); ``stream_loop`` is the launcher's streamed feed (data over
``data.device_cache``'s budget) with ``--per_call`` steps per call,
:class:`beam_prep.ranking.train.jax_feed.StreamLoop`: the host batches of one execution stacked
into one array per leaf, sent in one ``device_put`` on a background thread while the previous
execution trains, run by ``device_loop``'s program (its one-step twin is ``prefetch``). The
launcher's callbacks (``ConsistentShardings`` and the finite
guard, which reads the loss back after every call) run with every feed but ``keras``.

TensorFlow feeds (``--tf_feeds``; keras on backend ``tensorflow``, in a subprocess with
``KERAS_BACKEND=tensorflow``, ``jit_compile`` off as the launcher off TPU, its finite guard):
``stream`` is the launcher's streamed ``tf.data`` feed (``DatasetBuilder.build``: the batches
written as ELWC TFRecords, read, parsed and preprocessed at every step, prefetched);
``memory_cache`` the lists parsed once and each step's batch gathered from host memory
(:class:`beam_prep.ranking.train.tf_feed.MemoryDataset`, ``data.device_cache``), one step per
``fit`` call; ``memory_loop`` the same with ``--per_call`` steps per call (Keras'
``steps_per_execution``, a divisor of ``--steps`` as the launcher resolves it).

Reported per case and feed:

* ``wall_ms``: wall time per training step in ``fit`` (median epoch after the first, which
  compiles; ``--epochs`` epochs of ``--steps`` steps, validation after each epoch);
* ``device_ms``: time inside the compiled step: the jitted ``train_step`` run back to back on
  one device-resident batch, ``block_until_ready`` at the end (TensorFlow: the compiled
  ``train_function`` on a cached in-memory batch);
* ``host_ms``: time per step the training loop spent on input (next batch, conversion,
  transfer; with the prefetch only the wait for a ready batch, ``stream_loop``: for a ready
  stack) and ``producer_ms`` the prefetch thread's own time per batch (``stream_loop``: per
  stacked batch, its stacking and transfer included; TensorFlow: ``host_ms`` is the wall
  step minus the compiled step, everything the step waits for outside its graph;
  ``producer_ms`` the input pipeline alone, per batch, without training);
* ``busy``: ``device_ms / wall_ms``;
* ``train_compiles`` / ``eval_compiles``: compilations of the train / test step in the run
  (JAX: the jitted functions' cache sizes; TensorFlow: traces of ``train_step`` /
  ``test_step``);
* ``docs_per_s``: real (non-padding) documents trained per second of wall time;
* ``compile_s``: the first epoch's extra time over a timed one (compiles, first transfers);
  ``cache_s`` the one-time transfer of the device cache.

Example::

    python benchmarks/bench_train_step.py --backend jax --out results.json
    python benchmarks/bench_train_step.py --cases dnn,synthetic --steps 10 --feeds prefetch
    python benchmarks/bench_train_step.py --backend tensorflow --cases dnn --per_call 8
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FEATURES = 136
PADDING = 0.2
LABEL_P = (0.52, 0.32, 0.12, 0.03, 0.01)  # MSLR-WEB30K's label mix, roughly

CASES: dict[str, dict[str, Any]] = {
    "dnn": {"config": "examples/train.yaml", "model": {"ensemble": 1}, "batch": 256,
            "list_size": 32},
    "dasalc": {"config": "examples/train.yaml",
               "model": {"scorer": "dasalc", "input_transform": "auto", "ensemble": 1},
               "batch": 256, "list_size": 32},
    "synthetic": {"config": "examples/train_synthetic.yaml", "model": {"ensemble": 1},
                  "batch": 256, "list_size": 32},
    "dasalc_l128": {"config": "examples/train.yaml",
                    "model": {"scorer": "dasalc", "input_transform": "auto", "ensemble": 1},
                    "batch": 256, "list_size": 128},
    "dnn_b1024": {"config": "examples/train.yaml", "model": {"ensemble": 1}, "batch": 1024,
                  "list_size": 32},
}
FEEDS = ("keras", "prefetch", "device_cache", "device_loop", "stream_loop")
TF_FEEDS = ("stream", "memory_cache", "memory_loop")


@dataclasses.dataclass(frozen=True)
class Settings:
    """What one backend process measures.

    Attributes:
        backend: ``jax`` or ``tensorflow``.
        cases: Case names (keys of ``CASES``).
        feeds: JAX feeds (``keras``, ``prefetch``, ``device_cache``, ``device_loop``,
            ``stream_loop``).
        steps: Training steps per epoch.
        epochs: Epochs (the first compiles and is not timed).
        device_steps: Steps of the device-time loop.
        pool: Distinct host batches cycled through.
        distribution: JAX ``data_parallel`` (the issue's setup) or ``default``.
        batch: Overrides every case's batch size (None: the case's).
        per_call: Train steps per execution of the ``device_loop`` / ``stream_loop`` /
            ``memory_loop`` feeds.
        tf_feeds: TensorFlow feeds (``stream``, ``memory_cache``, ``memory_loop``).
    """

    backend: str
    cases: tuple[str, ...]
    feeds: tuple[str, ...]
    steps: int
    epochs: int
    device_steps: int
    pool: int
    distribution: str
    batch: int | None
    per_call: int = 32
    tf_feeds: tuple[str, ...] = ("stream", "memory_cache", "memory_loop")


def synthetic_batches(n: int, batch: int, list_size: int, *, mask: bool,
                      seed: int = 0) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    """``n`` host batches ``(features, labels)``: 136 features ``[B, L, 1]``, labels ``[B, L]``.

    Features are heavy-tailed like MSLR's (counts, BM25-like scores, a third zero); 20% of the
    entries are padding (label -1, features 0).
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        real = rng.uniform(size=(batch, list_size)) >= PADDING
        real[:, 0] = True
        scale = rng.lognormal(0.0, 1.0, size=FEATURES)
        x = rng.lognormal(0.0, 1.5, size=(batch, list_size, FEATURES)) * scale
        x[rng.uniform(size=x.shape) < 0.3] = 0.0
        x = np.where(real[..., None], x, 0.0).astype("float32")
        labels = rng.choice(5, size=(batch, list_size), p=LABEL_P).astype("float32")
        labels = np.where(real, labels, -1.0).astype("float32")
        feats = {f"f{i + 1}": np.ascontiguousarray(x[..., i:i + 1]) for i in range(FEATURES)}
        if mask:
            feats["__mask__"] = real.astype("float32")
        out.append((feats, labels))
    return out


def _hparams(case: dict[str, Any]) -> Any:
    from beam_prep.ranking.train.hparams import RankingHparams

    with open(os.path.join(ROOT, case["config"]), encoding="utf-8") as f:
        hp = RankingHparams.from_yaml_text(f.read())
    model = dataclasses.replace(hp.model, **case["model"])
    return dataclasses.replace(hp, model=model)


def build_model(case: dict[str, Any], batches: list[Any], *, jit_compile: bool = True,
                steps_per_execution: int = 1) -> Any:
    """The launcher's model for ``case`` (input statistics from the first host batch),
    compiled as the launcher does (``jit_compile``, ``steps_per_execution``)."""
    import keras

    from beam_prep.codegen.numeric_layers import numpy_stats
    from beam_prep.ranking.train.model import ModelInputs, RankingModelBuilder, compile_ranker
    from beam_prep.ranking.train.scorers import NEEDS_STATS, input_transforms, scorer_class

    hp = _hparams(case)
    names = tuple(f"f{i + 1}" for i in range(FEATURES))
    feats, labels = batches[0]
    stats = {}
    if hp.model.resolved_input_transform in NEEDS_STATS:
        valid = labels >= 0
        stats = {n: numpy_stats(feats[n][valid].reshape(-1, 1), hp.model.piecewise_bins)
                 for n in names}
    keras.utils.set_random_seed(hp.training.seed)
    inputs = ModelInputs(context_names=(), example_names=names, list_size=labels.shape[1],
                         include_mask=hp.model.scorer == "dasalc")  # as the launcher
    builder = RankingModelBuilder(inputs, hp.model, global_batch_size=labels.shape[0],
                                  scorer_cls=scorer_class(hp.model.scorer),
                                  transforms=input_transforms(hp.model, names, stats,
                                                              list_features=names))
    model = builder.build(feats)
    return compile_ranker(model, hp.training, jit_compile=jit_compile,
                          steps_per_execution=steps_per_execution), hp


class _Timer:
    """Epoch timings from callbacks (training part of each epoch: begin -> validation)."""

    def __init__(self) -> None:
        import keras

        timer = self

        class CB(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
                timer.begin = time.perf_counter()

            def on_test_begin(self, logs: Any = None) -> None:
                timer.epochs.append(time.perf_counter() - timer.begin)

        self.epochs: list[float] = []
        self.begin = 0.0
        self.callback = CB()


class _JitSpy:
    """Records the functions Keras jits (``keras.src.backend.jax.trainer.jit``) by name."""

    def __init__(self) -> None:
        from keras.src.backend.jax import trainer

        self.trainer = trainer
        self.original = trainer.jit
        self.jitted: list[tuple[str, Any]] = []

        def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
            out = self.original(fn, *args, **kwargs)
            self.jitted.append((getattr(fn, "__name__", str(fn)), out))
            return out

        trainer.jit = spy

    def compiles(self, name: str) -> int | None:
        sizes = [f._cache_size() for n, f in self.jitted if n == name
                 and hasattr(f, "_cache_size")]
        return sum(sizes) if sizes else None

    def close(self) -> None:
        self.trainer.jit = self.original


class _HostClock:
    """Time the training loop spends on input: the batch source and Keras' own transfer."""

    def __init__(self) -> None:
        from keras.src.backend.jax import trainer

        self.trainer = trainer
        self.original = trainer._distribute_data
        self.seconds = 0.0

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        trainer._distribute_data = timed

    def wrap(self, source: Any) -> Any:
        while True:
            start = time.perf_counter()
            try:
                item = next(source)
            except StopIteration:
                return
            finally:
                self.seconds += time.perf_counter() - start
            yield item

    def close(self) -> None:
        self.trainer._distribute_data = self.original


def _cycle(batches: list[Any]) -> Any:
    i = 0
    while True:
        yield batches[i % len(batches)]
        i += 1


def _jax_device_ms(model: Any, batch: Any, steps: int) -> float:
    import jax

    from beam_prep.ranking.train.jax_feed import batch_sharding

    state = model._get_jax_state(trainable_variables=True, non_trainable_variables=True,
                                 optimizer_variables=True, metrics_variables=True)
    state = jax.tree_util.tree_map(lambda a: a.copy(), state)  # donation must not eat the model
    data = jax.device_put(batch, jax.tree_util.tree_map(lambda x: batch_sharding(x.shape), batch))
    step = jax.jit(model.train_step, donate_argnums=0)
    logs, state = step(state, data)
    jax.block_until_ready((logs, state))
    start = time.perf_counter()
    for _ in range(steps):
        logs, state = step(state, data)
    jax.block_until_ready((logs, state))
    return 1000.0 * (time.perf_counter() - start) / steps


def _launcher_callbacks(feed: str) -> list[Any]:
    """The launcher's finite guard and ``JaxRankingLauncher.backend_callbacks`` with the
    launcher's feeds, none with Keras' own (the launcher before the device feeds)."""
    if feed == "keras":
        return []
    from beam_prep.ranking.train import guard
    from beam_prep.ranking.train.jax_distribution import ConsistentShardings

    return [guard.keras_callback(), ConsistentShardings()]


def run_jax_case(name: str, s: Settings, feed: str) -> dict[str, Any]:
    """One JAX case with one feed: fit timings, device time, compiles."""
    import jax
    import keras

    from beam_prep.ranking.train.jax_distribution import make_distribution
    from beam_prep.ranking.train.jax_feed import (
        DeviceDataset,
        DeviceLoop,
        DevicePrefetcher,
        StreamLoop,
    )

    case = dict(CASES[name], **({"batch": s.batch} if s.batch else {}))
    keras.distribution.set_distribution(make_distribution(s.distribution))
    mask = case["model"].get("scorer") == "dasalc"
    batches = synthetic_batches(s.pool, case["batch"], case["list_size"], mask=mask)
    spy, clock, timer = _JitSpy(), _HostClock(), _Timer()
    prefetch = cache = loop = None
    try:
        model, _ = build_model(case, batches)
        source = _cycle(batches)
        if feed in ("device_cache", "device_loop"):
            lists = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *batches)
            cache = DeviceDataset(lists, batch_size=case["batch"], seed=0)
            source = cache.generator()
            if feed == "device_loop":
                loop = DeviceLoop(model, cache, steps=min(s.per_call, s.steps),
                                  steps_per_epoch=s.steps)
                loop.install()
                source = loop.data()
        elif feed == "prefetch":
            prefetch = DevicePrefetcher(source, depth=2)
            source = prefetch.generator()
        elif feed == "stream_loop":
            loop = StreamLoop(model, source, steps=min(s.per_call, s.steps),
                              steps_per_epoch=s.steps)
            loop.install()
            prefetch, source = loop.feed, loop.data()
        valid = batches[0]
        t0 = time.perf_counter()
        model.fit(clock.wrap(source), epochs=s.epochs, steps_per_epoch=s.steps,
                  validation_data=valid, validation_batch_size=case["batch"],
                  callbacks=[timer.callback, *_launcher_callbacks(feed)], verbose=0,
                  shuffle=False)
        total = time.perf_counter() - t0
        train_compiles, eval_compiles = spy.compiles("train_step"), spy.compiles("test_step")
        if loop is not None:  # its own jitted program replaces Keras' train step
            train_compiles = (train_compiles or 0) + loop.compiles()
    finally:
        spy.close()
        clock.close()
        if prefetch is not None:
            prefetch.close()
    timed = timer.epochs[1:] or timer.epochs
    wall = 1000.0 * statistics.median(timed) / s.steps
    device = _jax_device_ms(model, batches[0], s.device_steps)
    steps_all = s.steps * s.epochs
    waited = prefetch.wait_seconds if feed == "stream_loop" else 0.0  # inside the loop call
    host = 1000.0 * (clock.seconds + waited) / steps_all
    per_batch = loop.steps if feed == "stream_loop" else 1  # a stack holds per_call batches
    real_docs = float(np.mean([np.sum(b[1] >= 0) for b in batches]))
    keras.distribution.set_distribution(None)
    return {
        "backend": "jax", "case": name, "feed": feed, "batch": case["batch"],
        "list_size": case["list_size"], "wall_ms": round(wall, 3),
        "device_ms": round(device, 3), "host_ms": round(host, 3),
        "producer_ms": (round(1000.0 * prefetch.host_seconds
                              / max(prefetch.produced * per_batch, 1), 3)
                        if prefetch is not None else None),
        "busy": round(device / wall, 3), "train_compiles": train_compiles,
        "eval_compiles": eval_compiles, "docs_per_s": round(real_docs / wall * 1000.0),
        "first_epoch_s": round(timer.epochs[0], 2) if timer.epochs else None,
        "fit_s": round(total, 2), "params": int(model.count_params()),
        "compile_s": (round(timer.epochs[0] - wall * s.steps / 1000.0, 2)
                      if timer.epochs else None),
        "cache_s": round(cache.transfer_seconds, 3) if cache is not None else None,
        "per_call": loop.steps if loop is not None else 1,
    }


def write_elwc(batches: list[Any], root: str) -> tuple[Any, str]:
    """``batches`` as ELWC TFRecords under ``root`` (each list's real documents, in order; the
    reader pads them back to ``list_size``); returns ``(feature spec, file pattern)``."""
    from beam_prep.ranking.data.encode import DenseFloatEncoder, encode_elwc
    from beam_prep.ranking.data.tfrecord import write_tfrecords
    from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo

    names = [f"f{i + 1}" for i in range(FEATURES)]
    spec = ElwcFeatureSpec(context=(), example=tuple(FeatureInfo(n, "float", (), 0.0)
                                                     for n in names),
                           label=LabelInfo("relevance", "float", -1.0))
    encoder = DenseFloatEncoder(names, label_name="relevance", label_dtype="float")
    records = []
    for feats, labels in batches:
        x = np.concatenate([feats[n] for n in names], axis=-1)  # [B, L, F]
        for lst, lab in zip(x, labels):
            real = lab >= 0
            records.append(encode_elwc(encoder.encode(lst[real], lab[real]), b""))
    os.makedirs(root, exist_ok=True)
    write_tfrecords(os.path.join(root, "train-00000.tfrecord"), records)
    return spec, os.path.join(root, "train-*.tfrecord")


class _TraceCount:
    """Traces of the model's train / test step (Python runs only when ``tf.function``
    traces): the compiles of the run on TensorFlow."""

    def __init__(self, model: Any) -> None:
        self.train = self.test = 0
        train, test = model.train_step, model.test_step

        def train_step(data: Any) -> Any:
            self.train += 1
            return train(data)

        def test_step(data: Any) -> Any:
            self.test += 1
            return test(data)

        model.train_step, model.test_step = train_step, test_step


def tf_feed(feed: str, case: dict[str, Any], batches: list[Any], root: str, *,
            seed: int = 0) -> Any:
    """The TensorFlow launcher's training input for ``feed``: ``stream`` is
    ``DatasetBuilder.build`` (read, parse, preprocess every batch in ``tf.data``);
    ``memory_cache`` / ``memory_loop`` the lists parsed once, each step gathering its batch
    from host memory (:class:`beam_prep.ranking.train.tf_feed.MemoryDataset`)."""
    from beam_prep.ranking.train.hparams import DataHparams
    from beam_prep.ranking.train.launcher import DatasetBuilder
    from beam_prep.ranking.train.preprocessor import Preprocessor
    from beam_prep.ranking.train.tf_feed import MemoryDataset, training_lists

    spec, pattern = write_elwc(batches, root)
    mask = case["model"].get("scorer") == "dasalc"
    data = DataHparams(feature_spec="-", train_pattern=pattern, list_size=case["list_size"],
                       train_batch_size=case["batch"])
    builder = DatasetBuilder(data, Preprocessor(spec, {}, list_size=case["list_size"],
                                                include_mask=mask), seed=seed)
    if feed == "stream":
        return builder.train_dataset(), None
    cache = MemoryDataset(training_lists(builder.build(pattern, case["batch"], training=True,
                                                       one_pass=True)),
                          batch_size=case["batch"], seed=seed)
    return cache.dataset(), cache


def _producer_ms(ds: Any, n: int) -> float:
    """The input pipeline alone: ms per batch over ``n`` batches (after a first one)."""
    it = iter(ds)
    next(it)
    start = time.perf_counter()
    for _ in range(n):
        next(it)
    return 1000.0 * (time.perf_counter() - start) / n


def run_tf_case(name: str, s: Settings, feed: str) -> dict[str, Any]:
    """One case on the TensorFlow backend with one feed (the launcher's ``fit``: its finite
    guard, ``steps_per_execution`` 1, or ``--per_call`` steps per call for ``memory_loop``,
    a divisor of ``--steps`` as the launcher resolves it)."""
    import tempfile

    import tensorflow as tf

    from beam_prep.ranking.train import guard
    from beam_prep.ranking.train.feed import resolve_steps_per_execution

    case = dict(CASES[name], **({"batch": s.batch} if s.batch else {}))
    mask = case["model"].get("scorer") == "dasalc"
    batches = synthetic_batches(s.pool, case["batch"], case["list_size"], mask=mask)
    timer = _Timer()
    per_call = (resolve_steps_per_execution(s.per_call, s.steps, auto=s.per_call, divide=True)
                if feed == "memory_loop" else 1)
    with tempfile.TemporaryDirectory() as tmp:
        ds, cache = tf_feed(feed, case, batches, tmp)
        producer = _producer_ms(ds, s.steps)
        # jit_compile as the TensorFlow launcher off TPU
        model, _ = build_model(case, batches, jit_compile=False, steps_per_execution=per_call)
        traces = _TraceCount(model)
        t0 = time.perf_counter()
        model.fit(ds, epochs=s.epochs, steps_per_epoch=s.steps, validation_data=batches[0],
                  validation_batch_size=case["batch"],
                  callbacks=[timer.callback, guard.keras_callback()], verbose=0, shuffle=False)
        total = time.perf_counter() - t0
        compiles = (traces.train, traces.test)
    timed = timer.epochs[1:] or timer.epochs
    wall = 1000.0 * statistics.median(timed) / s.steps
    fn = model.train_function
    one = iter(tf.data.Dataset.from_tensors(batches[0]).repeat().cache())
    fn(one)
    calls = max(1, s.device_steps // per_call)
    start = time.perf_counter()
    for _ in range(calls):
        logs = fn(one)
    float(logs["loss"])
    device = 1000.0 * (time.perf_counter() - start) / (calls * per_call)
    real_docs = float(np.mean([np.sum(b[1] >= 0) for b in batches]))
    return {
        "backend": "tensorflow", "case": name, "feed": feed, "per_call": per_call,
        "batch": case["batch"], "list_size": case["list_size"], "wall_ms": round(wall, 3),
        "device_ms": round(device, 3), "host_ms": round(max(wall - device, 0.0), 3),
        "producer_ms": round(producer, 3), "busy": round(device / wall, 3),
        "train_compiles": compiles[0], "eval_compiles": compiles[1],
        "docs_per_s": round(real_docs / wall * 1000.0),
        "first_epoch_s": round(timer.epochs[0], 2) if timer.epochs else None,
        "fit_s": round(total, 2), "params": int(model.count_params()),
        "compile_s": (round(timer.epochs[0] - wall * s.steps / 1000.0, 2)
                      if timer.epochs else None),
        "cache_s": None,
    }


def run_backend(s: Settings) -> dict[str, Any]:
    """Every case of ``s`` in this process (KERAS_BACKEND must already be ``s.backend``)."""
    import keras

    rows: list[dict[str, Any]] = []
    print(" | ".join(COLUMNS), flush=True)
    for name in s.cases:
        new = ([run_jax_case(name, s, feed) for feed in s.feeds] if s.backend == "jax"
               else [run_tf_case(name, s, feed) for feed in s.tf_feeds])
        rows.extend(new)
        print(_table(new, header=False), flush=True)
    info: dict[str, Any] = {"keras": keras.__version__, "numpy": np.__version__}
    if s.backend == "jax":
        import jax

        info.update(jax=jax.__version__, devices=[str(d) for d in jax.devices()],
                    platform=jax.default_backend())
    else:
        import tensorflow as tf

        info.update(tensorflow=tf.__version__,
                    devices=[d.name for d in tf.config.list_logical_devices()])
    return {"backend": s.backend, "info": info, "rows": rows}


COLUMNS = ("backend", "case", "feed", "per_call", "batch", "list_size", "wall_ms", "device_ms",
           "host_ms", "producer_ms", "busy", "train_compiles", "eval_compiles", "docs_per_s",
           "compile_s")


def _table(rows: list[dict[str, Any]], *, header: bool = True) -> str:
    def fmt(v: Any) -> str:
        return "-" if v is None else str(v)

    lines = []
    if header:
        lines.append(" | ".join(COLUMNS))
    lines.extend(" | ".join(fmt(r.get(c)) for c in COLUMNS) for r in rows)
    return "\n".join(lines)


def _tf_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorflow") is not None


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="jax", choices=("jax", "tensorflow", "all"))
    p.add_argument("--cases", default=",".join(CASES),
                   help=f"comma-separated, of {', '.join(CASES)}")
    p.add_argument("--feeds", default=",".join(FEEDS),
                   help="JAX feeds: keras,prefetch,device_cache,device_loop,stream_loop")
    p.add_argument("--steps", type=int, default=None,
                   help="steps per epoch (default: 50 on an accelerator, 8 on CPU)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--device_steps", type=int, default=None,
                   help="steps of the device-time loop (default: = --steps)")
    p.add_argument("--pool", type=int, default=4, help="distinct host batches cycled")
    p.add_argument("--distribution", default="data_parallel",
                   choices=("data_parallel", "default"))
    p.add_argument("--tf_feeds", default=",".join(TF_FEEDS),
                   help="TensorFlow feeds: stream,memory_cache,memory_loop")
    p.add_argument("--batch", type=int, default=None, help="override every case's batch")
    p.add_argument("--per_call", type=int, default=32,
                   help="device_loop / stream_loop: train steps per jitted program "
                        "(at most --steps)")
    p.add_argument("--out", default=None, help="JSON file of the results")
    p.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    cases = tuple(c for c in a.cases.split(",") if c)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {unknown}; choose from {', '.join(CASES)}")
    feeds = tuple(f for f in a.feeds.split(",") if f)
    if any(f not in FEEDS for f in feeds):
        p.error(f"--feeds takes {', '.join(FEEDS)}. Received: {a.feeds!r}")
    tf_feeds = tuple(f for f in a.tf_feeds.split(",") if f)
    if any(f not in TF_FEEDS for f in tf_feeds):
        p.error(f"--tf_feeds takes {', '.join(TF_FEEDS)}. Received: {a.tf_feeds!r}")
    backends = ("jax", "tensorflow") if a.backend == "all" else (a.backend,)
    results: dict[str, Any] = {
        "command": " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
        "cpus": os.cpu_count(), "python": platform.python_version(), "backends": {}}
    for backend in backends:
        if backend == "tensorflow" and not _tf_available():
            print("tensorflow: skipped (TensorFlow is not installed)", flush=True)
            results["backends"]["tensorflow"] = {"skipped": "TensorFlow is not installed"}
            continue
        if os.environ.get("KERAS_BACKEND") == backend and (a._child or len(backends) == 1):
            results["backends"][backend] = _run_here(a, backend, cases, feeds)
            continue
        results["backends"][backend] = _run_child(a, backend, cases, feeds)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
        print(f"wrote {a.out}")
    return 0


def _run_here(a: argparse.Namespace, backend: str, cases: tuple[str, ...],
              feeds: tuple[str, ...]) -> dict[str, Any]:
    on_cpu = _on_cpu(backend)
    steps = a.steps or (8 if on_cpu else 50)
    s = Settings(backend=backend, cases=cases, feeds=feeds, steps=steps, epochs=a.epochs,
                 device_steps=a.device_steps or steps, pool=a.pool,
                 distribution=a.distribution, batch=a.batch, per_call=a.per_call,
                 tf_feeds=tuple(f for f in a.tf_feeds.split(",") if f))
    return run_backend(s)


def _on_cpu(backend: str) -> bool:
    if backend == "jax":
        import jax

        return jax.default_backend() == "cpu"
    import tensorflow as tf

    return not tf.config.list_physical_devices("GPU") and not tf.config.list_logical_devices(
        "TPU")


def _run_child(a: argparse.Namespace, backend: str, cases: tuple[str, ...],
               feeds: tuple[str, ...]) -> dict[str, Any]:
    """Keras reads KERAS_BACKEND at import: each backend runs in its own process."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "child.json")
        argv = [sys.executable, os.path.abspath(__file__), "--backend", backend, "--_child",
                "--cases", ",".join(cases), "--feeds", ",".join(feeds),
                "--tf_feeds", a.tf_feeds, "--epochs",
                str(a.epochs), "--pool", str(a.pool), "--distribution", a.distribution,
                "--out", out]
        for flag in ("steps", "device_steps", "batch", "per_call"):
            if getattr(a, flag) is not None:
                argv += [f"--{flag}", str(getattr(a, flag))]
        env = {**os.environ, "KERAS_BACKEND": backend,
               "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.run(argv, env=env, check=False)
        if proc.returncode:
            return {"failed": f"exit status {proc.returncode}"}
        with open(out, encoding="utf-8") as f:
            return json.load(f)["backends"][backend]


if __name__ == "__main__":
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    sys.exit(main())
