"""The ranking launcher on the JAX backend (``KERAS_BACKEND=jax``).

Same config, data, model, losses and metrics as the TensorFlow launcher
(:class:`~.launcher.RankingLauncher`, which this subclasses); what changes:

* **Input pipeline** stays TensorFlow: ``tf.data``, the ELWC reader and the preprocessing
  layers run on the host; Keras hands the batches to JAX as arrays.
* **Distribution**: ``keras.distribution`` instead of ``tf.distribute``
  (:mod:`.jax_distribution`): ``default``, ``data_parallel``, ``model_parallel``; with
  ``distribution.multi_host`` JAX's cluster is initialised first and only process 0 writes
  ``model_dir`` and the export.
* **Training loop**: Keras ``fit``, compiled with XLA (``jit_compile=True``); callbacks as on
  TensorFlow (``ModelCheckpoint`` weights, ``BackupAndRestore``, ``TensorBoard``,
  the best-epoch tracker of :mod:`.run_state`). The custom ``tf.function`` loop is TensorFlow
  only.
* **Embeddings**: keras-rs ``DistributedEmbedding`` takes its JAX path (SparseCore on TPU
  when ``jax-tpu-embedding`` is installed, plain lookups elsewhere).
* **Export**: :mod:`.jax_export` (``jax2tf``), same signatures as on TensorFlow.

Example:
    >>> import os; os.environ["KERAS_BACKEND"] = "jax"                   # doctest: +SKIP
    >>> result = JaxRankingLauncher(RankingHparams.load("train.yaml")).run()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import jax
import keras
import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import RankingHparams, check_backend_strategy
from beam_prep.ranking.train.jax_distribution import (
    ConsistentShardings,
    data_replicas,
    initialize_multi_host,
    make_distribution,
    mesh_shape,
    padded_rows,
)
from beam_prep.ranking.train.jax_feed import (
    DeviceDataset,
    DeviceLoop,
    DevicePrefetcher,
    StreamLoop,
    resolve_steps_per_execution,
    use_device_cache,
)
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.tf_feed import spec_nbytes


class JaxRankingLauncher(RankingLauncher):
    """:class:`~.launcher.RankingLauncher` on JAX (see the module docstring).

    Args:
        hparams: The config (``distribution.strategy``: ``default``, ``data_parallel`` or
            ``model_parallel``).
        **kwargs: ``layers``, ``vocab_rows``, ``parse_fn``, ``epoch_printer``, ``verbose`` of
            :class:`~.launcher.RankingLauncher` (no ``strategy``: JAX has no tf.distribute).

    Raises:
        SpecError: Not on the JAX backend, a TensorFlow-only strategy or loop, or a batch
            that does not split over the devices.
    """

    def __init__(self, hparams: RankingHparams, **kwargs: Any) -> None:
        if keras.backend.backend() != "jax":
            raise SpecError("JaxRankingLauncher needs KERAS_BACKEND=jax set before Keras is "
                            f"imported. Received: backend={keras.backend.backend()!r}")
        if kwargs.get("strategy") is not None:
            raise SpecError("The JAX launcher takes no tf.distribute strategy; set "
                            "`distribution.strategy` to data_parallel or model_parallel.")
        dist = hparams.distribution
        check_backend_strategy("jax", dist.strategy)
        if hparams.training.loop == "custom":
            raise SpecError("`training.loop: custom` is the TensorFlow loop (tf.function + "
                            "tf.distribute); on JAX use 'fit' or 'auto'. Received: "
                            "loop='custom'")
        if dist.multi_host:
            initialize_multi_host()
        # The tf.data pipeline still runs on TensorFlow's default (one-device) strategy.
        super().__init__(hparams, strategy=tf.distribute.get_strategy(), **kwargs)
        self._shared.pop("strategy")  # ensemble members: JAX launchers like this one
        self.loop = "fit"
        self.jit_compile = True
        self.chief = jax.process_index() == 0
        self.sharded_tables: dict[str, int] = {}
        if dist.strategy == "model_parallel":
            shards = mesh_shape(jax.device_count(), dist.model_parallel_size)[1]
            for name, rows in self.preprocessor.id_rows.items():
                if rows >= hparams.model.distributed_embedding_min_rows:
                    self.preprocessor.id_rows[name] = padded_rows(rows, shards)
                    self.sharded_tables[name] = self.preprocessor.id_rows[name]
        self.distribution = make_distribution(dist.strategy, tables=self.sharded_tables,
                                              model_parallel_size=dist.model_parallel_size)
        keras.distribution.set_distribution(self.distribution)
        if self.spec.encoded is not None and hparams.training.export_dir:
            from beam_prep.ranking.train.encoded_input import serving_inputs

            serving_inputs(self)  # refuses now, not after training, layers the export can't run

    def validate(self, element_spec: Any) -> None:
        """The global batches split evenly over the data replicas and the processes."""
        split = max(data_replicas(self.distribution), jax.process_count())
        data = self.hp.data
        sizes = {"train_batch_size": data.train_batch_size}
        if data.valid_pattern:
            sizes["valid_batch_size"] = data.resolved_valid_batch_size
        for field, size in sizes.items():
            if size % split:
                raise SpecError(f"`data.{field}` must be divisible by the {split} data "
                                f"replicas/processes of strategy "
                                f"{self.hp.distribution.strategy!r}. Received: "
                                f"{field}={size}; use a multiple of {split}.")

    def backend_callbacks(self) -> list[Any]:
        """:class:`~.jax_distribution.ConsistentShardings`: one train-step compile per run."""
        return [ConsistentShardings()]

    def fit_input(self, train_ds: tf.data.Dataset, model: keras.Model) -> Any:
        """Training batches already on the device (:mod:`.jax_feed`).

        One process: the whole training set on the device when ``data.device_cache`` says so
        (:meth:`device_dataset`; each step gathers its batch there), trained
        ``training.steps_per_execution`` steps per jitted program
        (:class:`~.jax_feed.DeviceLoop`, installed as ``model``'s train function) when that
        resolves to more than one step; else ``tf.data``'s numpy batches streamed: one step
        per call through a :class:`~.jax_feed.DevicePrefetcher` (one ``device_put`` per batch
        with the batch's sharding, two ahead, on a background thread), or with several steps
        per call as superbatches (:class:`~.jax_feed.StreamLoop`: the batches of one execution
        stacked on the host, sent in one ``device_put`` per leaf while the previous execution
        trains, run in one jitted program). Several processes keep Keras' own per-process
        distribution of the dataset.
        """
        if jax.process_count() > 1:
            return train_ds
        cached = self.device_dataset(train_ds.element_spec)
        steps_per_epoch = self.steps_per_epoch()
        steps = resolve_steps_per_execution(self.hp.training.steps_per_execution,
                                            steps_per_epoch)
        self.steps_per_execution_used = steps
        if cached is None and steps == 1:
            return DevicePrefetcher(train_ds.as_numpy_iterator(), depth=2).generator()
        if cached is None:
            loop: DeviceLoop | StreamLoop = StreamLoop(
                model, train_ds.as_numpy_iterator(), steps=steps,
                steps_per_epoch=steps_per_epoch)
        elif steps == 1:
            return cached.generator()
        else:
            loop = DeviceLoop(model, cached, steps=steps, steps_per_epoch=steps_per_epoch)
        loop.install()
        return loop.data()

    def device_dataset(self, element_spec: Any) -> DeviceDataset | None:
        """The training set on the device, or None when ``data.device_cache`` rules it out.

        ``auto`` estimates the size from the record count and one list's preprocessed
        shapes (``element_spec``) before reading anything. The lists are parsed as for
        training once (a long list keeps the one seeded subset drawn here), put on the device
        once, and each pass over them is a seeded permutation (``training.seed``).
        """
        data = self.hp.data
        if data.device_cache is False:
            self.device_cache_used = False
            return None
        self.device_cache_used = use_device_cache(
            data.device_cache, spec_nbytes(element_spec, self.train_records()))
        if not self.device_cache_used:
            return None
        return DeviceDataset(self.training_lists(), batch_size=data.train_batch_size,
                             seed=self.hp.training.seed, first_step=self.first_step)

    def fit_steps_per_execution(self) -> int:
        """``compile``'s ``steps_per_execution`` (``auto`` = 1): the device-resident feed runs
        its own loop (:meth:`fit_input`, :class:`~.jax_feed.DeviceLoop`)."""
        return self.hp.training.fixed_steps_per_execution

    def export(self, model: keras.Model, element_spec: Any, *, path: str | None = None) -> str:
        """The SavedModel through ``jax2tf`` (:mod:`.jax_export`), same signatures as TF,
        at ``path`` (default ``training.export_dir``)."""
        from beam_prep.ranking.train.encoded_input import serving_inputs
        from beam_prep.ranking.train.jax_export import export_jax_ranker

        pre, parse = serving_inputs(self)  # raw features in, even from encoded ELWC
        return export_jax_ranker(model, pre, path or self.hp.training.export_dir,
                                 parse_fn=parse, feature_spec=element_spec[0])
