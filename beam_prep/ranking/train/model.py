"""Model builder: input creator + scorer (TF Ranking's design, on Keras 3).

This module imports Keras and never TensorFlow (an import-linter contract): the ranking model,
its scorers, losses and metrics run on any Keras backend, e.g. JAX on a machine without
TensorFlow. The ``tf.data`` side lives in :mod:`.preprocessor` and :mod:`.reader`.

* **Model inputs** (:class:`ModelInputs`): what the scorer needs to know about the
  preprocessed features (context / example names, id features and their table rows, list
  size). :class:`~beam_prep.ranking.train.preprocessor.Preprocessor` has these attributes, so
  the launcher passes it; without TensorFlow build a :class:`ModelInputs` (benchmarks).
* **Input creator** (:func:`create_inputs`): one ``keras.Input`` per preprocessed feature,
  named after it, with the dataset's static shape and dtype.
* **Scorer** (:class:`FeedForwardScorer`): embeds id features (:mod:`.embeddings`), flattens
  the others, broadcasts context features to every list entry, and applies the same
  feed-forward network to each entry: ``[batch, list_size]`` scores.

**List axis.** The model's inputs leave the list axis free (``keras.Input`` shape
``(None, ...)`` for example features and the mask): the model trains on ``[B, list_size]``
batches and scores lists of any length ``L`` (validation on full lists, serving), with the
same weights. Every reshape of the scorers reads ``L`` from the tensor, never from
``list_size``. ``Preprocessor.with_list_size`` gives the preprocessor for such lists.

Id conventions: see :mod:`.preprocessor` (a variable-length id feature is shifted by +1 and
padded with 0, so 0 always means "no id").

Example:
    >>> inputs = ModelInputs(context_names=(), example_names=("f",), list_size=3)
    >>> spec = {"f": np.zeros((2, 3, 1), "float32")}
    >>> model = RankingModelBuilder(inputs, ModelHparams(hidden_sizes=(4,))).build(spec)
    >>> tuple(model({"f": np.zeros((2, 3, 1), "float32")}).shape)
    (2, 3)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

import keras
import numpy as np  # noqa: F401  (doctest)
from keras import ops

from beam_prep.codegen.keras_model import keras_model
from beam_prep.errors import SpecError
from beam_prep.input_names import input_name
from beam_prep.ranking.train.embeddings import RankingEmbeddings
from beam_prep.ranking.train.hparams import ModelHparams
from beam_prep.ranking.train.mask import list_axis_features


@dataclasses.dataclass(frozen=True)
class ModelInputs:
    """The preprocessed features as the scorer sees them (TensorFlow-free).

    Attributes:
        context_names: Context features (``[B, ...]``), in order.
        example_names: Example features (``[B, L, ...]``), in order.
        list_size: Entries per list (``L``) of the training batches.
        id_rows: Id feature -> rows of its embedding table (other features are floats).
        sequence_features: Id features whose last axis is a sequence of ids (pooled).
        include_mask: The inputs include the list mask (``"__mask__"``, ``[B, L]``).
    """

    context_names: tuple[str, ...]
    example_names: tuple[str, ...]
    list_size: int | None
    id_rows: Mapping[str, int] = dataclasses.field(default_factory=dict)
    sequence_features: frozenset[str] = frozenset()
    include_mask: bool = False

    @property
    def list_features(self) -> tuple[str, ...]:
        """Inputs whose axis 1 is the list axis: example features (and the mask)."""
        return list_axis_features(self.example_names, include_mask=self.include_mask)


def create_inputs(element_spec: Mapping[str, Any], *,
                  list_features: Collection[str] = ()) -> dict[str, keras.KerasTensor]:
    """One named ``keras.Input`` per preprocessed feature (batch axis left free).

    Args:
        element_spec: Feature name -> anything with ``shape`` and ``dtype`` (a
            ``tf.TensorSpec``, a numpy array, a ``jax.ShapeDtypeStruct``).
        list_features: Features whose axis 1 is the list axis: left free too, so the model
            scores lists of any length.

    Raises:
        SpecError: Another axis has no static size (TPU and the scorer need them).
    """
    inputs = {}
    for name, spec in element_spec.items():
        shape = tuple(spec.shape[1:])
        if name in list_features and shape:
            shape = (None, *shape[1:])
        if any(d is None for d in shape[1 if name in list_features else 0:]):
            raise SpecError(f"Feature {name!r} has a dynamic shape {tuple(spec.shape)} after "
                            "preprocessing; fix `data.list_size` and `data.sequence_length`.")
        inputs[name] = keras.Input(shape=shape, dtype=keras.backend.standardize_dtype(spec.dtype),
                                   name=input_name(name))
    return inputs


@keras.saving.register_keras_serializable(package="beam_prep")
class FeedForwardScorer(keras.layers.Layer):
    """Scores every list entry with one feed-forward network; context is broadcast.

    Args:
        context_names: Context features (``[B, ...]``).
        example_names: Example features (``[B, L, ...]``).
        id_rows: Id feature -> embedding table rows.
        sequence_features: Id features with a trailing id-sequence axis.
        list_size: The training list size (the scorer reads L from its inputs, so it scores
            lists of any length).
        hparams: ``ModelHparams``.
        embedding_input_shapes: Static ``(N, T)`` per distributed table (TPU).
        name: Layer name.
    """

    def __init__(self, *, context_names: tuple[str, ...], example_names: tuple[str, ...],
                 id_rows: Mapping[str, int], sequence_features: Any, list_size: int,
                 hparams: ModelHparams,
                 embedding_input_shapes: Mapping[str, tuple[int, int]] | None = None,
                 name: str = "scorer", **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.context_names = tuple(context_names)
        self.example_names = tuple(example_names)
        self.list_size = int(list_size)
        self.hp = hparams
        self.embeddings = None
        if id_rows:
            self.embeddings = RankingEmbeddings(
                id_rows, dim=hparams.embedding_dim,
                min_rows=hparams.distributed_embedding_min_rows,
                sequence_features=sequence_features, input_shapes=embedding_input_shapes,
                name="scorer_embeddings")
        self.id_names = frozenset(id_rows)
        self.make_network(hparams)

    def make_network(self, hparams: ModelHparams) -> None:
        """Creates the layers that score the entry features (here: the feed-forward network).

        A subclass with another network overrides this and :meth:`call`, so that every
        sublayer is one its ``call`` uses: Keras builds a layer by tracing ``call``, and a
        sublayer it never reaches would stay unbuilt (Keras then warns that ``build()`` left
        unbuilt state).
        """
        self.input_norm = (keras.layers.BatchNormalization(name="scorer_input_bn")
                           if hparams.batch_norm else None)
        self.hidden = []
        for i, units in enumerate(hparams.hidden_sizes):
            block = [keras.layers.Dense(units, name=f"scorer_dense_{i}")]
            if hparams.batch_norm:
                block.append(keras.layers.BatchNormalization(name=f"scorer_bn_{i}"))
            block.append(keras.layers.Activation(hparams.activation, name=f"scorer_act_{i}"))
            if hparams.dropout > 0:
                block.append(keras.layers.Dropout(hparams.dropout, seed=0,
                                                  name=f"scorer_dropout_{i}"))
            self.hidden.append(block)
        self.output_dense = keras.layers.Dense(1, name="scorer_logit")

    def call(self, features: Mapping[str, Any], training: bool | None = None) -> Any:  # noqa: D102
        x = self.entry_features(features)
        lead = ops.shape(x)[:2]
        x = ops.reshape(x, (-1, x.shape[-1]))
        if self.input_norm is not None:
            x = self.input_norm(x, training=training)
        for block in self.hidden:
            for layer in block:
                x = layer(x, training=training) if _takes_training(layer) else layer(x)
        return ops.reshape(self.output_dense(x), lead)

    def entry_features(self, features: Mapping[str, Any]) -> Any:
        """``[B, L, F]``: every entry's features (ids embedded, context broadcast)."""
        emb = {}
        if self.embeddings is not None:
            emb = self.embeddings({k: features[k] for k in sorted(self.id_names)})
        ctx = [_flatten_after(emb.get(n, features[n]), 1) for n in self.context_names]
        ex = [_flatten_after(emb.get(n, features[n]), 2) for n in self.example_names]
        if ctx:
            c = ops.concatenate(ctx, axis=-1) if len(ctx) > 1 else ctx[0]
            lead = ops.shape(ex[0])[:2]
            ex.append(ops.broadcast_to(ops.expand_dims(c, 1), (*lead, c.shape[-1])))
        return ops.concatenate(ex, axis=-1) if len(ex) > 1 else ex[0]


def _flatten_after(x: Any, lead: int) -> Any:
    """``x`` as ``[*x.shape[:lead], W]`` (the static trailing axes flattened into W)."""
    if len(x.shape) == lead:
        return ops.expand_dims(x, -1)
    if len(x.shape) == lead + 1:
        return x
    width = int(math.prod(x.shape[lead:]))
    return ops.reshape(x, (*ops.shape(x)[:lead], width))


def _takes_training(layer: Any) -> bool:
    return isinstance(layer, (keras.layers.BatchNormalization, keras.layers.Dropout))


class RankingModelBuilder:
    """Builds the Keras ranking model from the preprocessed dataset's element spec.

    Args:
        preprocessor: The preprocessed features: a :class:`ModelInputs`, or the
            ``Preprocessor`` (same attributes) whose outputs the model takes.
        hparams: ``ModelHparams``.
        global_batch_size: Used to give keras-rs tables static shapes (TPU).
        name: Model name.
        scorer_cls: The scorer layer class (default :class:`FeedForwardScorer`; see
            :func:`beam_prep.ranking.train.scorers.scorer_class`).
        transforms: Feature name -> layer applied to that input before the scorer (the
            ``model.input_transform`` layers, exported with the model); a tuple of example
            features -> a callable taking their inputs and returning one ``[B, L, ...]``
            output for all of them, which the scorer takes in place of the first.

    Example:
        >>> builder = RankingModelBuilder(pre, ModelHparams())        # doctest: +SKIP
        >>> model = builder.build(preprocessed_ds.element_spec[0])     # doctest: +SKIP
    """

    def __init__(self, preprocessor: Any, hparams: ModelHparams, *,
                 global_batch_size: int | None = None, name: str = "ranker",
                 scorer_cls: type | None = None,
                 transforms: Mapping[Any, Callable[[Any], Any]] | None = None) -> None:
        self.preprocessor = preprocessor
        self.scorer_cls = scorer_cls or FeedForwardScorer
        self.transforms = dict(transforms or {})
        self.hparams = hparams
        self.global_batch_size = global_batch_size
        self.name = name

    def embedding_input_shapes(self, element_spec: Mapping[str, Any]) -> dict[str, tuple]:
        """``(N, T)`` per id feature as keras-rs sees it (N = global batch [x list size])."""
        pre = self.preprocessor
        shapes = {}
        for name in pre.id_rows:
            spec_shape = tuple(element_spec[name].shape[1:])
            t = spec_shape[-1] if name in pre.sequence_features else 1
            n = self.global_batch_size
            if n is not None and name in pre.example_names:
                n *= pre.list_size
            shapes[name] = (n, t)
        return shapes

    def build(self, element_spec: Mapping[str, Any]) -> keras.Model:
        """Input creator + scorer -> ``keras.Model`` mapping the feature dict to ``[B, L]``."""
        pre = self.preprocessor
        inputs = create_inputs(element_spec, list_features=pre.list_features)
        features, examples = dict(inputs), list(pre.example_names)
        for key, transform in self.transforms.items():
            if isinstance(key, tuple):  # joint: one output for all, where the first one was
                features[key[0]] = transform([inputs[n] for n in key])
                examples = [n for n in examples if n not in key[1:]]
            else:
                features[key] = transform(inputs[key])
        scorer = self.scorer_cls(
            context_names=pre.context_names, example_names=tuple(examples),
            id_rows=pre.id_rows, sequence_features=pre.sequence_features,
            list_size=pre.list_size, hparams=self.hparams,
            embedding_input_shapes=self.embedding_input_shapes(element_spec))
        # Input names are sanitised feature names (input_names): keyed by the feature names.
        return keras_model(inputs, scorer(features), self.name)


def compile_ranker(model: keras.Model, training: Any, *, jit_compile: bool | str = "auto",
                   steps_per_execution: int | None = None,
                   schedule: Any = None) -> keras.Model:
    """``model.compile`` with the launcher's optimizer, loss and metrics (``training`` section).

    One definition for the launcher (TensorFlow and JAX) and the step benchmark
    (``benchmarks/bench_train_step.py``), which runs without TensorFlow.

    Args:
        model: The ranking model.
        training: ``TrainHparams`` (``optimizer``, ``learning_rate``, ``ema_momentum``,
            ``loss``, ``softmax_targets``, ``metrics_k``, ``fixed_steps_per_execution``).
        jit_compile: Passed to ``compile``.
        steps_per_execution: Overrides ``training.steps_per_execution``.
        schedule: The learning-rate schedule (:func:`.lr_schedule.make_schedule`; None = the
            constant ``learning_rate``).
    """
    from beam_prep.ranking.train.losses import get_loss
    from beam_prep.ranking.train.metrics import ranking_metrics
    from beam_prep.ranking.train.optimizers import make_optimizer

    tr = training
    model.compile(
        optimizer=make_optimizer(tr.optimizer, tr.learning_rate, schedule,
                                 ema_momentum=tr.ema_momentum),
        loss=get_loss(tr.loss, softmax_targets=tr.softmax_targets),
        metrics=ranking_metrics(tr.metrics_k),
        steps_per_execution=steps_per_execution or tr.fixed_steps_per_execution,
        jit_compile=jit_compile)
    if keras.backend.backend() == "tensorflow":
        # Built now, not inside the first traced train step: a tf.function that creates
        # variables on its first trace traces again (two compiles of the step per run).
        model.optimizer.build(model.trainable_variables)
    return model
