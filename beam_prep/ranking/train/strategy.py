"""Distribution strategies and the checks TPUs need (pure helpers; the loop is in :mod:`.loop`).

==============  ===============================================  ==============================
strategy        what it builds                                   training loop
==============  ===============================================  ==============================
default         ``tf.distribute.get_strategy()`` (one device)    Keras ``fit``
mirrored        ``MirroredStrategy`` over all local devices      Keras ``fit``
multi_worker    ``MultiWorkerMirroredStrategy`` (``TF_CONFIG``)  custom loop (``fit`` fails)
tpu             ``TPUClusterResolver`` -> connect -> initialise  Keras ``fit``, or the custom
                the TPU system -> ``TPUStrategy``                loop for steps_per_execution>1
==============  ===============================================  ==============================

Parameter-server training is **not supported**: it needs a trainer that dispatches steps to
remote workers through ``tf.distribute.coordinator.ClusterCoordinator``, and Keras 3 has no such
path (``keras/src`` never mentions ``ParameterServerStrategy`` or ``ClusterCoordinator``; Keras
2's ``Model.fit`` had one).

Why ``multi_worker`` uses a custom loop: Keras 3.15 ``fit`` under MultiWorkerMirroredStrategy
fails with ``Invalid reduction dimension 0 for input with 0 dimensions`` for *any* model. The
fault is in Keras: ``keras/src/backend/tensorflow/trainer.py::reduce_per_replica`` reduces the
step's logs (loss and metric results, which are scalars) with
``strategy.reduce("MEAN", v, axis=0)`` when the strategy is a multi-worker collective one;
``axis=0`` asks to also reduce along the first axis of each value, which a scalar does not
have (single-host strategies take another branch, ``tf.reduce_mean`` over the replica list).
The model, losses and metrics are not involved: the same model trains under ``mirrored`` and
under the custom loop of :mod:`beam_prep.ranking.train.loop` with MultiWorkerMirroredStrategy.

Example:
    >>> validate_tpu_settings(list_size=10, drop_remainder=False, global_batch_size=8,
    ...                       num_replicas=8, steps_per_execution=1, loop="fit")
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: TPU training needs static shapes: ...
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import STRATEGIES


def make_strategy(name: str, *, tpu: str = "") -> tf.distribute.Strategy:
    """The ``tf.distribute`` strategy called ``name`` (see the module table).

    Raises:
        SpecError: Unknown name, or ``multi_worker`` without a valid ``TF_CONFIG``.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        raw = os.environ.get("TF_CONFIG")
        if not raw:
            raise SpecError("`distribution.strategy` is 'multi_worker' but TF_CONFIG is not set. "
                            "Set TF_CONFIG to {\"cluster\": {\"worker\": [...]}, \"task\": "
                            "{\"type\": \"worker\", \"index\": i}} on every worker.")
        try:
            cfg = json.loads(raw)
            cfg["cluster"]["worker"]
        except (ValueError, KeyError, TypeError) as e:
            raise SpecError(f"TF_CONFIG must be JSON with cluster.worker. Received: {raw!r}") from e
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise SpecError(f"`distribution.strategy` must be one of {', '.join(map(repr, STRATEGIES))}."
                    f" Received: strategy={name!r}")


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes checkpoints, logs and the export."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not getattr(resolver, "cluster_spec", None):
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type is None:
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "chief" or (not has_chief and task_type == "worker" and task_id == 0)


def resolve_loop(loop: str, strategy_name: str, steps_per_execution: int) -> str:
    """``fit`` or ``custom`` for ``training.loop`` (``auto`` picks what works here)."""
    if loop != "auto":
        if loop == "fit" and strategy_name == "multi_worker":
            raise SpecError("`training.loop` must be 'custom' or 'auto' with strategy "
                            "'multi_worker': Keras 3 fit fails under MultiWorkerMirroredStrategy "
                            "(scalar reduction in reduce_per_replica). Received: loop='fit'")
        return loop
    if strategy_name == "multi_worker":
        return "custom"
    if strategy_name in ("mirrored", "tpu") and steps_per_execution > 1:
        return "custom"
    return "fit"


def validate_tpu_settings(*, list_size: int | None, drop_remainder: bool,
                          global_batch_size: int, num_replicas: int, steps_per_execution: int,
                          loop: str, element_spec: Mapping[str, Any] | None = None) -> None:
    """Raises ``SpecError`` naming the setting that breaks TPU training.

    Checks: a fixed ``data.list_size``; ``data.drop_remainder: true``; a global batch that
    divides over the replicas; ``steps_per_execution > 1`` only with the custom loop (Keras
    ``fit`` fails with it on more than one replica); and, when ``element_spec`` is given, that
    every dataset tensor is dense with a fully static shape (batch axis included).
    """
    if not list_size:
        raise SpecError("TPU training needs static shapes: set `data.list_size` to a fixed "
                        f"positive integer. Received: list_size={list_size!r}")
    if not drop_remainder:
        raise SpecError("TPU training needs static shapes: set `data.drop_remainder: true` so "
                        "the last partial batch is dropped. Received: drop_remainder=False")
    if global_batch_size % num_replicas:
        raise SpecError(f"`data.train_batch_size` must be divisible by the {num_replicas} TPU "
                        f"replicas. Received: train_batch_size={global_batch_size}; use a "
                        f"multiple of {num_replicas}.")
    if steps_per_execution > 1 and loop == "fit" and num_replicas > 1:
        raise SpecError("`training.steps_per_execution` > 1 fails in Keras fit with more than "
                        "one replica; set `training.loop: custom` (or auto). Received: "
                        f"steps_per_execution={steps_per_execution}, loop='fit'")
    if element_spec is not None:
        for path, spec in _flatten_spec(element_spec):
            if not isinstance(spec, tf.TensorSpec):
                raise SpecError(f"TPU training needs dense tensors: dataset element {path!r} is "
                                f"{type(spec).__name__}. Give it a preprocessing layer and a "
                                "fixed `data.sequence_length`.")
            if not spec.shape.is_fully_defined():
                raise SpecError(f"TPU training needs static shapes: dataset element {path!r} "
                                f"has shape {spec.shape}. Check `data.list_size`, "
                                "`data.sequence_length` and `data.drop_remainder`.")
            if spec.dtype == tf.string:
                raise SpecError(f"TPU training cannot take strings: dataset element {path!r}. "
                                "Lookups must run in tf.data (the preprocessor).")


def _flatten_spec(spec: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(spec, Mapping):
        return [x for k, v in spec.items() for x in _flatten_spec(v, f"{prefix}{k}/")]
    if isinstance(spec, (tuple, list)):
        return [x for i, v in enumerate(spec) for x in _flatten_spec(v, f"{prefix}{i}/")]
    return [(prefix.rstrip("/"), spec)]

