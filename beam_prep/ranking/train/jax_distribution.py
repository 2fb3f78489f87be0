"""``keras.distribution`` for the JAX backend: data parallel, model parallel, multi-host.

==================  ====================================================================
strategy            what it sets (``keras.distribution.set_distribution``)
==================  ====================================================================
``default``         nothing: one device
``data_parallel``   ``DataParallel`` over all devices (all hosts): weights replicated,
                    the global batch split over the ``batch`` axis
``model_parallel``  ``ModelParallel`` on a ``DeviceMesh(batch, model)``; a ``LayoutMap``
                    shards every large embedding table (rows >=
                    ``model.distributed_embedding_min_rows``) by rows over ``model``;
                    everything else is replicated, the batch is split over ``batch``
==================  ====================================================================

A sharded table's rows are rounded up to a multiple of the ``model`` axis (JAX shards
evenly); the extra rows are never looked up. Multi-host (``distribution.multi_host``):
``keras.distribution.initialize`` runs ``jax.distributed.initialize`` from the
``KERAS_DISTRIBUTION_JOB_ADDRESSES`` / ``_NUM_PROCESSES`` / ``_PROCESS_ID`` variables (on a
Cloud TPU pod it finds them itself); every process then reads its own shard of each batch
(Keras' ``distribute_dataset``: ``rebatch`` + ``shard``).

Example:
    >>> dist = make_distribution("model_parallel", tables={"doc_tokens": 1_000_000},
    ...                          model_parallel_size=4)                 # doctest: +SKIP
    >>> keras.distribution.set_distribution(dist)                      # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import jax
import keras

from beam_prep.errors import SpecError, notice

BATCH_AXIS = "batch"
MODEL_AXIS = "model"


def initialize_multi_host() -> None:
    """``keras.distribution.initialize`` (JAX: ``jax.distributed.initialize``), once.

    Raises:
        SpecError: JAX cannot reach or form the cluster (message names the variables).
    """
    if jax.distributed.is_initialized():
        return
    try:
        keras.distribution.initialize()
    except (RuntimeError, ValueError) as e:
        env = {k: v for k, v in os.environ.items() if k.startswith("KERAS_DISTRIBUTION_")}
        raise SpecError(
            f"`distribution.multi_host: true` but the JAX cluster cannot start "
            f"({str(e).splitlines()[0]}). Received: {env or 'no KERAS_DISTRIBUTION_* variable'}. "
            "Set KERAS_DISTRIBUTION_JOB_ADDRESSES=<coordinator host:port>, "
            "KERAS_DISTRIBUTION_NUM_PROCESSES and KERAS_DISTRIBUTION_PROCESS_ID on every host "
            "(not needed on a Cloud TPU pod).") from e


def mesh_shape(num_devices: int, model_parallel_size: int | None) -> tuple[int, int]:
    """``(batch, model)`` axis sizes for ``model_parallel`` (model = all devices if None).

    Raises:
        SpecError: ``model_parallel_size`` does not divide the number of devices.
    """
    model = num_devices if model_parallel_size is None else model_parallel_size
    if model < 1 or num_devices % model:
        raise SpecError(f"`distribution.model_parallel_size` must divide the {num_devices} "
                        f"devices. Received: model_parallel_size={model_parallel_size}")
    return num_devices // model, model


def padded_rows(rows: int, shards: int) -> int:
    """``rows`` rounded up to a multiple of ``shards`` (even row sharding)."""
    return int(math.ceil(rows / shards) * shards)


def table_layout_keys(name: str) -> tuple[str, ...]:
    """``LayoutMap`` patterns of feature ``name``'s table (plain and keras-rs paths)."""
    return (f"(.*/)?{name}_embedding/embeddings", f"(.*/)?{name}_table/embeddings")


def make_distribution(strategy: str, *, tables: Mapping[str, int] = (),
                      model_parallel_size: int | None = None) -> Any:
    """The ``keras.distribution`` for ``strategy`` (None for ``default``).

    Args:
        strategy: ``default``, ``data_parallel`` or ``model_parallel``.
        tables: Feature name -> rows of the tables to shard (``model_parallel``); rows must
            already be multiples of the model axis (:func:`padded_rows`).
        model_parallel_size: Devices on the ``model`` axis (None = all).
    """
    if strategy == "default":
        return None
    devices = jax.devices()
    if strategy == "data_parallel":
        return keras.distribution.DataParallel(devices=devices)
    if strategy != "model_parallel":
        raise SpecError(f"`distribution.strategy` {strategy!r} is not a JAX strategy; use "
                        "'default', 'data_parallel' or 'model_parallel'.")
    shape = mesh_shape(len(devices), model_parallel_size)
    if not tables and shape[1] > 1:
        notice(f"distribution.strategy: model_parallel shards the embedding tables of id "
               f"features by rows, and this model has none: its {shape[1]} devices on the "
               f"model axis all compute the same thing. Use distribution.strategy: "
               f"data_parallel to split the batch over all {len(devices)} devices.")
    mesh = keras.distribution.DeviceMesh(shape, (BATCH_AXIS, MODEL_AXIS), devices)
    layout = keras.distribution.LayoutMap(mesh)
    for name, rows in sorted(dict(tables).items()):
        if rows % shape[1]:
            raise SpecError(f"Table {name!r} has {rows} rows, not a multiple of the "
                            f"{shape[1]} model shards; pad it with padded_rows().")
        for key in table_layout_keys(name):
            layout[key] = (MODEL_AXIS, None)
    return keras.distribution.ModelParallel(layout_map=layout, batch_dim_name=BATCH_AXIS)


def data_replicas(distribution: Any) -> int:
    """How many ways the batch is split (1 without a distribution)."""
    if distribution is None:
        return 1
    mesh = distribution.device_mesh
    return int(mesh.shape[mesh.axis_names.index(BATCH_AXIS)])


class ConsistentShardings(keras.callbacks.Callback):
    """Keeps the train step to one compilation per run under a ``keras.distribution``.

    Keras jits the train step with ``out_shardings`` = the variables' shardings, so its outputs
    carry the device mesh in their type, while freshly created values (the initial variables,
    and the metric variables that ``fit`` resets at every epoch) do not; JAX keys its cache on
    both and compiled the step three times per run (initial state, after the first step,
    after the first metric reset). Without a distribution the same happens with committed
    batches (the launcher's device feeds): the step's outputs are committed to the device,
    the fresh variables are not. At every epoch start this callback puts each variable's
    value on its own sharding with ``jax.device_put`` (no copy on the same device), which
    commits it and gives the arrays the same type as the step's outputs.
    """

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:  # noqa: D102
        model = self.model
        optimizer = getattr(model, "optimizer", None)
        variables = [*model.trainable_variables, *model.non_trainable_variables,
                     *(optimizer.variables if optimizer is not None else ()),
                     *model.metrics_variables]
        for v in variables:
            v.assign(jax.device_put(v.value, v.value.sharding))
