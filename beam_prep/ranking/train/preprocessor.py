"""Preprocessor: the reader's raw features -> dense, statically shaped model inputs (tf.data).

It maps floats, int64, strings and ragged lists to dense tensors with **static shapes** — the
generated module's layers (StringLookup, TextVectorization, Hashing, Normalization, ...)
applied per feature, variable-length ids padded/truncated to ``sequence_length``. It runs in
``tf.data`` for every strategy (TPU needs lookups outside the model; Mirrored cannot take
string inputs) and again inside the exported serving functions, so serving takes raw features.
This is the TensorFlow side of the model builder; the model itself (:mod:`.model`) never
imports TensorFlow.

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
from collections.abc import Callable, Mapping
from typing import Any

import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.train.embeddings import table_rows_from_layer
from beam_prep.ranking.train.mask import MASK_KEY, list_axis_features


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
        context_names: Context features, in spec order.
        example_names: Example features, in spec order.
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
        return list_axis_features(self.example_names, include_mask=self.include_mask)

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
