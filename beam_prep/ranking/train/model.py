"""Model builder: input creator + preprocessor + scorer (TF Ranking's design, on Keras 3).

* **Preprocessor** (:class:`Preprocessor`): maps the reader's raw features (floats, int64,
  strings, ragged lists) to dense tensors with **static shapes** — the generated module's
  layers (StringLookup, TextVectorization, Hashing, Normalization, ...) applied per feature,
  variable-length ids padded/truncated to ``sequence_length``. It runs in ``tf.data`` for
  every strategy (TPU needs lookups outside the model; Mirrored cannot take string inputs) and
  again inside the exported serving functions, so serving takes raw features.
* **Input creator** (:func:`create_inputs`): one ``keras.Input`` per preprocessed feature,
  named after it, with the dataset's static shape and dtype.
* **Scorer** (:class:`FeedForwardScorer`): embeds id features (:mod:`.embeddings`), flattens
  the others, broadcasts context features to every list entry, and applies the same
  feed-forward network to each entry: ``[batch, list_size]`` scores.

**List axis.** The model's inputs leave the list axis free (``keras.Input`` shape
``(None, ...)`` for example features and the mask): the model trains on ``[B, list_size]``
batches and scores lists of any length ``L`` (validation on full lists, serving), with the
same weights. Every reshape of the scorers reads ``L`` from the tensor, never from
``list_size``. :meth:`Preprocessor.with_list_size` gives the preprocessor for such lists.

Id conventions: a variable-length id feature is shifted by +1 and padded with 0 (so 0 always
means "no id" and its table has one extra row); a dense sequence from TextVectorization keeps
its own 0 = padding. An id feature's table rows come from the artifacts
(:func:`.embeddings.table_rows`) or from the layer (``vocabulary_size()``).

Example:
    >>> from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo
    >>> spec = ElwcFeatureSpec(context=(), example=(FeatureInfo("f", "float", (), 0.0),))
    >>> pre = Preprocessor(spec, {}, list_size=3)
    >>> out = pre({"f": tf.constant([[1.0, 2.0, 0.0]])})
    >>> tuple(out["f"].shape)
    (1, 3, 1)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from beam_prep.errors import SpecError
from beam_prep.input_names import input_name
from beam_prep.ranking.train.embeddings import RankingEmbeddings, table_rows_from_layer
from beam_prep.ranking.train.hparams import ModelHparams
from beam_prep.ranking.train.reader import MASK_KEY


class Preprocessor:
    """Raw reader features -> dense, statically shaped model inputs.

    Args:
        spec: The dataset's ``ElwcFeatureSpec``.
        layers: Feature name -> Keras layer (or callable) applied to the raw feature.
            Features without a layer pass through (strings are refused: they need a lookup).
        list_size: Entries per list; None = whatever the parsed lists hold (serving).
        sequence_length: Length every variable-length feature is padded/truncated to.
        vocab_rows: Optional feature name -> embedding table rows (from the artifacts); when
            absent the rows are read from the layer.
        include_mask: Also output the reader's list mask (``"__mask__"``, float32 ``[B, L]``,
            1 for real entries) for scorers that look across the list (``dasalc``).

    Attributes:
        id_rows: Feature name -> rows of its embedding table, for integer outputs.
        sequence_features: Id features whose last axis is a sequence (pooled by the scorer).
    """

    def __init__(self, spec: Any, layers: Mapping[str, Callable[[Any], Any]], *,
                 list_size: int | None, sequence_length: int = 16,
                 vocab_rows: Mapping[str, int] | None = None,
                 include_mask: bool = False) -> None:
        self.spec = spec
        self.include_mask = bool(include_mask)
        self.layers = dict(layers)
        self.list_size = None if list_size is None else int(list_size)
        self.sequence_length = int(sequence_length)
        self.context_names = tuple(f.name for f in spec.context)
        self.example_names = tuple(f.name for f in spec.example)
        known = set(self.context_names) | set(self.example_names)
        unknown = sorted(set(self.layers) - known)
        if unknown:
            raise SpecError(f"Preprocessing layers for unknown feature(s) {unknown}. "
                            f"Features in feature_spec.json: {sorted(known)}")
        vocab_rows = dict(vocab_rows or {})
        self.id_rows: dict[str, int] = {}
        self.sequence_features: set[str] = set()
        self._shifted: set[str] = set()
        for info in (*spec.context, *spec.example):
            layer = self.layers.get(info.name)
            if info.dtype == "string" and layer is None:
                raise SpecError(
                    f"Feature {info.name!r} holds strings and has no preprocessing layer. "
                    "Pass its lookup/TextVectorization layer (e.g. from "
                    "beam_prep.layers_from_artifacts) in `layers`, or drop the feature.")
            if layer is None or not _emits_ids(layer):
                continue
            rows = vocab_rows.get(info.name)
            rows = table_rows_from_layer(layer) if rows is None else int(rows)
            if info.is_var_len:
                self._shifted.add(info.name)
                self.sequence_features.add(info.name)
                rows += 1
            elif _sequence_output(layer):
                self.sequence_features.add(info.name)
            self.id_rows[info.name] = rows

    def with_list_size(self, list_size: int | None) -> Preprocessor:
        """The same preprocessor (same layers and tables) for lists of ``list_size`` entries."""
        out = copy.copy(self)
        out.list_size = list_size
        return out

    @property
    def list_features(self) -> tuple[str, ...]:
        """Outputs whose axis 1 is the list axis: example features (and the mask)."""
        return (*self.example_names, *((MASK_KEY,) if self.include_mask else ()))

    def __call__(self, features: Mapping[str, Any]) -> dict[str, Any]:
        """Preprocesses one batch: context ``[B, ...]``, example ``[B, list_size, ...]``."""
        out: dict[str, Any] = {}
        for info in (*self.spec.context, *self.spec.example):
            x = features[info.name]
            layer = self.layers.get(info.name)
            is_example = info.name in self.example_names
            if layer is not None:
                x = layer(x)
            if isinstance(x, tf.RaggedTensor):
                if info.name in self._shifted:
                    x = x + tf.cast(1, x.dtype)
                lead = [None, self.list_size] if is_example else [None]
                x = x.to_tensor(default_value=0, shape=lead + [self.sequence_length])
            x = tf.convert_to_tensor(x)
            if info.name not in self.id_rows:
                x = tf.cast(x, tf.float32)
                if x.shape.rank == (2 if is_example else 1):
                    x = tf.expand_dims(x, -1)
            else:
                x = tf.cast(x, tf.int32)
            out[info.name] = x
        if self.include_mask:
            out[MASK_KEY] = tf.cast(features[MASK_KEY], tf.float32)
        return out


def _emits_ids(layer: Any) -> bool:
    mode = getattr(layer, "output_mode", "int")
    if mode != "int":
        return False
    return hasattr(layer, "vocabulary_size") or hasattr(layer, "num_bins")


def _sequence_output(layer: Any) -> bool:
    return getattr(layer, "output_sequence_length", None) is not None


def create_inputs(element_spec: Mapping[str, tf.TensorSpec], *,
                  list_features: Collection[str] = ()) -> dict[str, keras.KerasTensor]:
    """One named ``keras.Input`` per preprocessed feature (batch axis left free).

    Args:
        element_spec: The preprocessed dataset's feature specs.
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
        inputs[name] = keras.Input(shape=shape, dtype=spec.dtype.name, name=input_name(name))
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
        preprocessor: The :class:`Preprocessor` whose outputs the model takes.
        hparams: ``ModelHparams``.
        global_batch_size: Used to give keras-rs tables static shapes (TPU).
        name: Model name.
        scorer_cls: The scorer layer class (default :class:`FeedForwardScorer`; see
            :func:`beam_prep.ranking.train.scorers.scorer_class`).
        transforms: Feature name -> layer applied to that input before the scorer (the
            ``model.input_transform`` layers, exported with the model).

    Example:
        >>> builder = RankingModelBuilder(pre, ModelHparams())        # doctest: +SKIP
        >>> model = builder.build(preprocessed_ds.element_spec[0])     # doctest: +SKIP
    """

    def __init__(self, preprocessor: Preprocessor, hparams: ModelHparams, *,
                 global_batch_size: int | None = None, name: str = "ranker",
                 scorer_cls: type | None = None,
                 transforms: Mapping[str, Callable[[Any], Any]] | None = None) -> None:
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
        tr = self.transforms
        features = {n: tr[n](x) if n in tr else x for n, x in inputs.items()}
        scorer = self.scorer_cls(
            context_names=pre.context_names, example_names=pre.example_names,
            id_rows=pre.id_rows, sequence_features=pre.sequence_features,
            list_size=pre.list_size, hparams=self.hparams,
            embedding_input_shapes=self.embedding_input_shapes(element_spec))
        return keras.Model(inputs=inputs, outputs=scorer(features), name=self.name)
